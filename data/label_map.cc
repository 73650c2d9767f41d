#include "data/label_map.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace receipt_parity {

const std::vector<std::string>& LabelNames() {
  static const auto* const kNames =
      new std::vector<std::string>{"ok", "blurred", "faded", "cropped"};
  return *kNames;
}

absl::StatusOr<int> LabelId(absl::string_view name) {
  const std::vector<std::string>& names = LabelNames();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<int>(i);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown label \"", name,
                   "\"; valid labels: ", absl::StrJoin(names, ", ")));
}

}  // namespace receipt_parity

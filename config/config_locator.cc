#include "config/config_locator.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "config/config.pb.h"

namespace receipt_parity {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::TextFormat;

ConfigLocator::ConfigLocator(std::string path, std::unique_ptr<ParseInfoTree> parse_info,
                             std::vector<ConfigOverride> overrides)
    : path_(std::move(path)),
      parse_info_(std::move(parse_info)),
      overrides_(std::move(overrides)) {}

std::string ConfigLocator::Where(const std::string& field_path) const {
  // "local_batch_sizes[1]" is set by an override of local_batch_sizes.
  std::string without_indices;
  for (absl::string_view part : absl::StrSplit(field_path, '.')) {
    if (!without_indices.empty()) without_indices += ".";
    without_indices += std::string(part.substr(0, part.find('[')));
  }
  for (auto o = overrides_.rbegin(); o != overrides_.rend(); ++o) {
    if (without_indices == o->field_path ||
        absl::StartsWith(without_indices, o->field_path + ".")) {
      return "--set " + o->text();
    }
  }
  const Descriptor* descriptor = TrainingConfig::descriptor();
  const ParseInfoTree* tree = parse_info_.get();
  // The nearest message on the path that is written, for a field inside it
  // that is not (a plugin's options left unset: its selection's line).
  std::string nearest = path_;
  std::vector<std::string> parts = absl::StrSplit(field_path, '.');
  for (size_t i = 0; i < parts.size() && tree != nullptr; ++i) {
    std::string name = parts[i];
    int index = -1;
    if (size_t bracket = name.find('['); bracket != std::string::npos) {
      if (!absl::SimpleAtoi(name.substr(bracket + 1, name.size() - bracket - 2),
                            &index)) {
        break;
      }
      name = name.substr(0, bracket);
    }
    const FieldDescriptor* field =
        descriptor == nullptr ? nullptr : descriptor->FindFieldByName(name);
    if (field == nullptr) break;
    if (field->is_repeated() && index < 0) index = 0;
    if (i + 1 == parts.size() ||
        field->type() != FieldDescriptor::TYPE_MESSAGE) {
      TextFormat::ParseLocation at = tree->GetLocation(field, index);
      if (at.line < 0) break;
      return absl::StrCat(path_, ":", at.line + 1, ":", at.column + 1);
    }
    if (TextFormat::ParseLocation at = tree->GetLocation(field, index); at.line >= 0) {
      nearest = absl::StrCat(path_, ":", at.line + 1, ":", at.column + 1);
    }
    tree = tree->GetTreeForNested(field, index);
    descriptor = field->message_type();
  }
  return nearest;
}

absl::Status ConfigLocator::Locate(const absl::Status& status) const {
  if (status.ok()) return status;
  const std::string message(status.message());
  const size_t colon = message.find(": ");
  std::string where = path_;
  if (colon != std::string::npos &&
      message.find(' ') == colon + 1) {  // "<field path>: ..."
    where = Where(message.substr(0, colon));
  }
  return absl::Status(status.code(), absl::StrCat(where, ": ", message));
}

void ParseErrors::AddError(int line, int column, const std::string& message) {
  errors_.push_back(
      absl::StrCat(name_, ":", line + 1, ":", column + 1, ": ", message));
}

std::string ParseErrors::Joined() const { return absl::StrJoin(errors_, "\n"); }

}  // namespace receipt_parity

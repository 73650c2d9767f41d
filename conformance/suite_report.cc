#include "conformance/suite_report.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace receipt_parity {

namespace {
// A check that fails everywhere says so a few times, not thousands.
constexpr size_t kReasonsShown = 5;
}  // namespace

void SuiteReport::Add(const std::string& name, const std::vector<std::string>& failures) {
  if (failures.empty()) {
    lines_.push_back(absl::StrCat("PASS ", name));
    return;
  }
  ++failed_;
  std::string line = absl::StrCat("FAIL ", name, ":");
  for (size_t i = 0; i < std::min(failures.size(), kReasonsShown); ++i) {
    absl::StrAppend(&line, "\n  ", failures[i]);
  }
  if (failures.size() > kReasonsShown) {
    absl::StrAppend(&line, "\n  ... and ", failures.size() - kReasonsShown, " more");
  }
  lines_.push_back(line);
}

std::string SuiteReport::Text(const std::string& kind, const std::string& plugin) const {
  std::string text;
  for (const std::string& line : lines_) absl::StrAppend(&text, line, "\n");
  absl::StrAppend(&text, kind, " ", plugin, ": ", lines_.size(), " checks, ", failed_,
                  " failed\n");
  return text;
}

}  // namespace receipt_parity

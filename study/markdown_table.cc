#include "study/markdown_table.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace receipt_parity {
namespace markdown {

std::string Fixed(double value, int digits) { return absl::StrFormat("%.*f", digits, value); }

std::string Percent(double share) { return Fixed(100 * share, 1) + " %"; }

std::string Ms(double seconds) { return Fixed(1000 * seconds, 3); }

std::string YesNo(bool value) { return value ? "yes" : "no"; }

std::string Row(const std::vector<std::string>& cells) {
  return absl::StrCat("| ", absl::StrJoin(cells, " | "), " |\n");
}

std::string HeaderRow(const std::vector<std::string>& cells, const std::string& first_align) {
  std::string out = Row(cells);
  std::vector<std::string> rule(cells.size(), "---:");
  rule[0] = first_align;
  return out + Row(rule);
}

}  // namespace markdown
}  // namespace receipt_parity

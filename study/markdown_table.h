// The small pieces the study's markdown is written with: numbers as text
// and table rows (GitHub markdown).
#ifndef RECEIPT_PARITY_STUDY_MARKDOWN_TABLE_H_
#define RECEIPT_PARITY_STUDY_MARKDOWN_TABLE_H_

#include <string>
#include <vector>

namespace receipt_parity {
namespace markdown {

// What a cell holds when there is nothing to say.
inline constexpr char kDash[] = "—";

// `value` with `digits` decimals.
std::string Fixed(double value, int digits);
// 0.123 -> "12.3 %".
std::string Percent(double share);
// Seconds as milliseconds with three decimals.
std::string Ms(double seconds);
std::string YesNo(bool value);

// "| a | b |\n".
std::string Row(const std::vector<std::string>& cells);
// The row, then its alignment rule: the first column `first_align`, the
// others right-aligned.
std::string HeaderRow(const std::vector<std::string>& cells,
                      const std::string& first_align = ":---");

}  // namespace markdown
}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_STUDY_MARKDOWN_TABLE_H_

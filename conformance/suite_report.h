// What a conformance suite found: one line per check, passed or failed with
// the reasons, in the order the checks ran.
#ifndef RECEIPT_PARITY_CONFORMANCE_SUITE_REPORT_H_
#define RECEIPT_PARITY_CONFORMANCE_SUITE_REPORT_H_

#include <string>
#include <vector>

namespace receipt_parity {

class SuiteReport {
 public:
  // Records check `name`: passed when `failures` is empty, else failed with
  // each of them (the first few are kept in the text).
  void Add(const std::string& name, const std::vector<std::string>& failures);

  bool ok() const { return failed_ == 0; }
  int failed() const { return failed_; }
  int checks() const { return static_cast<int>(lines_.size()); }

  // "PASS <check>" and "FAIL <check>: <reason>" lines, then
  // "<kind> <plugin>: N checks, M failed".
  std::string Text(const std::string& kind, const std::string& plugin) const;

 private:
  std::vector<std::string> lines_;
  int failed_ = 0;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CONFORMANCE_SUITE_REPORT_H_

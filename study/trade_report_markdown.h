// trade_report.md: the trade report (study/trade_report.proto) for a
// person, drawn from the message alone.
#ifndef RECEIPT_PARITY_STUDY_TRADE_REPORT_MARKDOWN_H_
#define RECEIPT_PARITY_STUDY_TRADE_REPORT_MARKDOWN_H_

#include <string>

#include "study/trade_report.pb.h"

namespace receipt_parity {

// The headline figures, a few plain lines: examples/s of one and two
// workers and their ratio, sync time and share, the straggler, the rarest
// class's validation F1 for both runs, the two-worker run over MPI
// (examples/s, its ratio over Gloo, sync share, final parameters equal to
// Gloo's, parity), the parity and recovery verdicts, the checkpoint cost
// ("not measured" where it is). The study
// prints these at the end; the markdown opens with them.
std::string TradeReportHeadline(const TradeReport& report);

// The whole markdown document: headline, the picture (report.picture()),
// throughput/sync/memory, two workers over MPI, validation per class,
// parity (with the MPI run's row when measured), sampler audits, recovery,
// checkpoint cost.
std::string TradeReportMarkdown(const TradeReport& report);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_STUDY_TRADE_REPORT_MARKDOWN_H_

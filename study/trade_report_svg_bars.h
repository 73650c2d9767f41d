// The right-hand panels of the trade report's picture
// (study/trade_report_svg.h): examples per second (with a third bar for
// the two-worker run over MPI when it is measured), time per update split
// into computation and gradient sync, peak memory per rank, and who came
// last to the gradient sync.
#ifndef RECEIPT_PARITY_STUDY_TRADE_REPORT_SVG_BARS_H_
#define RECEIPT_PARITY_STUDY_TRADE_REPORT_SVG_BARS_H_

#include <string>

#include "study/trade_report.pb.h"

namespace receipt_parity {

// SVG elements for x >= 640, y from 113 to at most 620 for two ranks.
std::string BarsPanel(const TradeReport& report);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_STUDY_TRADE_REPORT_SVG_BARS_H_

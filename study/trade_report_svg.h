// The trade report's picture, an SVG document written as text from the
// report (study/trade_report.proto) alone:
//   - left: training loss against examples seen, one worker (solid) and two
//     workers (dashed), with how far apart the curves are;
//   - right (study/trade_report_svg_bars.h): examples per second for each,
//     each one's time per update split into computation and gradient
//     synchronisation (with the share), peak memory, and, with two workers,
//     how often each rank came last to the gradient sync and how late;
//   - across the top: the parity, recovery and checkpoint verdicts.
#ifndef RECEIPT_PARITY_STUDY_TRADE_REPORT_SVG_H_
#define RECEIPT_PARITY_STUDY_TRADE_REPORT_SVG_H_

#include <string>

#include "study/trade_report.pb.h"

namespace receipt_parity {

// A complete standalone SVG document (UTF-8). Never fails: empty curves or
// zero figures draw empty axes and zero-length bars.
std::string TradeReportSvg(const TradeReport& report);

// world_size_change.svg (study/trade_report_svg_world_size.cc): the
// world-size-change stage's loss per update, the uninterrupted run's and
// each continuation's from the update it resumed at, their data-order and
// final-parameter differences, and the duplicate_pad twin's data order.
// Never fails, as TradeReportSvg.
std::string WorldSizeChangeSvg(const WorldSizeChangeFigures& figures);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_STUDY_TRADE_REPORT_SVG_H_

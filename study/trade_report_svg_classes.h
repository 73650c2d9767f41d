// The per-class panel of the trade report's picture
// (study/trade_report_svg.h): validation F1 of every class, one bar for one
// worker and one for two, so a rare class that one of the runs stops
// seeing shows as a missing bar.
#ifndef RECEIPT_PARITY_STUDY_TRADE_REPORT_SVG_CLASSES_H_
#define RECEIPT_PARITY_STUDY_TRADE_REPORT_SVG_CLASSES_H_

#include <string>

#include "study/trade_report.pb.h"

namespace receipt_parity {

// SVG elements for 30 <= x <= 600, from `top` down. Classes are the one
// worker's, in its label map order; a class the two-worker run lacks gets
// no second bar. The panel's height is ClassF1PanelHeight(report).
std::string ClassF1Panel(const TradeReport& report, double top);

double ClassF1PanelHeight(const TradeReport& report);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_STUDY_TRADE_REPORT_SVG_CLASSES_H_

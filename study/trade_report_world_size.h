// The trade report's markdown for the world-size-change stage
// (study/study_stages.h; study/trade_report.proto WorldSizeChangeFigures,
// built by study/trade_report_builder.h; its picture
// study/trade_report_svg.h WorldSizeChangeSvg).
#ifndef RECEIPT_PARITY_STUDY_TRADE_REPORT_WORLD_SIZE_H_
#define RECEIPT_PARITY_STUDY_TRADE_REPORT_WORLD_SIZE_H_

#include <string>

#include "study/trade_report.pb.h"

namespace receipt_parity {

// The headline's line: each continuation's data-order and parameter
// difference, or why there is none.
std::string WorldSizeChangeLine(const WorldSizeChangeFigures& figures);

// "## The world size changed mid-run": the picture, a row per
// continuation (resumed at, why allowed, data-order difference, final
// loss, parameters against the uninterrupted run), the duplicate_pad
// twin's data-order difference; or why the section is empty.
void AppendWorldSizeChange(const TradeReport& report, std::string* md);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_STUDY_TRADE_REPORT_WORLD_SIZE_H_

// The trade report's "What these verdicts catch": the planted mistakes
// (study/planted_mistakes.h, study/trade_report.proto PlantedMistakesFigures,
// built by study/trade_report_builder.h).
#ifndef RECEIPT_PARITY_STUDY_TRADE_REPORT_PLANTED_H_
#define RECEIPT_PARITY_STUDY_TRADE_REPORT_PLANTED_H_

#include <string>

#include "study/trade_report.pb.h"

namespace receipt_parity {

// The headline's line: "15 of 15 planted runs caught", or why not measured.
std::string PlantedMistakesLine(const PlantedMistakesFigures& figures);

// "## What these verdicts catch": one row per mistake, one column per
// setting, each cell the verdicts that caught the run or **MISSED**; then
// each mistake's first failure in fp32, as parity.json words it.
void AppendPlantedMistakes(const TradeReport& report, std::string* md);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_STUDY_TRADE_REPORT_PLANTED_H_

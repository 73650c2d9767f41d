// The trade report's markdown for the two-worker run with every recipe and
// layer at once (configs/two_worker_all_recipes.pbtxt, study/trade_report.proto
// AllRecipesFigures, built by study/trade_report_builder.h).
#ifndef RECEIPT_PARITY_STUDY_TRADE_REPORT_ALL_RECIPES_H_
#define RECEIPT_PARITY_STUDY_TRADE_REPORT_ALL_RECIPES_H_

#include <string>

#include "study/trade_report.pb.h"

namespace receipt_parity {

// The headline's line: examples/s against fp32, and the verdicts.
std::string AllRecipesLine(const AllRecipesFigures& figures);

// "## Every recipe at once": what it uses, its figures beside the fp32
// run's, the first update's verdict and each checked update of the whole
// run; or why it is not there.
void AppendAllRecipes(const TradeReport& report, std::string* md);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_STUDY_TRADE_REPORT_ALL_RECIPES_H_

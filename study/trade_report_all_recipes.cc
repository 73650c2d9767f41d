#include "study/trade_report_all_recipes.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "study/markdown_table.h"
#include "study/trade_report_builder.h"

namespace receipt_parity {
namespace {

using markdown::Fixed;
using markdown::HeaderRow;
using markdown::kDash;
using markdown::Percent;
using markdown::Row;
using markdown::YesNo;

double LargestPeakRss(const RunFigures& run) {
  double largest = 0;
  for (const RankFigures& rank : run.ranks()) largest = std::max(largest, rank.peak_rss_mib());
  return largest;
}

void AppendWholeRun(const WholeRunParity& whole, std::string* md) {
  absl::StrAppend(md, "\nThe whole run (", whole.mode(), "): ", whole.judged_updates(), " of ",
                  whole.check_updates_size(), " checked updates judged by numerics in some "
                  "tensor, verdict **", whole.pass() ? kPass : kFail, "**. ", whole.method(),
                  ".\n\n");
  absl::StrAppend(md, HeaderRow({"update", "tensors judged by numerics", "verdict", "twin drift",
                                 "loss", "reference loss", "loss budget"}));
  for (const UpdateParity& u : whole.updates()) {
    absl::StrAppend(
        md, Row({absl::StrCat(u.update()),
                 absl::StrCat(u.judged_tensors(), " of ", u.tensors_size()),
                 u.pass() ? kPass : kFail, absl::StrFormat("%.3g", u.twin_drift()),
                 absl::StrFormat("%.6f", u.loss()), absl::StrFormat("%.6f", u.reference_loss()),
                 absl::StrFormat("%.3g", u.loss_budget())}));
  }
  for (const UpdateParity& u : whole.updates()) {
    if (!u.not_judged().empty()) {
      absl::StrAppend(md, "\n- update ", u.update(), ": ", u.not_judged());
    } else if (u.diverged_tensors_size() > 0) {
      absl::StrAppend(md, "\n- update ", u.update(), ": diverged, left to the replay: ",
                      absl::StrJoin(u.diverged_tensors(), ", "));
    }
    for (const std::string& failure : u.failures()) absl::StrAppend(md, "\n- ", failure);
  }
  absl::StrAppend(md, "\n");
}

}  // namespace

std::string AllRecipesLine(const AllRecipesFigures& figures) {
  if (figures.status() != kMeasured) {
    return figures.note().empty() ? kNotMeasured
                                  : absl::StrCat(kNotMeasured, " (", figures.note(), ")");
  }
  return absl::StrCat(Fixed(figures.run().examples_per_second(), 1), " examples/s, ",
                      Fixed(figures.over_fp32_examples_per_second(), 2),
                      "× the fp32 run; parity ", figures.parity_verdict(), " (",
                      figures.parity().whole_run(), ")");
}

void AppendAllRecipes(const TradeReport& report, std::string* md) {
  const AllRecipesFigures& all = report.two_workers_all_recipes();
  absl::StrAppend(md, "## Every recipe at once\n\n");
  if (all.status() != kMeasured) {
    absl::StrAppend(md, "**", kNotMeasured, "** (", all.note(), ").\n\n");
    return;
  }
  absl::StrAppend(md, "`", all.source(), "` uses: ", absl::StrJoin(all.recipes(), ", "),
                  ".\n\n");
  const RunFigures& fp32 = report.two_workers();
  const RunFigures& run = all.run();
  absl::StrAppend(md, HeaderRow({"", "two workers, plain fp32", "two workers, every recipe"}));
  absl::StrAppend(md, Row({"examples/s", Fixed(fp32.examples_per_second(), 1),
                           Fixed(run.examples_per_second(), 1)}));
  absl::StrAppend(md, Row({"largest peak RSS per rank (MiB)", Fixed(LargestPeakRss(fp32), 1),
                           Fixed(all.peak_rss_mib(), 1)}));
  absl::StrAppend(md, Row({"updates", absl::StrCat(fp32.updates()),
                           absl::StrCat(run.updates())}));
  absl::StrAppend(md, Row({"macro F1", Fixed(fp32.validation().macro_f1(), 4),
                           Fixed(run.validation().macro_f1(), 4)}));
  absl::StrAppend(md, "\nParity **", all.parity_verdict(),
                  "**: the first update against its reference's (largest difference ",
                  absl::StrFormat("%.3g", all.parity().max_abs_diff()), ", atol ",
                  absl::StrFormat("%.3g", all.parity().atol()), "), and ",
                  all.parity().whole_run(), ".\n");
  AppendWholeRun(all.whole_run(), md);
}

}  // namespace receipt_parity

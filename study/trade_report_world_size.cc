#include "study/trade_report_world_size.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "study/markdown_table.h"
#include "study/trade_report_builder.h"

namespace receipt_parity {
namespace {

using markdown::HeaderRow;
using markdown::kDash;
using markdown::Row;

std::string DataOrderText(const WorldSizeContinuation& c) {
  if (c.changed_updates() == 0) {
    return absl::StrCat("the same receipts in all ", c.remaining_updates(),
                        " remaining updates of the epoch");
  }
  return absl::StrCat(c.changed_updates(), " of ", c.remaining_updates(),
                      " remaining updates train other receipts; duplicate slots ",
                      c.old_duplicate_slots(), " -> ", c.new_duplicate_slots(), ", ",
                      c.skipped_ids(), " id(s) skipped, ", c.repeated_ids(), " trained twice");
}

std::string ParametersText(const WorldSizeContinuation& c) {
  if (c.loss_max_abs_diff() < 0) return kDash;
  return absl::StrCat(c.final_parameters_equal() ? "bitwise equal" : "differ",
                      "; losses differ by at most ",
                      absl::StrFormat("%.3g", c.loss_max_abs_diff()));
}

std::string ContinuationRow(const WorldSizeContinuation& c) {
  return Row({absl::StrCat("`", c.source(), "`"), c.policy(),
              absl::StrCat(c.old_world_size(), " → ", c.new_world_size()),
              absl::StrCat(c.resumed_at_update()), c.world_size_change_rule(), DataOrderText(c),
              absl::StrFormat("%.6f", c.final_loss()), ParametersText(c)});
}

}  // namespace

std::string WorldSizeChangeLine(const WorldSizeChangeFigures& figures) {
  if (figures.status() != kMeasured) {
    return figures.note().empty() ? kNotMeasured
                                  : absl::StrCat(kNotMeasured, " (", figures.note(), ")");
  }
  std::vector<std::string> parts;
  for (const WorldSizeContinuation& c : figures.continuations()) {
    parts.push_back(absl::StrCat("on ", c.new_world_size(), ": ", c.changed_updates(),
                                 " updates differ, parameters ",
                                 c.final_parameters_equal() ? "bitwise equal" : "differ"));
  }
  const WorldSizeContinuation& twin = figures.duplicate_pad();
  parts.push_back(absl::StrCat(twin.policy(), " on ", twin.new_world_size(), ": ",
                               twin.changed_updates(), " of ", twin.remaining_updates(),
                               " updates differ"));
  return absl::StrJoin(parts, "; ");
}

void AppendWorldSizeChange(const TradeReport& report, std::string* md) {
  const WorldSizeChangeFigures& f = report.world_size_change();
  absl::StrAppend(md, "## The world size changed mid-run\n\n");
  if (f.status() != kMeasured) {
    absl::StrAppend(md, "Not measured: ", f.note(), ".\n\n");
    return;
  }
  absl::StrAppend(
      md, "![Loss per update of the continued runs over the uninterrupted run's](",
      f.picture(), ")\n\n",
      "The run of `configs/world_size_change.pbtxt` (`", f.source(), "`, ", f.world_size(),
      " workers, sampler `global_batches`, reducer `ordered_sum`) was preempted and "
      "continued from the same generation on other numbers of workers, without "
      "`allow_world_size_change`; its `duplicate_pad` twin (an order that depends on the "
      "world size) needed it. The data-order difference is over the rest of the epoch "
      "the run resumed in (`world_size_change.json`); the parameters are compared with the "
      "uninterrupted run's at the end (`run_summary.json` `final_parameter_hash`).\n\n");
  absl::StrAppend(md, HeaderRow({"run", "sampler", "workers", "resumed at update",
                                 "allowed by", "data order", "final loss",
                                 "parameters vs uninterrupted"}));
  for (const WorldSizeContinuation& c : f.continuations()) {
    absl::StrAppend(md, ContinuationRow(c));
  }
  absl::StrAppend(md, ContinuationRow(f.duplicate_pad()), "\n");
}

}  // namespace receipt_parity

#include "artifacts/tensorboard_curves.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "artifacts/straggler_summary.h"

namespace receipt_parity {
namespace {

void AddLossCurves(const RunSummary& summary, std::vector<ScalarPoint>* out) {
  const int64_t first = summary.first_update();
  for (const LossPoint& p : summary.loss_curve()) {
    out->push_back({"train/loss", first + p.update(), p.loss()});
  }
  for (const LossPoint& p : summary.loss_curve()) {
    if (p.has_mean_loss()) out->push_back({"train/mean_loss", first + p.update(), p.mean_loss()});
  }
  for (const LossPoint& p : summary.loss_curve()) {
    out->push_back({"train/learning_rate", first + p.update(), p.learning_rate()});
  }
  for (const LossPoint& p : summary.loss_curve()) {
    out->push_back({"train/gradient_norm", first + p.update(), p.gradient_norm()});
  }
  for (const LossPoint& p : summary.loss_curve()) {
    if (p.has_verified()) {
      out->push_back({"checks/every_update_verified", first + p.update(), p.verified() ? 1.0 : 0.0});
    }
  }
}

// Updates every rank timed: RankTiming's entries i are update warmup + i.
int TimedUpdates(const RunSummary& summary) {
  if (summary.timing().empty()) return 0;
  int timed = summary.timing(0).update_seconds_size();
  for (const RankTiming& t : summary.timing()) {
    timed = std::min({timed, t.update_seconds_size(), t.sync_seconds_size()});
  }
  return timed;
}

// Accepted examples of the attempt's update u (examples_seen's step).
int64_t AcceptedExamples(const RunSummary& summary, int u) {
  const int64_t seen = summary.loss_curve(u).examples_seen();
  return u == 0 ? seen : seen - summary.loss_curve(u - 1).examples_seen();
}

void AddTimingCurves(const RunSummary& summary, std::vector<ScalarPoint>* out) {
  const int timed = TimedUpdates(summary);
  const int64_t first = summary.first_update() + summary.warmup_updates();
  std::vector<ScalarPoint> rate;
  std::vector<ScalarPoint> share;
  std::vector<ScalarPoint> check_share;
  for (int i = 0; i < timed; ++i) {
    const int u = summary.warmup_updates() + i;
    if (u >= summary.loss_curve_size()) break;
    double slowest = 0;
    double longest_sync = 0;
    double longest_check = -1;
    for (const RankTiming& t : summary.timing()) {
      slowest = std::max(slowest, t.update_seconds(i));
      longest_sync = std::max(longest_sync, t.sync_seconds(i));
      if (i < t.check_seconds_size()) longest_check = std::max(longest_check, t.check_seconds(i));
    }
    if (slowest <= 0) continue;
    rate.push_back({"throughput/examples_per_second", first + i,
                    static_cast<double>(AcceptedExamples(summary, u)) / slowest});
    share.push_back({"throughput/sync_share", first + i, longest_sync / slowest});
    if (longest_check >= 0) {
      check_share.push_back({"throughput/check_share", first + i, longest_check / slowest});
    }
  }
  out->insert(out->end(), rate.begin(), rate.end());
  out->insert(out->end(), share.begin(), share.end());
  out->insert(out->end(), check_share.begin(), check_share.end());
  if (summary.timing_size() < 2) return;
  const std::vector<const RankTiming*> timings(summary.timing().pointer_begin(),
                                               summary.timing().pointer_end());
  const std::vector<std::vector<double>> lateness = LatenessPerUpdate(timings);
  for (size_t r = 0; r < timings.size(); ++r) {
    for (size_t i = 0; i < lateness[r].size(); ++i) {
      out->push_back({absl::StrCat("lateness/rank_", timings[r]->rank()),
                      first + static_cast<int64_t>(i), lateness[r][i]});
    }
  }
}

void AddValidation(const ValidationReport& validation, std::vector<ScalarPoint>* out) {
  const int64_t step = validation.update();
  out->push_back({"validation/accuracy", step, validation.accuracy()});
  out->push_back({"validation/macro_f1", step, validation.macro_f1()});
  for (const ClassMetrics& c : validation.per_class()) {
    const std::string prefix = absl::StrCat("validation/", c.label(), "/");
    out->push_back({prefix + "precision", step, c.precision()});
    out->push_back({prefix + "recall", step, c.recall()});
    out->push_back({prefix + "f1", step, c.f1()});
  }
}

}  // namespace

std::vector<ScalarPoint> TrainingCurves(const RunSummary& summary,
                                        const ValidationReport* validation) {
  std::vector<ScalarPoint> curves;
  AddLossCurves(summary, &curves);
  AddTimingCurves(summary, &curves);
  if (validation != nullptr) AddValidation(*validation, &curves);
  return curves;
}

EventFileContents TrainingCurvesFile(const RunSummary& summary,
                                     const ValidationReport* validation, double wall_time) {
  EventFileContents file;
  file.wall_time = wall_time;
  file.restart_step = summary.first_update();
  file.scalars = TrainingCurves(summary, validation);
  return file;
}

}  // namespace receipt_parity

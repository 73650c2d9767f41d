#include "drill/trial_plan.h"

#include <limits>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"

namespace receipt_parity {
namespace {

// Uniform in [lo, hi] from the engine's raw outputs. REQUIRES: lo <= hi.
int64_t Draw(std::mt19937_64& engine, int64_t lo, int64_t hi) {
  const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;  // 0: all 2^64 values
  if (span == 0) return static_cast<int64_t>(engine());
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  const uint64_t limit = max - (max % span + 1) % span;  // a multiple of span, minus 1
  uint64_t x = engine();
  while (x > limit) x = engine();
  return lo + static_cast<int64_t>(x % span);
}

absl::Status CheckInputs(const TrialPlanInputs& in) {
  if (in.trials < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--trials=", in.trials, ": must be >= 1"));
  }
  if (in.world_size < 1 || in.every_updates < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a random drill needs world_size >= 1 and checkpoint.every_updates >= 1, got ",
        in.world_size, " and ", in.every_updates));
  }
  if (in.total_updates < 2 * in.every_updates) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a random drill needs a run that saves at least two generations: it has ",
        in.total_updates, " updates and saves every ", in.every_updates,
        " (raise epochs or run.max_updates, or lower checkpoint.every_updates)"));
  }
  for (const auto& [phase, window] : in.delay_window_us) {
    if (window < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the delay window of ", KillPhaseName(phase), " is ", window, " us: must be >= 0"));
    }
  }
  return absl::OkStatus();
}

int64_t DrawUpdate(std::mt19937_64& engine, KillPhase phase, const TrialPlanInputs& in) {
  switch (phase) {
    case KillPhase::kForwardBackward:
    case KillPhase::kAllReduce:
      return Draw(engine, in.every_updates, in.total_updates - 1);
    case KillPhase::kSave:
      return in.every_updates * Draw(engine, 2, in.total_updates / in.every_updates);
    case KillPhase::kValidationGather:
      return in.total_updates;
  }
  return 0;
}

}  // namespace

std::string PlannedTrial::Describe() const {
  return absl::StrCat("rank ", rank, " inside ", KillPhaseName(phase), " of update ", update,
                      ", ", delay_us, " us after it begins");
}

std::vector<std::string> PlannedTrial::TrainFlags() const {
  return {absl::StrCat("--kill_rank=", rank),
          absl::StrCat("--kill_phase=", KillPhaseName(phase)),
          absl::StrCat("--kill_update=", update), absl::StrCat("--kill_delay_us=", delay_us)};
}

std::vector<KillPhase> PhasesOfRun(int world_size) {
  std::vector<KillPhase> phases;
  for (KillPhase phase : AllKillPhases()) {
    if (phase != KillPhase::kAllReduce || world_size > 1) phases.push_back(phase);
  }
  return phases;
}

absl::StatusOr<TrialPlan> PlanTrials(const TrialPlanInputs& in) {
  if (absl::Status s = CheckInputs(in); !s.ok()) return s;
  std::mt19937_64 engine(in.seed);
  TrialPlan plan;
  plan.phases = PhasesOfRun(in.world_size);
  for (size_t i = plan.phases.size() - 1; i > 0; --i) {  // Fisher-Yates
    std::swap(plan.phases[i], plan.phases[Draw(engine, 0, static_cast<int64_t>(i))]);
  }
  for (int i = 0; i < in.trials; ++i) {
    PlannedTrial trial;
    trial.number = i + 1;
    trial.phase = plan.phases[i % plan.phases.size()];
    trial.rank = static_cast<int>(Draw(engine, 0, in.world_size - 1));
    trial.update = DrawUpdate(engine, trial.phase, in);
    const auto window = in.delay_window_us.find(trial.phase);
    trial.delay_us =
        Draw(engine, 0, window == in.delay_window_us.end() ? 0 : window->second);
    plan.trials.push_back(trial);
  }
  return plan;
}

}  // namespace receipt_parity

#include "drill/trial_plan.h"

#include <algorithm>
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
  if (in.trials < 0 || in.sigterm_trials < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--trials=", in.trials, " and --sigterm_trials=",
                                                   in.sigterm_trials, ": must be >= 0"));
  }
  if (in.trials + in.sigterm_trials < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--trials=", in.trials, ": must be >= 1 (or --sigterm_trials >= 1)"));
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

int64_t DrawUpdate(std::mt19937_64& engine, KillPhase phase, const TrialPlanInputs& in,
                   bool preempt) {
  if (preempt) {
    if (phase == KillPhase::kSave || phase == KillPhase::kSaveBackground) {
      return in.every_updates *
             Draw(engine, 2, std::max<int64_t>(2, in.total_updates / (2 * in.every_updates)));
    }
    return Draw(engine, in.every_updates, std::max(in.every_updates, in.total_updates / 2));
  }
  switch (phase) {
    case KillPhase::kForwardBackward:
    case KillPhase::kAllReduce:
    case KillPhase::kOptimizerStep:
      return Draw(engine, in.every_updates, in.total_updates - 1);
    case KillPhase::kSave:
    case KillPhase::kSaveBackground:
      return in.every_updates * Draw(engine, 2, in.total_updates / in.every_updates);
    case KillPhase::kValidationGather:
      return in.total_updates;
  }
  return 0;
}

// Fisher-Yates, from the engine.
void Shuffle(std::mt19937_64& engine, std::vector<KillPhase>& phases) {
  for (size_t i = phases.size() - 1; i > 0; --i) {
    std::swap(phases[i], phases[Draw(engine, 0, static_cast<int64_t>(i))]);
  }
}

// Trial `number` in `phase`: its rank, update and delay, drawn in that order.
PlannedTrial DrawTrial(std::mt19937_64& engine, const TrialPlanInputs& in, int number,
                       KillPhase phase, bool preempt) {
  PlannedTrial trial;
  trial.number = number;
  trial.phase = phase;
  trial.preempt = preempt;
  trial.rank = static_cast<int>(Draw(engine, 0, in.world_size - 1));
  trial.update = DrawUpdate(engine, trial.phase, in, preempt);
  const auto window = in.delay_window_us.find(trial.phase);
  trial.delay_us = Draw(engine, 0, window == in.delay_window_us.end() ? 0 : window->second);
  return trial;
}

}  // namespace

std::string PlannedTrial::Describe() const {
  return absl::StrCat(preempt ? "SIGTERM to " : "", "rank ", rank, " inside ",
                      KillPhaseName(phase), " of update ", update, ", ", delay_us,
                      " us after it begins");
}

std::vector<std::string> PlannedTrial::TrainFlags() const {
  std::vector<std::string> flags = {
      absl::StrCat("--kill_rank=", rank), absl::StrCat("--kill_phase=", KillPhaseName(phase)),
      absl::StrCat("--kill_update=", update), absl::StrCat("--kill_delay_us=", delay_us)};
  if (preempt) flags.push_back("--kill_signal=SIGTERM");
  return flags;
}

std::vector<KillPhase> PhasesOfRun(int world_size, bool async_save) {
  std::vector<KillPhase> phases;
  for (KillPhase phase : AllKillPhases()) {
    if (phase == KillPhase::kAllReduce && world_size == 1) continue;
    if (phase == KillPhase::kSaveBackground && !async_save) continue;
    // Not drawn: the drill's plans (and their seeds' trials) stay as they
    // were; trainer/integration/live_membership_test kills there.
    if (phase == KillPhase::kOptimizerStep) continue;
    phases.push_back(phase);
  }
  return phases;
}

std::vector<KillPhase> PreemptionPhasesOfRun(int world_size, bool async_save) {
  std::vector<KillPhase> phases;
  for (KillPhase phase : PhasesOfRun(world_size, async_save)) {
    if (phase != KillPhase::kValidationGather) phases.push_back(phase);
  }
  return phases;
}

absl::StatusOr<TrialPlan> PlanTrials(const TrialPlanInputs& in) {
  if (absl::Status s = CheckInputs(in); !s.ok()) return s;
  std::mt19937_64 engine(in.seed);
  TrialPlan plan;
  plan.phases = PhasesOfRun(in.world_size, in.async_save);
  Shuffle(engine, plan.phases);
  for (int i = 0; i < in.trials; ++i) {
    plan.trials.push_back(
        DrawTrial(engine, in, i + 1, plan.phases[i % plan.phases.size()], false));
  }
  if (in.sigterm_trials == 0) return plan;
  plan.sigterm_phases = PreemptionPhasesOfRun(in.world_size, in.async_save);
  Shuffle(engine, plan.sigterm_phases);
  for (int i = 0; i < in.sigterm_trials; ++i) {
    plan.trials.push_back(DrawTrial(engine, in, in.trials + i + 1,
                                    plan.sigterm_phases[i % plan.sigterm_phases.size()], true));
  }
  return plan;
}

}  // namespace receipt_parity

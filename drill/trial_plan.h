// How a random fault drill draws its trials, reproducibly from a seed.
//
// Trial i (0-based) kills inside phase phases[i % P]: `phases` are the
// phases the run has (allreduce needs two ranks or more), in an order the
// seed shuffles, so any P consecutive trials hit every phase once. The
// rest is drawn per trial, in this order:
//   rank      uniform over the world
//   update    the updates completed when the phase begins
//             (checkpoint/fault_injection.h):
//               forward_backward, allreduce  uniform in [every, total - 1]
//               save, save_background        g * every, g uniform in
//                                            [2, total / every]
//               validation_gather            total (the run's one
//                                            validation)
//             so generation 1 is always advertised before the kill and the
//             restart has something to resume from
//   delay_us  uniform in [0, the phase's delay window]
// Then --sigterm_trials preemption trials, numbered after them, drawn the
// same way from the same engine (the SIGKILL trials of a seed are the
// same with or without them) but cycling through their own shuffled
// phases, forward_backward, allreduce and save (a preemption during the
// final validation ends a finished run), with updates from the run's first
// half so that the stop, at a preemption poll after the signal
// (trainer/preemption_gate.h), comes before the run's end:
//               forward_backward, allreduce  uniform in [every,
//                                            max(every, total / 2)]
//               save                         g * every, g uniform in
//                                            [2, max(2, total / (2 every))]
// The rank sends itself SIGTERM instead of SIGKILL and runs on.
// Draws take mt19937_64's outputs (fixed by the C++ standard) through
// rejection sampling, never <random>'s distributions (their algorithms
// are the library's choice): a seed gives the same trials everywhere.
#ifndef RECEIPT_PARITY_DRILL_TRIAL_PLAN_H_
#define RECEIPT_PARITY_DRILL_TRIAL_PLAN_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "checkpoint/fault_injection.h"

namespace receipt_parity {

struct TrialPlanInputs {
  uint64_t seed = 0;
  int trials = 0;
  // Preemption trials after them (SIGTERM instead of SIGKILL).
  int sigterm_trials = 0;
  int world_size = 1;
  // checkpoint.every_updates, and the updates of the uninterrupted run.
  int64_t every_updates = 0;
  int64_t total_updates = 0;
  // checkpoint.async: the run also has the phase save_background.
  bool async_save = false;
  // Per phase, the largest delay drawn (microseconds); a phase without an
  // entry is drawn with delay 0.
  std::map<KillPhase, int64_t> delay_window_us;
};

struct PlannedTrial {
  int number = 0;  // 1-based
  int rank = 0;
  KillPhase phase = KillPhase::kForwardBackward;
  int64_t update = 0;
  int64_t delay_us = 0;
  // SIGTERM (a preemption: the run stops at an update boundary, saves and
  // exits 4) instead of SIGKILL.
  bool preempt = false;

  // "rank 1 inside allreduce of update 7, 812 us after it begins", or for
  // a preemption "SIGTERM to rank 1 inside ...".
  std::string Describe() const;
  // The train flags that arm it: --kill_rank, --kill_phase, --kill_update,
  // --kill_delay_us, and --kill_signal=SIGTERM for a preemption.
  std::vector<std::string> TrainFlags() const;
};

struct TrialPlan {
  // The phases in the order the trials cycle through them, and the
  // preemption trials (empty without them).
  std::vector<KillPhase> phases;
  std::vector<KillPhase> sigterm_phases;
  std::vector<PlannedTrial> trials;
};

// The phases a run of `world_size` ranks has, in AllKillPhases() order
// (save_background only when it saves in the background, checkpoint.async).
std::vector<KillPhase> PhasesOfRun(int world_size, bool async_save);
// Those a preemption trial is drawn in: PhasesOfRun without the final
// validation.
std::vector<KillPhase> PreemptionPhasesOfRun(int world_size, bool async_save);

// Errors (InvalidArgument): trials or sigterm_trials < 0, no trial at
// all, world_size < 1, every_updates < 1,
// a negative delay window, or fewer than two generations in the run
// (total_updates < 2 * every_updates), naming the figures.
absl::StatusOr<TrialPlan> PlanTrials(const TrialPlanInputs& inputs);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_DRILL_TRIAL_PLAN_H_

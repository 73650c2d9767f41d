// The random fault drill (--kill_at=random): a rank SIGKILLed at a random
// moment inside a random phase, again and again, each time restarted and
// checked.
//
//   0. DIR/uninterrupted: the run without a failure: its updates, its
//      final parameters, and its phases' median durations (the delay
//      windows, unless max_delay_us is given).
//   1. The trials, drawn from the seed (drill/trial_plan.h: phases cycle,
//      so `trials` >= the run's phases hits every phase). For trial N, in
//      DIR/trial-NN/:
//        interrupted  the run with --kill_phase/--kill_update/--kill_rank/
//                     --kill_delay_us (checkpoint/phase_kill.h); it must
//                     die by that injection (its "fault injection:" line,
//                     the launcher's "killed by signal 9");
//        the disk     every advertised generation must restore
//                     (drill/generation_audit.h);
//        restart      in the same folder: it must resume from the newest
//                     advertised generation, lose no saved update, redo at
//                     most every_updates updates, and end with the
//                     uninterrupted run's final parameters.
//      A preemption trial (--sigterm_trials) sends SIGTERM instead: the
//      run must stop after an update at or past the one in flight, with
//      exit 4, "preempted" and the stop's update in run_state.json and a
//      generation saved there; the restart must resume from it, redoing
//      nothing.
//   2. DIR/recorded: the uninterrupted run again, recording every update a
//      restart resumed at; each trial's first resumed update must be
//      bitwise equal to it, and its final parameters to the first run's.
//
// The report (RecoveryReport): one DrillTrial per trial, the totals, the
// plan; failure_trace.log tells the same story as it happened.
#ifndef RECEIPT_PARITY_DRILL_RANDOM_KILL_DRILL_H_
#define RECEIPT_PARITY_DRILL_RANDOM_KILL_DRILL_H_

#include <cstdint>

#include "absl/status/status.h"
#include "drill/drill_runs.h"
#include "drill/drill_report.pb.h"

namespace receipt_parity {

struct RandomDrillOptions {
  DrillSetup setup;
  int trials = 4;
  // Preemption trials after them: SIGTERM instead of SIGKILL; the run must
  // stop at an update boundary, save there and exit 4, and the restart
  // resume there with nothing lost or redone.
  int sigterm_trials = 0;
  uint64_t seed = 0;
  // > 0: every phase's delay is drawn from [0, max_delay_us]; 0: from
  // [0, the phase's median duration in the uninterrupted run].
  int64_t max_delay_us = 0;
};

// Runs the drill and fills `report` (report.pass(): every trial passed).
// A trial that does not recover is no error: its row says why. Errors:
// InvalidArgument when no plan can be drawn (the run saves fewer than two
// generations, no trial asked for) or a killed run refused its input; Internal
// when an uninterrupted run fails or an artifact is unreadable.
absl::Status RunRandomDrill(const RandomDrillOptions& options, Trace& trace,
                            RecoveryReport& report);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_DRILL_RANDOM_KILL_DRILL_H_

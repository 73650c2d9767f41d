// A rank that dies at a chosen moment inside a phase of a run (the phases:
// checkpoint/fault_injection.h): the hook the trainer places around each
// phase.
//
//   {
//     const PhaseKillScope kill(plan, KillPhase::kAllReduce, rank, update);
//     ... the phase ...
//   }
//
// When `plan` names this phase, rank and update, the scope logs the ERROR
// line "fault injection: rank R kills itself (SIGKILL) inside PHASE of
// update K, D us after the phase begins ..." (the fault drill looks for
// it), then arms a POSIX timer that delivers SIGKILL to the process
// plan.delay_us later. With plan.preempt the line says "rank R sends
// itself SIGTERM (a preemption)", the timer delivers SIGTERM, the end of
// the phase sends it, and the process runs on (it stops at the next update
// boundary its ranks agree on, runtime/preemption.h). The kernel kills the
// process wherever its threads are at that moment (in a kernel, in a
// collective waiting for a peer, between two writes of a save); no thread
// of ours has to be scheduled for it, so the moment is precise even on
// busy cores. If the phase ends
// first, the destructor kills the process there, after a second line
// "... at the end of PHASE of update K: the phase ended E us after it
// began, before the D us timer": before the caller sees the phase finish.
// Either way the rank dies inside the phase. A timer that fired is never
// deleted nor re-armed (Linux 6.x would drop its signal if no thread had
// taken it yet).
//
// A scope the plan does not name arms nothing and costs a comparison.
// Thread safety: one scope belongs to the thread that runs the phase.
#ifndef RECEIPT_PARITY_CHECKPOINT_PHASE_KILL_H_
#define RECEIPT_PARITY_CHECKPOINT_PHASE_KILL_H_

#include <time.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "checkpoint/fault_injection.h"

namespace receipt_parity {

// What the scope does at the phase's end when the timer has not fired:
// DieOfInjectedFault in a run (it does not return); a test's may return.
using InjectedKill = std::function<void(const std::string& what)>;

class PhaseKillScope {
 public:
  // Arms the kill if plan.Names(phase, rank, update).
  PhaseKillScope(const PhaseKillPlan& plan, KillPhase phase, int rank, int64_t update);
  // Test seam: the timer delivers `timer_signal` instead of SIGKILL, and
  // the phase's end calls `at_end` instead of DieOfInjectedFault.
  PhaseKillScope(const PhaseKillPlan& plan, KillPhase phase, int rank, int64_t update,
                 int timer_signal, InjectedKill at_end);
  // Armed and the timer has not fired: disarms it and calls `at_end` (in a
  // run: the process dies here).
  ~PhaseKillScope();

  PhaseKillScope(const PhaseKillScope&) = delete;
  PhaseKillScope& operator=(const PhaseKillScope&) = delete;

  bool armed() const { return armed_; }

 private:
  using Clock = std::chrono::steady_clock;

  bool armed_ = false;
  timer_t timer_{};
  Clock::time_point begin_;
  // "rank R kills itself (SIGKILL)", "PHASE of update K", the delay.
  std::string who_;
  std::string where_;
  int64_t delay_us_ = 0;
  InjectedKill at_end_;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CHECKPOINT_PHASE_KILL_H_

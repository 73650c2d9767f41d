#include "checkpoint/phase_kill.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "logging/glog.h"

namespace receipt_parity {
namespace {

// A one-shot timer that delivers `signal` to this process `delay_us` from
// now; false (errno set) if it cannot be made.
bool ArmTimer(int signal, int64_t delay_us, timer_t* timer) {
  sigevent event{};
  event.sigev_notify = SIGEV_SIGNAL;
  event.sigev_signo = signal;
  if (timer_create(CLOCK_MONOTONIC, &event, timer) != 0) return false;
  itimerspec when{};
  const int64_t ns = delay_us * 1000;
  when.it_value.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
  // A zero it_value would disarm the timer: a zero delay is 1 ns.
  when.it_value.tv_nsec = static_cast<long>(ns % 1'000'000'000) + (ns == 0 ? 1 : 0);
  if (timer_settime(*timer, 0, &when, nullptr) != 0) {
    const int saved = errno;
    timer_delete(*timer);
    errno = saved;
    return false;
  }
  return true;
}

}  // namespace

namespace {

// A preemption's end of phase: the signal now, and the run goes on.
void SendPreemption(const std::string& what) {
  LOG(ERROR) << "fault injection: " << what;
  kill(getpid(), SIGTERM);
}

}  // namespace

PhaseKillScope::PhaseKillScope(const PhaseKillPlan& plan, KillPhase phase, int rank,
                               int64_t update)
    : PhaseKillScope(plan, phase, rank, update, plan.preempt ? SIGTERM : SIGKILL,
                     plan.preempt ? InjectedKill(SendPreemption)
                                  : InjectedKill(DieOfInjectedFault)) {}

PhaseKillScope::PhaseKillScope(const PhaseKillPlan& plan, KillPhase phase, int rank,
                               int64_t update, int timer_signal, InjectedKill at_end) {
  if (!plan.Names(phase, rank, update)) return;
  who_ = timer_signal == SIGTERM
             ? absl::StrCat("rank ", rank, " sends itself SIGTERM (a preemption)")
             : absl::StrCat("rank ", rank, " kills itself (SIGKILL)");
  where_ = absl::StrCat(KillPhaseName(phase), " of update ", update);
  delay_us_ = plan.delay_us;
  at_end_ = std::move(at_end);
  LOG(ERROR) << "fault injection: " << who_ << " inside " << where_ << ", " << delay_us_
             << " us after the phase begins (a timer), or at the phase's end if it "
                "ends first";
  google::FlushLogFiles(google::GLOG_INFO);
  begin_ = Clock::now();
  if (!ArmTimer(timer_signal, delay_us_, &timer_)) {
    at_end_(absl::StrCat(who_, " at the start of ", where_, ": no timer (",
                         std::strerror(errno), ")"));
    return;
  }
  armed_ = true;
}

PhaseKillScope::~PhaseKillScope() {
  if (!armed_) return;
  // A timer that fired is left alone: Linux 6.x drops the signal of a timer
  // that is deleted or re-armed before a thread takes it (a SIGTERM waiting
  // for the preemption watcher on a busy machine was lost so), and one
  // timer per process costs nothing. With SIGKILL a fired timer never lets
  // the phase end. A timer that fires between the read and the delete has
  // its signal dropped with it, and the phase's end sends it.
  itimerspec left{};
  const bool read = timer_gettime(timer_, &left) == 0;
  if (read && left.it_value.tv_sec == 0 && left.it_value.tv_nsec == 0) return;
  timer_delete(timer_);
  const int64_t elapsed_us =
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - begin_).count();
  at_end_(absl::StrCat(who_, " at the end of ", where_, ": the phase ended ", elapsed_us,
                       " us after it began, before the ", delay_us_, " us timer"));
}

}  // namespace receipt_parity

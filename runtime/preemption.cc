#include "runtime/preemption.h"

#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <thread>
#include <utility>

namespace receipt_parity {
namespace {

std::atomic<int> first_signal{0};

sigset_t PreemptionSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);
  return set;
}

[[noreturn]] void StopAtOnce(const char* why) {
  std::fprintf(stderr, "preempted: %s: stopping at once, exit %d\n", why, kPreemptedExitCode);
  std::fflush(stderr);
  _exit(kPreemptedExitCode);
}

void Watch(std::chrono::seconds grace) {
  const sigset_t set = PreemptionSignals();
  int signal = 0;
  while (sigwait(&set, &signal) != 0) {
  }
  first_signal.store(signal);
  std::fprintf(stderr,
               "preempted: %s received: this rank stops after the update in progress, saving a "
               "generation if that fits in the grace period of %lld s\n",
               strsignal(signal), static_cast<long long>(grace.count()));
  std::fflush(stderr);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  for (;;) {
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::nanoseconds(0)) StopAtOnce("the grace period ran out");
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(left);
    timespec wait{static_cast<time_t>(seconds.count()),
                  static_cast<long>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        left - seconds)
                                        .count())};
    if (sigtimedwait(&set, nullptr, &wait) > 0) StopAtOnce("a second signal came");
    // EAGAIN: the period is over (checked above); EINTR: wait for the rest.
  }
}

}  // namespace

void BlockPreemptionSignals() {
  const sigset_t set = PreemptionSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

void UnblockPreemptionSignals() {
  const sigset_t set = PreemptionSignals();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

void StartPreemptionWatch(std::chrono::seconds grace) {
  std::thread([grace] { Watch(grace); }).detach();
}

bool PreemptionRequested() { return first_signal.load() != 0; }

int PreemptionSignal() { return first_signal.load(); }

void StartSignalForwarding(std::function<void(int signal)> forward) {
  std::thread([forward = std::move(forward)] {
    const sigset_t set = PreemptionSignals();
    for (;;) {
      int signal = 0;
      if (sigwait(&set, &signal) == 0) forward(signal);
    }
  }).detach();
}

}  // namespace receipt_parity

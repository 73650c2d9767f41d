#include "runtime/preemption.h"

#include <signal.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using std::chrono::milliseconds;

// Each case in its own child process (a death test): the watch is per
// process.

void WaitFor(bool (*condition)()) {
  for (int i = 0; i < 500 && !condition(); ++i) std::this_thread::sleep_for(milliseconds(10));
}

TEST(PreemptionDeathTest, TheFirstSignalAsksTheSecondStopsAtOnce) {
  EXPECT_EXIT(
      {
        BlockPreemptionSignals();
        StartPreemptionWatch(std::chrono::seconds(30));
        kill(getpid(), SIGTERM);
        WaitFor(PreemptionRequested);
        if (!PreemptionRequested() || PreemptionSignal() != SIGTERM) _exit(10);
        // Still running: the run decides when to stop.
        std::this_thread::sleep_for(milliseconds(200));
        kill(getpid(), SIGUSR1);
        std::this_thread::sleep_for(std::chrono::seconds(10));
        _exit(11);
      },
      ::testing::ExitedWithCode(kPreemptedExitCode), "a second signal came");
}

TEST(PreemptionDeathTest, TheGracePeriodRunningOutStopsAtOnce) {
  EXPECT_EXIT(
      {
        BlockPreemptionSignals();
        StartPreemptionWatch(std::chrono::seconds(1));
        kill(getpid(), SIGUSR1);
        WaitFor(PreemptionRequested);
        if (PreemptionSignal() != SIGUSR1) _exit(10);
        std::this_thread::sleep_for(std::chrono::seconds(10));
        _exit(11);
      },
      ::testing::ExitedWithCode(kPreemptedExitCode), "the grace period ran out");
}

TEST(PreemptionDeathTest, UnblockedTheSignalsActAsBefore) {
  EXPECT_EXIT(
      {
        BlockPreemptionSignals();
        UnblockPreemptionSignals();
        kill(getpid(), SIGTERM);
        std::this_thread::sleep_for(std::chrono::seconds(10));
        _exit(11);
      },
      ::testing::KilledBySignal(SIGTERM), "");
}

TEST(PreemptionDeathTest, ALauncherForwardsEverySignal) {
  EXPECT_EXIT(
      {
        BlockPreemptionSignals();
        static std::atomic<int> forwarded{0};
        StartSignalForwarding([](int) { ++forwarded; });
        kill(getpid(), SIGTERM);
        kill(getpid(), SIGTERM);  // may merge with the first while pending
        std::this_thread::sleep_for(milliseconds(300));
        kill(getpid(), SIGUSR1);
        for (int i = 0; i < 300 && forwarded.load() < 2; ++i) {
          std::this_thread::sleep_for(milliseconds(10));
        }
        _exit(forwarded.load() >= 2 && !PreemptionRequested() ? 0 : 12);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace receipt_parity

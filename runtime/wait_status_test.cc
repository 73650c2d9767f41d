#include "runtime/wait_status.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

// The wait status of a forked child that runs `body`.
template <typename Body>
int WaitStatusOf(Body body) {
  const pid_t pid = fork();
  if (pid == 0) {
    body();
    _exit(0);
  }
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  return status;
}

TEST(DescribeWaitStatusTest, AnExitNamesItsCode) {
  EXPECT_EQ(DescribeWaitStatus(WaitStatusOf([] { _exit(0); })),
            "exited with status 0");
  EXPECT_EQ(DescribeWaitStatus(WaitStatusOf([] { _exit(3); })),
            "exited with status 3");
}

TEST(DescribeWaitStatusTest, ASignalNamesItsNumberAndName) {
  EXPECT_EQ(DescribeWaitStatus(WaitStatusOf([] { raise(SIGKILL); })),
            "was killed by signal 9 (Killed)");
}

TEST(ProcessIsStoppedTest, ARunningChildIsNotAStoppedOneIs) {
  const pid_t pid = fork();
  if (pid == 0) {
    for (;;) pause();
  }
  EXPECT_FALSE(ProcessIsStopped(pid));
  kill(pid, SIGSTOP);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, WUNTRACED), pid);  // it has stopped
  EXPECT_TRUE(ProcessIsStopped(pid));
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  EXPECT_FALSE(ProcessIsStopped(pid));  // gone
  EXPECT_FALSE(ProcessIsStopped(-1));
}

}  // namespace
}  // namespace receipt_parity

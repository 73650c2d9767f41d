// How a child process ended, in words, from the status waitpid reported.
// Shared by the launcher (its workers) and subprocess (one child).
#ifndef RECEIPT_PARITY_RUNTIME_WAIT_STATUS_H_
#define RECEIPT_PARITY_RUNTIME_WAIT_STATUS_H_

#include <string>

namespace receipt_parity {

// "exited with status 2" / "was killed by signal 9 (Killed)" / "ended with
// wait status N" for anything else.
std::string DescribeWaitStatus(int wait_status);

// Whether process `pid` is stopped now (SIGSTOP, SIGTSTP, a debugger: state
// T or t in /proc/PID/stat): it runs nothing and answers no one, and a
// SIGTERM would wait until it is continued. False when it cannot be read.
bool ProcessIsStopped(int pid);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_RUNTIME_WAIT_STATUS_H_

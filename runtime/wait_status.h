// How a child process ended, in words, from the status waitpid reported.
// Shared by the launcher (its workers) and subprocess (one child).
#ifndef RECEIPT_PARITY_RUNTIME_WAIT_STATUS_H_
#define RECEIPT_PARITY_RUNTIME_WAIT_STATUS_H_

#include <string>

namespace receipt_parity {

// "exited with status 2" / "was killed by signal 9 (Killed)" / "ended with
// wait status N" for anything else.
std::string DescribeWaitStatus(int wait_status);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_RUNTIME_WAIT_STATUS_H_

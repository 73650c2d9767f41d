// A deadline on a blocking call whose own timeout cannot be trusted to end
// it. c10d's TCPStore client, once its wait for a key times out, asks the
// store to cancel the wait and then reads the store's answer with no
// timeout at all: a store whose host is frozen (SIGSTOP, a hung machine)
// never answers, so the rank blocks there forever and nothing ends the run
// (issue 26: one run in two hung so). A CallDeadline held around such a
// call lets a watchdog thread end the process when the call outlives its
// limit: it writes one line naming the call to stderr and exits 1 with
// _exit (nothing else of the process can be trusted to return: no
// destructors, no atexit handlers), so the launcher sees a failed rank and
// stops the others.
//
// Thread safety: any thread may hold deadlines; one watchdog thread,
// started on first use, serves them all.
#ifndef RECEIPT_PARITY_RUNTIME_CALL_DEADLINE_H_
#define RECEIPT_PARITY_RUNTIME_CALL_DEADLINE_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace receipt_parity {

// The exit code of a process a deadline ended (a run failure).
inline constexpr int kDeadlineExitCode = 1;

class CallDeadline {
 public:
  // Until destroyed: when `limit` passes first, the process ends with
  // `what` (e.g. "rank 1: the store's answer to get(ckpt/resume)").
  CallDeadline(std::chrono::milliseconds limit, std::string what);
  ~CallDeadline();
  CallDeadline(const CallDeadline&) = delete;
  CallDeadline& operator=(const CallDeadline&) = delete;

 private:
  uint64_t id_;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_RUNTIME_CALL_DEADLINE_H_

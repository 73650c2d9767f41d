// Running one of the project's binaries as a child process and waiting for
// it: the study's stages, the benchmark's runs and the fault drill's runs
// are real programs, not library calls.
//
// The child's stdout and stderr are appended to a log file (so the study's
// own output stays one line per stage); when the child fails, the error
// carries the command, how it ended and the last lines of that log.
#ifndef RECEIPT_PARITY_RUNTIME_SUBPROCESS_H_
#define RECEIPT_PARITY_RUNTIME_SUBPROCESS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace receipt_parity {

struct ProcessSpec {
  // argv[0] is the program's path (no PATH search).
  std::vector<std::string> argv;
  // Created (with its folder) or appended to. REQUIRES: non-empty.
  std::string log_path;
};

// How the child ended, as waitpid reported it.
struct ProcessExit {
  int wait_status = 0;
  bool ok() const;
  // The exit code, or -1 when the child was killed by a signal.
  int exit_code() const;
  // "exited with status 2" / "was killed by signal 9 (Killed)".
  std::string Describe() const;
};

// Runs the child to completion in the current working directory with this
// process's environment. Returns how it ended, whatever that was.
// Errors: NotFound when argv[0] is not an executable file (names it);
// Internal when the log cannot be opened or the child cannot be started.
// Thread safety: safe to call from several threads (each waits for its own
// child only).
absl::StatusOr<ProcessExit> RunProcess(const ProcessSpec& spec);

// RunProcess, and an error unless the child exited 0: Aborted with e.g.
// "`/path/train --config=...` exited with status 3; last lines of
// /out/logs/two_worker.log: ...". `exit_meanings` lines such as
// {3, "parity failed"} are added to the message for a known exit code.
absl::Status RunProcessToSuccess(
    const ProcessSpec& spec,
    const std::vector<std::pair<int, std::string>>& exit_meanings = {});

// The last `max_lines` lines of the file at `path` ("" if unreadable).
std::string LastLines(const std::string& path, int max_lines);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_RUNTIME_SUBPROCESS_H_

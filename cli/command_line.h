// What the project's command-line programs share: where relative paths
// point, and how a Status becomes an exit code.
//
// Exit codes of every binary: 0 done; 1 a run failed (a rank died, a peer
// timed out, an I/O error); 2 bad input (flags, config, data, plugin
// library), named with its file, line and field; 3 the program ran but the
// property it checks (parity, recovery) does not hold; 4 preempted: a
// SIGTERM or SIGUSR1 stopped the run at an update boundary (having saved a
// generation when one fitted in the grace period), and running it again
// resumes it.
#ifndef RECEIPT_PARITY_CLI_COMMAND_LINE_H_
#define RECEIPT_PARITY_CLI_COMMAND_LINE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace receipt_parity {

inline constexpr int kExitRunFailed = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitCheckFailed = 3;
inline constexpr int kExitPreempted = 4;

// The one way the binaries resolve the user's paths. Under `bazel run` a
// binary starts in its runfiles folder; paths on the command line are the
// caller's. Changes to $BUILD_WORKING_DIRECTORY when it is set (a warning
// if that fails), else does nothing; afterwards a relative path on the
// command line means what the user meant. A binary that also finds
// programs in its runfiles creates its RunfilesLocator
// (cli/runfiles_locator.h) first.
void ChangeToCallersDirectory();

// kExitBadInput for InvalidArgument, NotFound and AlreadyExists (e.g. a run
// folder in use, a plugin name registered twice), kExitRunFailed otherwise.
// REQUIRES: !status.ok().
int ExitCodeFor(const absl::Status& status);

// Prints "error: <message>" to stderr and returns ExitCodeFor(status).
int ReportFailure(const absl::Status& status);

// A flag that may be given many times and whose values may hold commas
// (train --set model.conv_channels=[8,16]), which absl's flags do not
// keep: takes every "--NAME=VALUE" and "--NAME VALUE" out of argv[1..]
// in order, and puts the other arguments (argv[0] first) in `rest` for
// absl::ParseCommandLine. InvalidArgument for a "--NAME" with no value
// after it. The pointers in `rest` are argv's.
absl::StatusOr<std::vector<std::string>> TakeRepeatedFlag(const std::string& name, int argc,
                                                          char** argv, std::vector<char*>* rest);

// absl::ParseCommandLine over the arguments TakeRepeatedFlag(name) leaves;
// returns --NAME's values, and puts what absl::ParseCommandLine returns
// (argv[0], then the positional arguments) in `positional` when it is
// given. Errors: TakeRepeatedFlag's (absl's own exit the process, as
// absl::ParseCommandLine does).
absl::StatusOr<std::vector<std::string>> ParseCommandLineTaking(
    const std::string& name, int argc, char** argv,
    std::vector<char*>* positional = nullptr);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CLI_COMMAND_LINE_H_

// The local launcher's mpirun mode (`run { launcher: "mpirun" }`): instead
// of forking W workers itself, the launcher starts ONE child, `mpirun -np W
// <this binary> ARGS...`, which starts the ranks (they read
// OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK, runtime/distributed_env.h) and ends
// the whole job when one rank fails. The command line is logged.
//
// Defaults that make OpenMPI work in the places this project runs (put on
// the command line, so they show in the log):
//   --oversubscribe                 more ranks than cores is allowed
//   --mca pml ob1 --mca btl self,vader   shared memory between local ranks
//   --mca mpi_yield_when_idle 1     waiting ranks yield instead of busy polling
//   --allow-run-as-root             only when running as uid 0 (containers)
//   --mca orte_tmpdir_base /tmp     only when TMPDIR is long (Bazel's test
//                                   folders): OpenMPI's session folder holds
//                                   Unix sockets, whose paths are short
// `mpirun` is looked up in PATH; MPIRUN names another one.
#ifndef RECEIPT_PARITY_RUNTIME_MPIRUN_LAUNCHER_H_
#define RECEIPT_PARITY_RUNTIME_MPIRUN_LAUNCHER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "runtime/launcher.h"

namespace receipt_parity {

// The mpirun the launcher runs: $MPIRUN when set and not empty, else
// "mpirun" (looked up in PATH).
std::string MpirunProgram();

// The executable MpirunProgram() names: $MPIRUN itself when it holds a
// '/', else the first `mpirun` (or $MPIRUN) in PATH's folders; "" when there
// is none.
std::string MpirunPath();

// Whether MpirunPath() found one.
bool MpirunInstalled();

// The argv of mpirun that starts options.world_size copies of `program`
// with options.args, each with MASTER_ADDR and MASTER_PORT from `options`
// (passed with -x), and the defaults above for this process's uid and TMPDIR.
std::vector<std::string> MpirunCommandLine(const LaunchOptions& options,
                                           const std::string& program);

// Runs mpirun (MpirunCommandLine of this process's own executable) to its
// end. result->wait_status holds mpirun's wait status (one entry) and
// failed_rank stays -1: mpirun's own message (on stderr) names the rank.
// OK when mpirun exited 0, else Aborted, e.g. "mpirun exited with status 1:
// a rank failed and mpirun ended the job (its message above names the
// rank)". Internal when mpirun cannot be started.
absl::Status LaunchUnderMpirun(const LaunchOptions& options, LaunchResult* result);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_RUNTIME_MPIRUN_LAUNCHER_H_

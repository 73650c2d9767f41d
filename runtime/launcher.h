// The local launcher (like `torchrun --nproc_per_node=W`): starts W copies
// of this binary, each with the torchrun environment, and watches them.
//
// With `under_mpirun` it starts one mpirun instead, which starts the
// workers (runtime/mpirun_launcher.h).
//
// If a worker exits non-zero or dies by a signal, the launcher stops the
// others (SIGTERM, then SIGKILL after `grace`; a stopped one, SIGSTOP, is
// killed at once and named) and reports which rank died and how. A worker
// that exits 4 (preempted, runtime/preemption.h) does not stop the others:
// they are stopping at the same update, and the launcher waits for them.
// Workers also die with the launcher (PR_SET_PDEATHSIG), so none is ever
// left running.
//
// Ranks on their own cores: when the launcher's affinity mask holds at
// least W CPUs, rank r is pinned to the r-th of them before it execs
// (runtime/cpu_pinning.h); the launcher logs the pinning either way.
#ifndef RECEIPT_PARITY_RUNTIME_LAUNCHER_H_
#define RECEIPT_PARITY_RUNTIME_LAUNCHER_H_

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace receipt_parity {

struct LaunchOptions {
  // Arguments after the program name, passed to every worker unchanged.
  std::vector<std::string> args;
  int world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  std::chrono::seconds grace{5};
  // The program every worker runs (argv[0] too); tests replace it.
  std::string program = "/proc/self/exe";
  // Pin rank r to the r-th CPU of the affinity mask (when there are enough).
  bool pin_cpus = true;
  // Start the workers with mpirun (runtime/mpirun_launcher.h), not fork.
  bool under_mpirun = false;
  // Under mpirun: environment variables of the form "VALUE:<this pid>" that
  // tell a worker its parent (the launcher) prepared something (the run
  // folder's lock); for mpirun's workers, whose parent is mpirun, the pid is
  // rewritten to mpirun's.
  std::vector<std::string> parent_pid_variables;
  // Pass SIGTERM and SIGUSR1 that reach the launcher on to every worker
  // (runtime/preemption.h; REQUIRES: BlockPreemptionSignals in every
  // thread of the launcher), so that they stop at an update boundary.
  bool forward_preemption_signals = false;
};

struct LaunchResult {
  // Wait statuses by rank (as from waitpid).
  std::vector<int> wait_status;
  // The first rank that failed, or -1.
  int failed_rank = -1;
};

// Runs the workers to completion. Returns the result; `status` in the
// result's sense is: OK when every worker exited 0, otherwise Aborted with
// e.g. "rank 1 was killed by signal 9 (Killed); stopped the other ranks".
// A worker that exits with code 3 (parity failed) is reported as such.
// With options.under_mpirun: LaunchUnderMpirun.
absl::Status LaunchLocalWorkers(const LaunchOptions& options,
                                LaunchResult* result);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_RUNTIME_LAUNCHER_H_

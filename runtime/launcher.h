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
// The store: with `host_store` the launcher hosts the run's c10d TCPStore
// at MASTER_ADDR:MASTER_PORT (runtime/store_host.h) and tells the workers
// so (RECEIPT_PARITY_LAUNCHER_STORE=1): no rank hosts it, so no rank's
// death takes it down. With a `heartbeat_timeout` too, every worker beats
// (runtime/heartbeat.h, RECEIPT_PARITY_HEARTBEAT_MS), and a worker whose
// heartbeat stalls that long has stopped answering: the launcher kills it
// (SIGKILL) and reports it as the failed rank, "stopped answering", within
// the timeout and a poll, not a collective's timeout later.
//
// Survivors go on: with `survivors_go_on` (and host_store), a rank lost to
// a signal (SIGKILL, a crash) or frozen does not stop the others: the
// launcher publishes the next membership, the launch ranks still running
// (runtime/membership.h), tells the workers at start that it will
// (RECEIPT_PARITY_SURVIVORS_GO_ON=1), and goes on waiting. A rank that
// exits with a code (bad input, parity failed, an error) still stops every
// rank, and so does losing the last one. Ranks lost at the same moment
// (reaped before the membership is published) leave in one change.
//
// Replacements: with `replace_lost_ranks` too, the launcher starts a new
// process for each lost launch rank (up to `max_replacements` in all),
// told to join after the membership just published
// (RECEIPT_PARITY_JOINS_AFTER_MEMBERSHIP). Once it says it is ready and
// every member of the newest membership has reported, the launcher
// publishes the next membership with it (runtime/membership.h); the
// members stop at the next update boundary and the grown group forms. A
// replacement that ends before it joined is said and the run goes on
// without it; one still waiting when every member has finished is
// stopped, and the run's outcome is the members'.
//
// Ranks on their own cores: when the launcher's affinity mask holds at
// least W CPUs, rank r is pinned to the r-th of them before it execs
// (runtime/cpu_pinning.h); the launcher logs the pinning either way.
#ifndef RECEIPT_PARITY_RUNTIME_LAUNCHER_H_
#define RECEIPT_PARITY_RUNTIME_LAUNCHER_H_

#include <chrono>
#include <cstdint>
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
  // The launcher hosts the store (not under mpirun).
  bool host_store = false;
  // With host_store: the heartbeat watch's timeout; zero: no watch.
  std::chrono::milliseconds heartbeat_timeout{0};
  // With host_store: a lost rank leaves and the others go on (above).
  bool survivors_go_on = false;
  // With survivors_go_on: a lost rank is replaced, at most this many times
  // in all (above).
  bool replace_lost_ranks = false;
  int max_replacements = 0;
};

// A replacement that joined: its launch rank, the membership it joined,
// seconds from its start to that membership's publication, and what the
// grown group reported (as RankLoss's; went_on_from_update -1 when no
// member reported).
struct RankJoin {
  int rank = -1;
  int membership = 0;
  double joining_seconds = 0;
  double reforming_seconds = 0;
  int64_t went_on_from_update = -1;
  // The launch ranks of the membership it joined, in group order.
  std::vector<int> members;
};

// A rank the run lost: what the launcher saw.
struct RankLoss {
  int rank = -1;
  // As from waitpid.
  int wait_status = 0;
  // "was killed by signal 9 (Killed)", "stopped answering: no heartbeat
  // for 1.2 s; killed", ...
  std::string why;
  // The updates it had completed at its last heartbeat; -1 unknown.
  int64_t updates_completed = -1;
  // From its last heartbeat the launcher saw to the launcher acting on the
  // loss; 0 without a heartbeat watch.
  double detection_seconds = 0;
  // With survivors_go_on: the membership it left (1, 2, ...; ranks that
  // left together share it), the launch ranks that went on, and what the
  // survivors reported (runtime/membership.h): the slowest one's
  // re-forming seconds, the updates redone, the update they went on from
  // (-1 when no survivor reported). membership 0: the attempt ended.
  int membership = 0;
  std::vector<int> survivors;
  double reforming_seconds = 0;
  int updates_redone = 0;
  int64_t went_on_from_update = -1;
};

struct LaunchResult {
  // Wait statuses by rank (as from waitpid).
  std::vector<int> wait_status;
  // The first rank that failed, or -1.
  int failed_rank = -1;
  // The ranks lost, in the order the launcher saw them (the first failure;
  // the others it stopped are not losses).
  std::vector<RankLoss> losses;
  // The replacements that joined, in order.
  std::vector<RankJoin> joins;
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

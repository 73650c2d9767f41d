// The torchrun conventions: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
// MASTER_PORT. When RANK is set, the binary runs as that one rank (under
// this project's launcher, `torchrun --no-python`, a scheduler, or by hand
// on several hosts).
//
// mpirun's conventions: when RANK is unset and OMPI_COMM_WORLD_RANK is set,
// the binary runs as that rank of an mpirun job (OMPI_COMM_WORLD_SIZE,
// OMPI_COMM_WORLD_LOCAL_RANK). MASTER_ADDR and MASTER_PORT are then
// optional: without MASTER_PORT rank 0 picks the store's address and port
// and shares them over MPI (runtime/mpi_world.h) before the store is made.
//
// This binary's launcher adds RECEIPT_PARITY_LAUNCHER_STORE=1 (it hosts the
// store, so rank 0 does not; runtime/launcher.h) and, with a heartbeat
// watch, RECEIPT_PARITY_HEARTBEAT_MS (each rank beats that often;
// runtime/heartbeat.h), and RECEIPT_PARITY_SURVIVORS_GO_ON=1 when a lost
// rank leaves and the others go on (runtime/membership.h), and
// RECEIPT_PARITY_JOINS_AFTER_MEMBERSHIP=k for a replacement it starts for a
// lost rank: the process joins the survivors of membership k from a peer's
// memory instead of starting the run (trainer/live_membership.h). Bad
// values are refused naming the variable.
//
// srun's conventions: when neither RANK nor OMPI_COMM_WORLD_RANK is set and
// the process is a task of an srun step (SLURM_PROCID and SLURM_STEP_ID set;
// an sbatch script's batch step sets SLURM_PROCID=0 but no SLURM_STEP_ID, so
// `train` called there directly launches its own workers), the binary runs
// as rank SLURM_PROCID of SLURM_NTASKS, local rank SLURM_LOCALID. The store
// is on the first host of SLURM_JOB_NODELIST (a hostlist such as
// "node[03-06],gpu7": node03) unless MASTER_ADDR is set, at MASTER_PORT, or
// without it at 20000 + (7 * SLURM_JOB_ID + SLURM_STEP_ID) mod 10000 (every
// task of a step computes the same port; a rerun in the same job, a new
// step, gets another). SLURM_STEP_NUM_TASKS, when set, must equal
// SLURM_NTASKS.
#ifndef RECEIPT_PARITY_RUNTIME_DISTRIBUTED_ENV_H_
#define RECEIPT_PARITY_RUNTIME_DISTRIBUTED_ENV_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace receipt_parity {

inline constexpr char kLauncherStoreVariable[] = "RECEIPT_PARITY_LAUNCHER_STORE";
inline constexpr char kHeartbeatVariable[] = "RECEIPT_PARITY_HEARTBEAT_MS";
inline constexpr char kSurvivorsGoOnVariable[] = "RECEIPT_PARITY_SURVIVORS_GO_ON";
inline constexpr char kJoinsAfterVariable[] = "RECEIPT_PARITY_JOINS_AFTER_MEMBERSHIP";

struct DistributedEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  // Started by mpirun (OMPI_COMM_WORLD_RANK, RANK unset).
  bool under_mpirun = false;
  // Under mpirun without MASTER_PORT: master_addr and master_port are not
  // known yet; rank 0 shares them over MPI (ShareStoreAddressOverMpi).
  bool store_address_over_mpi = false;
  // The variable the world size came from, for messages: "WORLD_SIZE",
  // "OMPI_COMM_WORLD_SIZE" or "SLURM_NTASKS".
  std::string world_size_variable = "WORLD_SIZE";
  // RECEIPT_PARITY_LAUNCHER_STORE=1: the launcher hosts the store.
  bool launcher_hosts_store = false;
  // RECEIPT_PARITY_HEARTBEAT_MS: beat this often (0: no heartbeat).
  int heartbeat_interval_ms = 0;
  // RECEIPT_PARITY_SURVIVORS_GO_ON=1: a lost rank leaves and the others go
  // on (runtime/membership.h); needs the launcher's store.
  bool survivors_go_on = false;
  // RECEIPT_PARITY_JOINS_AFTER_MEMBERSHIP=k: a replacement for a lost rank,
  // joining a membership after k (needs survivors_go_on); -1: a rank the
  // run started with.
  int joins_after_membership = -1;
};

// The first host of a Slurm hostlist ("node[03-06,09],gpu7" -> "node03",
// "rack[1-2]-n[5-6]" -> "rack1-n5"). InvalidArgument naming `variable` for
// an empty first host, unbalanced brackets or brackets inside brackets.
absl::StatusOr<std::string> FirstSlurmHost(const std::string& hostlist,
                                           const std::string& variable);

// nullopt when neither RANK, OMPI_COMM_WORLD_RANK nor an srun step's
// SLURM_PROCID is set. InvalidArgument naming the variable when one is set
// but missing its companions, not a number, out of range, or (Slurm)
// disagreeing with another.
absl::StatusOr<std::optional<DistributedEnv>> DistributedEnvFromEnvironment();

// torchrun's TORCHELASTIC_RESTART_COUNT: 0 on a first attempt and when it
// is unset or not a count.
int ElasticRestartCount();

// The environment entries ("RANK=1", ...) that describe `env`.
std::vector<std::string> ToEnvironmentEntries(const DistributedEnv& env);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_RUNTIME_DISTRIBUTED_ENV_H_

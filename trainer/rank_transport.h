// Which launcher a config's ranks need, and what a rank starts before it
// joins the c10d process group.
//
// Backend "mpi" (also chosen by reducer mpi_allreduce, its old name)
// reduces gradients over MPI_COMM_WORLD (runtime/mpi_backend.h), so its
// ranks must be started by mpirun: `run { launcher: "mpirun" }` for this
// binary's own launcher, or an outside `mpirun -np N train ...`. A rank of
// such a config starts MPI (runtime/mpi_world.h) after its run folder is
// prepared and before it joins the store, so nothing forks after MPI_Init;
// other backends never start MPI. MPI_Finalize: RunAsRank in train_main.cc.
#ifndef RECEIPT_PARITY_TRAINER_RANK_TRANSPORT_H_
#define RECEIPT_PARITY_TRAINER_RANK_TRANSPORT_H_

#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/distributed_env.h"
#include "config/config.pb.h"
#include "config/config_loader.h"

namespace receipt_parity {

// Whether the config's gradients cross ranks over MPI (backend "mpi",
// more than one rank).
bool ReducesOverMpi(const TrainingConfig& config);

// InvalidArgument naming the config's line (exit 2; backend's, or
// reducer.name's for mpi_allreduce), before anything runs:
//  - backend "mpi" on ranks not started by mpirun (RANK set: torchrun, a
//    scheduler, by hand), or for this binary's launcher without
//    run { launcher: "mpirun" };
//  - ranks under mpirun without MASTER_PORT whose backend is not "mpi":
//    their store's address would come over MPI, which only backend "mpi"
//    starts (pass MASTER_ADDR and MASTER_PORT with mpirun -x).
// (Backend "mpi" with device "cuda" is refused when the config loads.)
// `env`: this process's ranks variables (nullopt: it is the launcher or a
// one-worker run).
absl::Status CheckLauncherFits(const LoadedConfig& loaded,
                               const std::optional<DistributedEnv>& env);

// For a rank of a config that ReducesOverMpi: starts MPI and, when its
// store's address comes over MPI, gets it (rank 0 picks it); `env`
// unchanged otherwise. Errors: StartMpi's and ShareStoreAddressOverMpi's.
absl::StatusOr<DistributedEnv> PrepareRankTransport(const TrainingConfig& config,
                                                    const DistributedEnv& env);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_TRAINER_RANK_TRANSPORT_H_

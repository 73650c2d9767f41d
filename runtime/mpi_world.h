// OpenMPI's world (MPI_COMM_WORLD) for ranks started by mpirun whose
// gradients cross ranks over MPI (backend "mpi", runtime/mpi_backend.h). The c10d
// store and Gloo group still carry everything else (start agreement,
// gathers, checkpoint confirmations); MPI carries only the store's address
// (once, at start) and the gradients.
//
// Lifetime: StartMpi() once, after everything that may fork (the run
// folder, the reference run): nothing forks after MPI_Init. FinishMpi() at
// the end of a run that succeeded. A rank that fails exits without
// MPI_Finalize, which makes mpirun end the whole job with a non-zero exit
// (MPI_Finalize would wait for peers that may be stuck in a collective).
//
// Thread safety: MPI is started with MPI_THREAD_SERIALIZED: any thread may
// call MPI, one at a time.
#ifndef RECEIPT_PARITY_RUNTIME_MPI_WORLD_H_
#define RECEIPT_PARITY_RUNTIME_MPI_WORLD_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/distributed_env.h"

namespace receipt_parity {

// MPI_Init_thread, asking for MPI_THREAD_SERIALIZED. A second call does
// nothing. FailedPrecondition when OpenMPI grants less, or when this
// process's MPI_COMM_WORLD is not `env`'s world (rank or size differ: the
// binary was not started by the mpirun whose variables it read); Internal
// when MPI_Init fails. REQUIRES: env.under_mpirun.
absl::Status StartMpi(const DistributedEnv& env);

// Whether StartMpi succeeded and FinishMpi has not run.
bool MpiStarted();

// MPI_Finalize when MPI was started; otherwise nothing. Collective: every
// rank calls it.
absl::Status FinishMpi();

// Under mpirun without MASTER_PORT (env.store_address_over_mpi): rank 0
// decides where its store listens and every rank gets it by MPI_Bcast.
// The address is MASTER_ADDR when set, else `configured_addr` (the
// config's run.master_addr, 127.0.0.1 unless set) when every rank is on
// this host (OMPI_COMM_WORLD_LOCAL_SIZE equals the world size), else the
// address of rank 0's host name; the port is a free one. Returns `env` with
// them filled in and store_address_over_mpi false; `env` unchanged when
// its address is known already. Collective over MPI_COMM_WORLD.
// REQUIRES: MpiStarted().
absl::StatusOr<DistributedEnv> ShareStoreAddressOverMpi(
    DistributedEnv env, const std::string& configured_addr);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_RUNTIME_MPI_WORLD_H_

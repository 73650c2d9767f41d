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
#ifndef RECEIPT_PARITY_RUNTIME_DISTRIBUTED_ENV_H_
#define RECEIPT_PARITY_RUNTIME_DISTRIBUTED_ENV_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace receipt_parity {

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
};

// nullopt when neither RANK nor OMPI_COMM_WORLD_RANK is set. InvalidArgument
// naming the variable when one is set but missing its companions, not a
// number, or out of range.
absl::StatusOr<std::optional<DistributedEnv>> DistributedEnvFromEnvironment();

// torchrun's TORCHELASTIC_RESTART_COUNT: 0 on a first attempt and when it
// is unset or not a count.
int ElasticRestartCount();

// The environment entries ("RANK=1", ...) that describe `env`.
std::vector<std::string> ToEnvironmentEntries(const DistributedEnv& env);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_RUNTIME_DISTRIBUTED_ENV_H_

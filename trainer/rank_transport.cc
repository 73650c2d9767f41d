#include "trainer/rank_transport.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "reducers/mpi_allreduce.h"
#include "runtime/mpi_world.h"

namespace receipt_parity {
namespace {

absl::Status Refused(const LoadedConfig& loaded, const std::string& field,
                     const std::string& why) {
  return absl::InvalidArgumentError(
      absl::StrCat(loaded.locator->Where(field), ": ", field, ": ", why));
}

}  // namespace

bool ReducesOverMpi(const TrainingConfig& config) {
  return config.world_size() > 1 && config.reducer().name() == MpiAllreduceReducer::kName;
}

absl::Status CheckLauncherFits(const LoadedConfig& loaded,
                               const std::optional<DistributedEnv>& env) {
  const TrainingConfig& config = loaded.config;
  if (ReducesOverMpi(config)) {
    if (env.has_value() && !env->under_mpirun) {
      return Refused(loaded, "reducer.name",
                     "mpi_allreduce needs ranks started by mpirun, but RANK is set "
                     "(torchrun, a scheduler or by hand): start them with `mpirun -np N "
                     "train ...`, or use allreduce_sum");
    }
    if (!env.has_value() && config.run().launcher() != "mpirun") {
      return Refused(loaded, "reducer.name",
                     absl::StrCat("mpi_allreduce needs ranks started by mpirun, but "
                                  "run.launcher is '", config.run().launcher(),
                                  "': set run { launcher: \"mpirun\" }, or start the "
                                  "ranks with `mpirun -np N train ...`"));
    }
    if (config.device() != "cpu") {
      return Refused(loaded, "reducer.name",
                     "mpi_allreduce reduces CPU tensors only: use device \"cpu\"");
    }
  }
  if (env.has_value() && env->store_address_over_mpi && !ReducesOverMpi(config)) {
    return Refused(loaded, "reducer.name",
                   absl::StrCat("under mpirun without MASTER_PORT the store's address comes "
                                "over MPI, which only reducer mpi_allreduce starts (this "
                                "config's reducer: ", config.reducer().name(),
                                "): pass MASTER_ADDR and MASTER_PORT (mpirun -x), or use "
                                "mpi_allreduce"));
  }
  return absl::OkStatus();
}

absl::StatusOr<DistributedEnv> PrepareRankTransport(const TrainingConfig& config,
                                                    const DistributedEnv& env) {
  if (!ReducesOverMpi(config)) return env;
  if (absl::Status s = StartMpi(env); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("rank ", env.rank, ": ", s.message()));
  }
  return ShareStoreAddressOverMpi(env, config.run().master_addr());
}

}  // namespace receipt_parity

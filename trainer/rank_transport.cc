#include "trainer/rank_transport.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "reducers/allreduce_sum_reducer.h"
#include "runtime/mpi_world.h"

namespace receipt_parity {
namespace {

// Where a refusal points: the reducer's line for mpi_allreduce (which
// chose backend "mpi" by its name), else the backend's.
struct MpiChoice {
  std::string field;
  std::string what;
};

MpiChoice MpiChoiceOf(const TrainingConfig& config) {
  if (config.reducer().name() == kMpiAllreduceName) return {"reducer.name", "mpi_allreduce"};
  return {"backend", "backend \"mpi\""};
}

absl::Status Refused(const LoadedConfig& loaded, const std::string& field,
                     const std::string& why) {
  return absl::InvalidArgumentError(
      absl::StrCat(loaded.locator->Where(field), ": ", field, ": ", why));
}

}  // namespace

bool ReducesOverMpi(const TrainingConfig& config) {
  return config.world_size() > 1 && config.backend() == "mpi";
}

absl::Status CheckLauncherFits(const LoadedConfig& loaded,
                               const std::optional<DistributedEnv>& env) {
  const TrainingConfig& config = loaded.config;
  if (ReducesOverMpi(config)) {
    const MpiChoice mpi = MpiChoiceOf(config);
    if (env.has_value() && !env->under_mpirun) {
      return Refused(loaded, mpi.field,
                     absl::StrCat(mpi.what,
                                  " needs ranks started by mpirun, but RANK is set "
                                  "(torchrun, a scheduler or by hand): start them with "
                                  "`mpirun -np N train ...`, or use backend \"gloo\""));
    }
    if (!env.has_value() && config.run().launcher() != "mpirun") {
      return Refused(loaded, mpi.field,
                     absl::StrCat(mpi.what, " needs ranks started by mpirun, but "
                                  "run.launcher is '", config.run().launcher(),
                                  "': set run { launcher: \"mpirun\" }, or start the "
                                  "ranks with `mpirun -np N train ...`"));
    }
  }
  if (env.has_value() && env->store_address_over_mpi && !ReducesOverMpi(config)) {
    return Refused(loaded, "backend",
                   absl::StrCat("under mpirun without MASTER_PORT the store's address comes "
                                "over MPI, which only backend \"mpi\" starts (this "
                                "config's backend: ", config.backend(),
                                "): pass MASTER_ADDR and MASTER_PORT (mpirun -x), or use "
                                "backend \"mpi\""));
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

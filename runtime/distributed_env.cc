#include "runtime/distributed_env.h"

#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace receipt_parity {
namespace {

constexpr char kTorchrunCompanions[] =
    " is not set (RANK is: set all of RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)";

absl::StatusOr<int> IntVariable(const char* name, int min, int max,
                                const char* missing = kTorchrunCompanions) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') {
    return absl::InvalidArgumentError(absl::StrCat(name, missing));
  }
  int parsed = 0;
  if (!absl::SimpleAtoi(value, &parsed) || parsed < min || parsed > max) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, "=", value, " is not an integer in [", min, ", ", max, "]"));
  }
  return parsed;
}

bool IsSet(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0';
}

// env.rank and env.local_rank from the launcher's variables, each in
// [0, env.world_size); a missing one is explained by `companions`.
absl::Status ReadRankAndLocalRank(const char* rank_variable, const char* local_rank_variable,
                                  const char* companions, DistributedEnv& env) {
  for (auto [name, field] : {std::make_pair(rank_variable, &env.rank),
                             std::make_pair(local_rank_variable, &env.local_rank)}) {
    absl::StatusOr<int> value = IntVariable(name, 0, env.world_size - 1, companions);
    if (!value.ok()) return value.status();
    *field = *value;
  }
  return absl::OkStatus();
}

// What this binary's launcher adds: RECEIPT_PARITY_LAUNCHER_STORE (0 or 1)
// and RECEIPT_PARITY_HEARTBEAT_MS (which needs the first).
absl::Status ReadLauncherVariables(DistributedEnv& env) {
  constexpr char kLauncherOnly[] = " is not set";
  if (IsSet(kLauncherStoreVariable)) {
    absl::StatusOr<int> hosts = IntVariable(kLauncherStoreVariable, 0, 1, kLauncherOnly);
    if (!hosts.ok()) return hosts.status();
    env.launcher_hosts_store = *hosts == 1;
  }
  if (IsSet(kSurvivorsGoOnVariable)) {
    absl::StatusOr<int> go_on = IntVariable(kSurvivorsGoOnVariable, 0, 1, kLauncherOnly);
    if (!go_on.ok()) return go_on.status();
    if (*go_on == 1 && !env.launcher_hosts_store) {
      return absl::InvalidArgumentError(absl::StrCat(
          kSurvivorsGoOnVariable, "=1 but ", kLauncherStoreVariable,
          "=1 is not: the membership is published in the launcher's store"));
    }
    env.survivors_go_on = *go_on == 1;
  }
  if (IsSet(kJoinsAfterVariable)) {
    absl::StatusOr<int> after = IntVariable(kJoinsAfterVariable, 0, 1 << 20, kLauncherOnly);
    if (!after.ok()) return after.status();
    if (!env.survivors_go_on) {
      return absl::InvalidArgumentError(absl::StrCat(
          kJoinsAfterVariable, " is set but ", kSurvivorsGoOnVariable,
          "=1 is not: a replacement joins survivors that go on"));
    }
    env.joins_after_membership = *after;
  }
  if (!IsSet(kHeartbeatVariable)) return absl::OkStatus();
  absl::StatusOr<int> interval = IntVariable(kHeartbeatVariable, 1, 3600 * 1000, kLauncherOnly);
  if (!interval.ok()) return interval.status();
  if (!env.launcher_hosts_store) {
    return absl::InvalidArgumentError(absl::StrCat(
        kHeartbeatVariable, " is set but ", kLauncherStoreVariable,
        "=1 is not: the heartbeat goes to the launcher's store"));
  }
  env.heartbeat_interval_ms = *interval;
  return absl::OkStatus();
}

// A rank of an mpirun job: OMPI_COMM_WORLD_*, and MASTER_ADDR/MASTER_PORT
// when the user gives them (else rank 0 shares its store's over MPI).
absl::StatusOr<DistributedEnv> MpirunEnv() {
  constexpr char kMpirunCompanions[] =
      " is not set (OMPI_COMM_WORLD_RANK is: mpirun sets OMPI_COMM_WORLD_SIZE "
      "and OMPI_COMM_WORLD_LOCAL_RANK)";
  DistributedEnv env;
  env.under_mpirun = true;
  env.world_size_variable = "OMPI_COMM_WORLD_SIZE";
  absl::StatusOr<int> world =
      IntVariable("OMPI_COMM_WORLD_SIZE", 1, 1 << 20, kMpirunCompanions);
  if (!world.ok()) return world.status();
  env.world_size = *world;
  absl::Status ranks = ReadRankAndLocalRank("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                            kMpirunCompanions, env);
  if (!ranks.ok()) return ranks;
  if (IsSet("MASTER_ADDR")) env.master_addr = std::getenv("MASTER_ADDR");
  if (!IsSet("MASTER_PORT")) {
    env.store_address_over_mpi = true;
    return env;
  }
  absl::StatusOr<int> port = IntVariable("MASTER_PORT", 1, 65535);
  if (!port.ok()) return port.status();
  env.master_port = *port;
  return env;
}

// A task of an srun step: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, the
// store on SLURM_JOB_NODELIST's first host (or MASTER_ADDR).
absl::StatusOr<DistributedEnv> SlurmEnv() {
  constexpr char kSlurmCompanions[] =
      " is not set (SLURM_PROCID and SLURM_STEP_ID are: srun sets SLURM_NTASKS, "
      "SLURM_LOCALID, SLURM_JOB_NODELIST and SLURM_JOB_ID for every task)";
  DistributedEnv env;
  env.world_size_variable = "SLURM_NTASKS";
  absl::StatusOr<int> world = IntVariable("SLURM_NTASKS", 1, 1 << 20, kSlurmCompanions);
  if (!world.ok()) return world.status();
  env.world_size = *world;
  if (IsSet("SLURM_STEP_NUM_TASKS")) {
    absl::StatusOr<int> step = IntVariable("SLURM_STEP_NUM_TASKS", 1, 1 << 20);
    if (!step.ok()) return step.status();
    if (*step != env.world_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "SLURM_STEP_NUM_TASKS=", *step, " but SLURM_NTASKS=", env.world_size,
          ": the Slurm environment disagrees with itself on the number of tasks"));
    }
  }
  absl::Status ranks =
      ReadRankAndLocalRank("SLURM_PROCID", "SLURM_LOCALID", kSlurmCompanions, env);
  if (!ranks.ok()) {
    return absl::Status(ranks.code(), absl::StrCat(ranks.message(), " (SLURM_NTASKS=",
                                                   env.world_size, ")"));
  }
  if (IsSet("MASTER_ADDR")) {
    env.master_addr = std::getenv("MASTER_ADDR");
  } else {
    if (!IsSet("SLURM_JOB_NODELIST")) {
      return absl::InvalidArgumentError(absl::StrCat("SLURM_JOB_NODELIST", kSlurmCompanions,
                                                     "; or set MASTER_ADDR"));
    }
    absl::StatusOr<std::string> host =
        FirstSlurmHost(std::getenv("SLURM_JOB_NODELIST"), "SLURM_JOB_NODELIST");
    if (!host.ok()) return host.status();
    env.master_addr = *host;
  }
  if (IsSet("MASTER_PORT")) {
    absl::StatusOr<int> port = IntVariable("MASTER_PORT", 1, 65535);
    if (!port.ok()) return port.status();
    env.master_port = *port;
    return env;
  }
  absl::StatusOr<int> job = IntVariable("SLURM_JOB_ID", 0, 1 << 30, kSlurmCompanions);
  if (!job.ok()) return job.status();
  absl::StatusOr<int> step = IntVariable("SLURM_STEP_ID", 0, 1 << 30, kSlurmCompanions);
  if (!step.ok()) return step.status();
  env.master_port = 20000 + static_cast<int>((7LL * *job + *step) % 10000);
  return env;
}

}  // namespace

absl::StatusOr<std::string> FirstSlurmHost(const std::string& hostlist,
                                           const std::string& variable) {
  std::string host;
  int depth = 0;
  bool in_first_range = false;  // inside brackets, before the first ',' or '-'
  for (char c : hostlist) {
    if (c == '[') {
      if (depth++ > 0) break;
      in_first_range = true;
      continue;
    }
    if (c == ']') {
      if (--depth < 0) break;
      continue;
    }
    if (depth == 0 && c == ',') break;
    if (depth > 0) {
      if (c == ',' || c == '-') in_first_range = false;
      if (in_first_range) host.push_back(c);
      continue;
    }
    host.push_back(c);
  }
  if (depth != 0 || host.empty() || host.find_first_of("[]") != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        variable, "=", hostlist, " is not a Slurm hostlist whose first host can be read"));
  }
  return host;
}

absl::StatusOr<std::optional<DistributedEnv>> DistributedEnvFromEnvironment() {
  if (std::getenv("RANK") == nullptr) {
    if (IsSet("OMPI_COMM_WORLD_RANK")) return MpirunEnv();
    if (IsSet("SLURM_PROCID") && IsSet("SLURM_STEP_ID")) return SlurmEnv();
    return std::nullopt;
  }
  DistributedEnv env;
  absl::StatusOr<int> world = IntVariable("WORLD_SIZE", 1, 1 << 20);
  if (!world.ok()) return world.status();
  env.world_size = *world;
  absl::StatusOr<int> rank = IntVariable("RANK", 0, env.world_size - 1);
  if (!rank.ok()) return rank.status();
  env.rank = *rank;
  if (std::getenv("LOCAL_RANK") != nullptr) {
    absl::StatusOr<int> local = IntVariable("LOCAL_RANK", 0, env.world_size - 1);
    if (!local.ok()) return local.status();
    env.local_rank = *local;
  } else {
    env.local_rank = env.rank;
  }
  const char* addr = std::getenv("MASTER_ADDR");
  if (addr == nullptr || *addr == '\0') {
    return absl::InvalidArgumentError(
        "MASTER_ADDR is not set (RANK is: set all of RANK, WORLD_SIZE, "
        "MASTER_ADDR, MASTER_PORT)");
  }
  env.master_addr = addr;
  absl::StatusOr<int> port = IntVariable("MASTER_PORT", 1, 65535);
  if (!port.ok()) return port.status();
  env.master_port = *port;
  if (absl::Status s = ReadLauncherVariables(env); !s.ok()) return s;
  return env;
}

std::vector<std::string> ToEnvironmentEntries(const DistributedEnv& env) {
  std::vector<std::string> entries = {
      absl::StrCat("RANK=", env.rank),
      absl::StrCat("WORLD_SIZE=", env.world_size),
      absl::StrCat("LOCAL_RANK=", env.local_rank),
      absl::StrCat("MASTER_ADDR=", env.master_addr),
      absl::StrCat("MASTER_PORT=", env.master_port),
  };
  if (env.launcher_hosts_store) entries.push_back(absl::StrCat(kLauncherStoreVariable, "=1"));
  if (env.heartbeat_interval_ms > 0) {
    entries.push_back(absl::StrCat(kHeartbeatVariable, "=", env.heartbeat_interval_ms));
  }
  if (env.survivors_go_on) entries.push_back(absl::StrCat(kSurvivorsGoOnVariable, "=1"));
  if (env.joins_after_membership >= 0) {
    entries.push_back(absl::StrCat(kJoinsAfterVariable, "=", env.joins_after_membership));
  }
  return entries;
}

int ElasticRestartCount() {
  const char* text = std::getenv("TORCHELASTIC_RESTART_COUNT");
  int count = 0;
  return text != nullptr && absl::SimpleAtoi(text, &count) && count > 0 ? count : 0;
}

}  // namespace receipt_parity

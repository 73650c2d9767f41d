#include "runtime/distributed_env.h"

#include <cstdlib>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace receipt_parity {
namespace {

absl::StatusOr<int> IntVariable(const char* name, int min, int max) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " is not set (RANK is: set all of RANK, WORLD_SIZE, "
                           "MASTER_ADDR, MASTER_PORT)"));
  }
  int parsed = 0;
  if (!absl::SimpleAtoi(value, &parsed) || parsed < min || parsed > max) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, "=", value, " is not an integer in [", min, ", ", max, "]"));
  }
  return parsed;
}

}  // namespace

absl::StatusOr<std::optional<DistributedEnv>> DistributedEnvFromEnvironment() {
  if (std::getenv("RANK") == nullptr) return std::nullopt;
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
  return env;
}

std::vector<std::string> ToEnvironmentEntries(const DistributedEnv& env) {
  return {
      absl::StrCat("RANK=", env.rank),
      absl::StrCat("WORLD_SIZE=", env.world_size),
      absl::StrCat("LOCAL_RANK=", env.local_rank),
      absl::StrCat("MASTER_ADDR=", env.master_addr),
      absl::StrCat("MASTER_PORT=", env.master_port),
  };
}

int ElasticRestartCount() {
  const char* text = std::getenv("TORCHELASTIC_RESTART_COUNT");
  int count = 0;
  return text != nullptr && absl::SimpleAtoi(text, &count) && count > 0 ? count : 0;
}

}  // namespace receipt_parity

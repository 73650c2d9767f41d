#include "runtime/cpu_pinning.h"

#include <sched.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace receipt_parity {

absl::StatusOr<std::vector<int>> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) {
    return absl::InternalError(
        absl::StrCat("sched_getaffinity: ", std::strerror(errno)));
  }
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

std::optional<int> CpuForRank(const std::vector<int>& cpus, int rank, int world_size) {
  if (static_cast<int>(cpus.size()) < world_size) return std::nullopt;
  return cpus[rank];
}

int PinSelfToCpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0 ? 0 : errno;
}

std::string DescribePinning(const std::vector<int>& cpus, int world_size) {
  if (static_cast<int>(cpus.size()) < world_size) {
    return absl::StrCat("ranks not pinned: ", cpus.size(), " CPU(s) for ", world_size,
                        " ranks");
  }
  std::vector<std::string> pins;
  for (int rank = 0; rank < world_size; ++rank) {
    pins.push_back(absl::StrCat("rank ", rank, " -> CPU ", cpus[rank]));
  }
  return absl::StrCat("ranks pinned: ", absl::StrJoin(pins, ", "));
}

}  // namespace receipt_parity

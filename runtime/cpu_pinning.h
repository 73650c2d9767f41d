// Ranks on their own cores: which CPU a local rank is pinned to.
//
// A launcher that starts W ranks on one host pins rank r to the r-th CPU of
// its own affinity mask when the mask holds at least W CPUs, so two ranks
// never share a core and no rank migrates between cores; with fewer CPUs
// than ranks nobody is pinned (the scheduler spreads them).
#ifndef RECEIPT_PARITY_RUNTIME_CPU_PINNING_H_
#define RECEIPT_PARITY_RUNTIME_CPU_PINNING_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace receipt_parity {

// The CPUs the calling thread may run on (sched_getaffinity), ascending.
// Internal with errno's text if the call fails.
absl::StatusOr<std::vector<int>> AllowedCpus();

// The CPU of local rank `rank` of `world_size`: cpus[rank] when
// cpus.size() >= world_size, else none. REQUIRES: 0 <= rank < world_size.
std::optional<int> CpuForRank(const std::vector<int>& cpus, int rank, int world_size);

// Pins the calling thread (between fork and exec: the whole new process) to
// `cpu`. One system call, so it is safe in a forked child. Returns 0, or
// the errno of sched_setaffinity.
int PinSelfToCpu(int cpu);

// "ranks pinned: rank 0 -> CPU 0, rank 1 -> CPU 1" or "ranks not pinned:
// 1 CPU for 2 ranks", for the launcher's log.
std::string DescribePinning(const std::vector<int>& cpus, int world_size);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_RUNTIME_CPU_PINNING_H_

#include "collectives/local_process_group.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <thread>
#include <vector>

#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "collectives/gloo_process_group.h"

#include "absl/strings/str_cat.h"
#include "collectives/collective_error.h"

namespace receipt_parity {

absl::Status RunOnLocalGroup(int world_size, const LocalRankBody& body,
                             absl::Duration timeout) {
  return RunOnLocalGroupWithStore(
      world_size,
      [&body](int rank, c10d::Store&, c10d::ProcessGroup& group) {
        return body(rank, group);
      },
      timeout);
}

absl::Status RunOnLocalGroupWithStore(int world_size,
                                      const LocalRankBodyWithStore& body,
                                      absl::Duration timeout) {
  if (world_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("local process group: world size must be >= 1, got ",
                     world_size));
  }
  if (timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("local process group: timeout must be positive, got ",
                     absl::FormatDuration(timeout)));
  }
  const std::chrono::milliseconds timeout_ms(
      std::max<int64_t>(1, absl::ToInt64Milliseconds(timeout)));
  c10::intrusive_ptr<c10d::Store> store;
  try {
    store = c10::make_intrusive<c10d::HashStore>();
    store->setTimeout(timeout_ms);
  } catch (const std::exception& e) {
    return CollectiveErrorToStatus(e, "local process group: store");
  }

  // The groups outlive every rank's body: a rank that finishes first must
  // not tear its connections down under a peer still in a collective.
  std::vector<c10::intrusive_ptr<c10d::ProcessGroup>> groups(world_size);
  std::vector<absl::Status> statuses(world_size);
  std::vector<std::thread> threads;
  threads.reserve(world_size);
  for (int rank = 0; rank < world_size; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        groups[rank] = MakeGlooProcessGroup(
            store, rank, world_size, timeout_ms,
            c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      } catch (const std::exception& e) {
        statuses[rank] =
            CollectiveErrorToStatus(e, "creating the Gloo process group");
        return;
      }
      try {
        statuses[rank] = body(rank, *store, *groups[rank]);
      } catch (const std::exception& e) {
        statuses[rank] = CollectiveErrorToStatus(e, "rank body");
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  groups.clear();

  int failed = 0;
  int first = -1;
  for (int rank = 0; rank < world_size; ++rank) {
    if (statuses[rank].ok()) continue;
    ++failed;
    if (first < 0) first = rank;
  }
  if (first < 0) return absl::OkStatus();
  return absl::Status(
      statuses[first].code(),
      absl::StrCat("rank ", first, " of ", world_size, ": ",
                   statuses[first].message(),
                   failed > 1 ? absl::StrCat(" (", failed, " ranks failed)")
                              : ""));
}

}  // namespace receipt_parity

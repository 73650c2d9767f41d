// A REAL c10d ProcessGroupGloo whose ranks are threads of this process, for
// tests and for the one-process (simulated) parity check.
//
// Each rank runs `body` on its own thread with its own ProcessGroupGloo;
// the groups rendezvous through one in-memory c10d::HashStore and talk
// over Gloo's TCP transport on 127.0.0.1. The collectives are c10d's and
// Gloo's own code: only the processes are simulated.
//
// Thread safety: RunOnLocalGroup may be called from any thread; each call
// makes its own store and groups. `body` runs concurrently on world_size
// threads: anything it shares across ranks must be synchronised by the
// caller (a rank's own tensors need nothing).
#ifndef RECEIPT_PARITY_COLLECTIVES_LOCAL_PROCESS_GROUP_H_
#define RECEIPT_PARITY_COLLECTIVES_LOCAL_PROCESS_GROUP_H_

#include <functional>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace c10d {
class ProcessGroup;
class Store;
}  // namespace c10d

namespace receipt_parity {

using LocalRankBody =
    std::function<absl::Status(int rank, c10d::ProcessGroup& group)>;
// A rank's body that also uses the store the groups rendezvoused through,
// as a real rank uses its TCPStore (start agreement, gathers on rank 0).
using LocalRankBodyWithStore = std::function<absl::Status(
    int rank, c10d::Store& store, c10d::ProcessGroup& group)>;

// Builds world_size ProcessGroupGloo ranks (concurrently: construction
// rendezvouses), runs body(rank, group) on each rank's thread, waits for
// all, then destroys the groups. Collectives and the rendezvous fail after
// `timeout` instead of hanging (a rank that skips a collective makes its
// peers fail with DeadlineExceeded).
//
// Returns OK if every rank's body returned OK; otherwise the status of the
// lowest failing rank, its message prefixed "rank R of W: " (and naming
// how many ranks failed). Exceptions thrown by c10d, Gloo or `body` become
// a Status (collectives/collective_error.h).
// InvalidArgument if world_size < 1 or timeout is not positive.
absl::Status RunOnLocalGroup(int world_size, const LocalRankBody& body,
                             absl::Duration timeout = absl::Seconds(30));

// RunOnLocalGroup, each rank's body also given the one in-memory store that
// every rank shares (thread-safe; reads wait up to `timeout` for a key).
absl::Status RunOnLocalGroupWithStore(int world_size,
                                      const LocalRankBodyWithStore& body,
                                      absl::Duration timeout = absl::Seconds(30));

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_COLLECTIVES_LOCAL_PROCESS_GROUP_H_

// The reducer conformance suite (reducers/gradient_reducer.h's contract),
// on real process groups: the suite starts its own binary as 2 and then 3
// rank processes over one c10d Gloo group and checks
//
//   sum           every rank's reduced buckets are the SUM of the ranks'
//                 gradients (float64 reference, relative tolerance 1e-6 of
//                 the summed magnitudes), for the reducer's own bucket plan
//                 and for uneven buckets (a 1 KiB cap: buckets of 1 to 4099
//                 elements), over two updates with one reducer, the second
//                 with a rank that passes zeros (no accepted examples);
//   same bits     every rank holds the same bits;
//   allreduce_sum (when the plugin claims it) bitwise what allreduce_sum
//                 gives on the same buckets;
//   killed peer   a peer SIGKILLed between two updates comes back from the
//                 next reduction as Unavailable, DeadlineExceeded, Internal
//                 or Aborted within the group's timeout (plus 5 s), not a
//                 hang;
//   stopped peer  likewise for a peer that stops (SIGSTOP) for ever.
//
// A reducer of the ordered mode (chunk_slots() > 0) is checked through
// SumChunks instead: the sum of the chunk rows, the same bits on every rank
// and at every world size as on one rank.
#ifndef RECEIPT_PARITY_CONFORMANCE_REDUCER_CONFORMANCE_H_
#define RECEIPT_PARITY_CONFORMANCE_REDUCER_CONFORMANCE_H_

#include <chrono>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "conformance/rank_processes.h"
#include "conformance/suite_report.h"
#include "plugins/plugin_selection.pb.h"

namespace receipt_parity {

struct ReducerSuiteOptions {
  PluginSelection selection;
  // Check bitwise equality with allreduce_sum.
  bool bitwise_allreduce_sum = false;
  // The process group's timeout (every collective's).
  std::chrono::seconds timeout{5};
  // Where the ranks write their results (one folder per scenario in it).
  std::string work_folder;
  RankCommand rank_command;
};

// The suite. Errors (not findings): the selection does not make a reducer,
// the ranks cannot be started.
absl::StatusOr<SuiteReport> RunReducerSuite(const ReducerSuiteOptions& options);

// One rank of `scenario` ("sum", "killed_peer", "stopped_peer"), started by
// RunReducerSuite with the torchrun environment: connects, reduces, writes
// its RankResult to `folder`.
absl::Status RunReducerRank(const ReducerSuiteOptions& options, const std::string& scenario,
                            const std::string& folder);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CONFORMANCE_REDUCER_CONFORMANCE_H_

// Who the straggler is: each rank's arrival at the gradient reduction
// relative to the first rank to arrive, per update, from the ranks' own
// waits in the reducer.
//
// A blocking all-reduce returns on every rank at about the same moment, so a
// rank that arrived d seconds after the first waited about d seconds less:
//   lateness_r(u) = max over ranks q of wait_q(u)  -  wait_r(u).
// No clock is compared across ranks (hosts need not agree on the time).
#ifndef RECEIPT_PARITY_ARTIFACTS_STRAGGLER_SUMMARY_H_
#define RECEIPT_PARITY_ARTIFACTS_STRAGGLER_SUMMARY_H_

#include <vector>

#include "artifacts/run_summary.pb.h"

namespace receipt_parity {

// What RunSummary.lateness_method says.
inline constexpr char kLatenessMethod[] =
    "per timed update, a rank's lateness is the longest wait any rank had in "
    "the gradient reduction minus its own wait (a blocking all-reduce ends on "
    "every rank together, so the rank that came last waited least); no clock "
    "is compared across ranks";

// lateness[r][u]: rank r's lateness (the file comment) in the u-th update
// every rank timed (RankTiming.sync_seconds), for `timings` in rank order.
std::vector<std::vector<double>> LatenessPerUpdate(
    const std::vector<const RankTiming*>& timings);

// Per rank, in rank order, over the updates every rank timed
// (RankTiming.sync_seconds): how often it was last (ties go to the lower
// rank; an update where every rank waited alike has no last rank), and the
// median and p90 (nearest rank) of its lateness. Empty for fewer than two
// ranks.
std::vector<RankLateness> SummarizeLateness(const std::vector<RankReport>& reports);

// The rank most often last (ties: the lower rank); -1 for an empty summary
// or no timed update.
int StragglerRank(const std::vector<RankLateness>& lateness);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_ARTIFACTS_STRAGGLER_SUMMARY_H_

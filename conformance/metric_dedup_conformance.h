// The metric dedup conformance suite (metrics/metric_dedup.h): validation
// predictions gathered from three ranks, where DistributedSampler's
// padding repeats receipts on a second rank:
//
//   once          every receipt id counted exactly once; duplicates_dropped
//                 is what was gathered less the distinct ids;
//   order         counted sorted by (receipt id, rank, slot), whatever
//                 order the predictions were gathered in;
//   first copy    (a plugin that streams, StreamedMergeChunk > 0) the copy
//                 counted is the first in (rank, slot) order;
//   disagreement  copies of one id that disagree are FailedPrecondition
//                 naming the id;
//   edges         nothing gathered counts nothing; without duplicates all
//                 are counted and none dropped.
//
// The gather itself is the harness's (trainer/validation.h); the plugin
// sees the gathered predictions, so the ranks here are the predictions'
// `rank` fields.
#ifndef RECEIPT_PARITY_CONFORMANCE_METRIC_DEDUP_CONFORMANCE_H_
#define RECEIPT_PARITY_CONFORMANCE_METRIC_DEDUP_CONFORMANCE_H_

#include "absl/status/statusor.h"
#include "conformance/suite_report.h"
#include "plugins/plugin_selection.pb.h"

namespace receipt_parity {

absl::StatusOr<SuiteReport> RunMetricDedupSuite(const PluginSelection& selection);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CONFORMANCE_METRIC_DEDUP_CONFORMANCE_H_

// The loss weighting conformance suite (weighting/loss_weighting.h): the
// effective-batch rule. Over 60 random updates (1 to 23 slots, masked
// tails, updates without a valid slot) each is split over 1 to 4 ranks
// (DistributedSampler's stride) and 1 to 3 micro-batches per rank:
//
//   well formed   one weight per slot, finite and >= 0, zero for a masked
//                 slot; a rank without valid slots, and an update without
//                 any, weighs nothing;
//   one worker    every slot weighs what it weighs when one worker holds
//                 the whole update in one micro-batch (relative 1e-12):
//                 the split does not change the update's loss;
//   declared      split_independent() says so;
//   deterministic the same weights twice.
//
// Weighting costs no communication (every input is in the epoch plan every
// rank holds), so the ranks of a split are the plugin's `rank` argument,
// not processes.
#ifndef RECEIPT_PARITY_CONFORMANCE_LOSS_WEIGHTING_CONFORMANCE_H_
#define RECEIPT_PARITY_CONFORMANCE_LOSS_WEIGHTING_CONFORMANCE_H_

#include "absl/status/statusor.h"
#include "conformance/suite_report.h"
#include "plugins/plugin_selection.pb.h"

namespace receipt_parity {

absl::StatusOr<SuiteReport> RunLossWeightingSuite(const PluginSelection& selection);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CONFORMANCE_LOSS_WEIGHTING_CONFORMANCE_H_

// What an epoch plan does to the data, per rank: accepted examples, masked
// slots, duplicates. Pure functions of the plan (no communication).
#ifndef RECEIPT_PARITY_ARTIFACTS_EPOCH_ACCOUNTING_H_
#define RECEIPT_PARITY_ARTIFACTS_EPOCH_ACCOUNTING_H_

#include <vector>

#include "samplers/epoch_plan.h"
#include "artifacts/run_summary.pb.h"
#include "weighting/loss_weighting.h"

namespace receipt_parity {

// One record per rank. A valid slot is a duplicate when the same dataset
// index already had a valid slot earlier in the epoch (earlier update, or
// the same update on a lower rank or earlier slot).
// Counts updates [first_update, end_update) (a run that resumed mid-epoch
// or stopped early); duplicates only within that range.
std::vector<EpochRankRecord> AccountEpoch(const EpochPlan& plan,
                                          int64_t first_update,
                                          int64_t end_update);

// The update as the loss weighting sees it: every rank's (label, valid,
// micro-batch), cut into `micro_batches` micro-batches per rank
// (samplers/micro_batches.h). labels: by dataset index.
UpdateComposition ComposeUpdate(const EpochPlan& plan, int64_t update,
                                const std::vector<int>& labels,
                                const std::vector<int64_t>& class_counts,
                                int micro_batches = 1);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_ARTIFACTS_EPOCH_ACCOUNTING_H_

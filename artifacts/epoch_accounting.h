// What an epoch plan does to the data, per rank: accepted examples, masked
// slots, duplicates. Pure functions of the plan (no communication).
#ifndef RECEIPT_PARITY_ARTIFACTS_EPOCH_ACCOUNTING_H_
#define RECEIPT_PARITY_ARTIFACTS_EPOCH_ACCOUNTING_H_

#include <vector>

#include "samplers/epoch_plan.h"
#include "artifacts/run_summary.pb.h"

namespace receipt_parity {

// One record per rank. A valid slot is a duplicate when the same dataset
// index already had a valid slot earlier in the epoch (earlier update, or
// the same update on a lower rank or earlier slot).
// Counts updates [first_update, end_update) (a run that resumed mid-epoch
// or stopped early); duplicates only within that range.
std::vector<EpochRankRecord> AccountEpoch(const EpochPlan& plan,
                                          int64_t first_update,
                                          int64_t end_update);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_ARTIFACTS_EPOCH_ACCOUNTING_H_

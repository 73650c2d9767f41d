#include "artifacts/epoch_accounting.h"

#include <algorithm>
#include <unordered_set>

#include "samplers/micro_batches.h"

namespace receipt_parity {

std::vector<EpochRankRecord> AccountEpoch(const EpochPlan& plan,
                                          int64_t first_update,
                                          int64_t end_update) {
  const int world = plan.world_size();
  const int64_t begin = std::max<int64_t>(0, first_update);
  const int64_t end = std::min(end_update, plan.num_updates());
  std::vector<EpochRankRecord> records(world);
  std::unordered_set<int64_t> seen;
  for (int r = 0; r < world; ++r) {
    records[r].set_epoch(static_cast<int32_t>(plan.epoch()));
    records[r].set_rank(r);
    records[r].set_updates(static_cast<int32_t>(std::max<int64_t>(0, end - begin)));
  }
  for (int64_t u = begin; u < end; ++u) {
    for (int r = 0; r < world; ++r) {
      for (const Slot& slot : plan.UpdateSlots(r, u)) {
        EpochRankRecord& rec = records[r];
        rec.set_slots(rec.slots() + 1);
        if (!slot.valid) {
          rec.set_masked_slots(rec.masked_slots() + 1);
          continue;
        }
        rec.set_accepted_examples(rec.accepted_examples() + 1);
        if (!seen.insert(slot.dataset_index).second) {
          rec.set_duplicate_slots(rec.duplicate_slots() + 1);
        }
      }
    }
  }
  return records;
}

}  // namespace receipt_parity

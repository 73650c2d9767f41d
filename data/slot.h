// One place in an update's batch: which example, and whether it counts.
// Sampler policies (samplers/epoch_plan.h) deal slots to ranks; a run's
// example source (data/example_source.h) turns them into tensors.
#ifndef RECEIPT_PARITY_DATA_SLOT_H_
#define RECEIPT_PARITY_DATA_SLOT_H_

#include <cstdint>

namespace receipt_parity {

struct Slot {
  int64_t dataset_index = 0;
  // false for a masked pad slot: it is computed but weighs zero.
  bool valid = true;

  bool operator==(const Slot& other) const {
    return dataset_index == other.dataset_index && valid == other.valid;
  }
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_DATA_SLOT_H_

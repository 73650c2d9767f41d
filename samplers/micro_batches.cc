#include "samplers/micro_batches.h"

#include <algorithm>

#include "logging/glog.h"

namespace receipt_parity {
namespace {

int64_t MicroBatchSize(int local_batch, int micro_batches) {
  CHECK(micro_batches >= 1 && local_batch % micro_batches == 0)
      << "local batch " << local_batch << " does not cut into " << micro_batches
      << " micro-batches";
  return local_batch / micro_batches;
}

}  // namespace

int MicroBatchOf(int64_t slot_index, int local_batch, int micro_batches) {
  const int64_t size = MicroBatchSize(local_batch, micro_batches);
  return size == 0 ? 0 : static_cast<int>(slot_index / size);
}

std::pair<int64_t, int64_t> MicroBatchRange(int micro_batch, int64_t slots_in_update,
                                            int local_batch, int micro_batches) {
  const int64_t size = MicroBatchSize(local_batch, micro_batches);
  const int64_t begin = std::min(slots_in_update, micro_batch * size);
  const int64_t end = std::min(slots_in_update, (micro_batch + 1) * size);
  return {begin, end};
}

}  // namespace receipt_parity

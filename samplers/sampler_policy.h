// Sampler policy plugins: decide one epoch's global order (see
// samplers/epoch_plan.h for how it is dealt to ranks and updates).
//
// Built-ins: duplicate_pad (torch.utils.data.DistributedSampler,
// drop_last=False), masked_tail (same order, pad slots valid=false),
// drop_tail (drop_last=True), and global_batches (samplers/global_batches.h:
// updates that do not depend on the world size).
#ifndef RECEIPT_PARITY_SAMPLERS_SAMPLER_POLICY_H_
#define RECEIPT_PARITY_SAMPLERS_SAMPLER_POLICY_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "samplers/epoch_plan.h"

namespace receipt_parity {

struct OrderRequest {
  int64_t num_examples = 0;
  int world_size = 1;
  // DistributedSampler's seed; the epoch's generator is seeded seed + epoch
  // (set_epoch).
  uint64_t seed = 0;
  int64_t epoch = 0;
  // Slots per update over all ranks. BuildEpochPlan sets it from the local
  // batches it deals to; a caller of Order() sets it itself.
  int64_t global_batch = 0;
};

// How often one epoch's order trains each receipt, as a policy declares it
// (SamplerPolicy::epoch_coverage): what the sampler conformance suite
// (conformance/) checks an epoch's order against.
enum class EpochCoverage {
  // Every dataset index exactly once as a valid slot; any pad slot is
  // masked (valid = false), nothing is dropped.
  kExactlyOnce,
  // Every dataset index exactly once: as a valid slot or in `dropped`,
  // never both (DistributedSampler(drop_last=True)).
  kOnceOrDropped,
  // Every dataset index at least once as a valid slot, and fewer than
  // world_size valid slots beyond one per index: the pads repeat receipts
  // (DistributedSampler(drop_last=False); with fewer receipts than ranks a
  // receipt may be repeated more than once).
  kOnceWithRepeatedPadding,
};

// "exactly_once", "once_or_dropped", "once_with_repeated_padding".
const char* EpochCoverageName(EpochCoverage coverage);

class SamplerPolicy {
 public:
  static constexpr char kKind[] = "sampler_policy";
  virtual ~SamplerPolicy() = default;

  // The epoch's global order. A pure function of the request: the same on
  // every rank and every call. InvalidArgument for num_examples < 0 or
  // world_size < 1.
  virtual absl::StatusOr<GlobalOrder> Order(const OrderRequest& request)
      const = 0;

  // Whether Order() ignores request.world_size: then the slots of every
  // update (which receipts, which are masked) are the same at any world
  // size for one global batch, however the local batches deal them.
  virtual bool world_size_independent() const { return false; }

  // How often Order() trains each receipt per epoch (above). The default
  // is the strictest, kExactlyOnce: a policy that repeats or drops
  // receipts says so.
  virtual EpochCoverage epoch_coverage() const { return EpochCoverage::kExactlyOnce; }

  // Whether every epoch's order has as many slots as the first's (a
  // function of num_examples, world_size and global_batch alone): then a
  // run's updates are counted at start from its first epoch, whatever its
  // number of epochs. False unless a policy says so: its epochs are then
  // planned one by one, as many as a start can afford
  // (trainer/update_loop.h, RunUpdateCount).
  virtual bool same_size_every_epoch() const { return false; }
};

// Order() then DealEpochPlan(). local_batch: slots per rank per update.
absl::StatusOr<EpochPlan> BuildEpochPlan(const SamplerPolicy& policy,
                                         const OrderRequest& request,
                                         const std::vector<int>& local_batch);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_SAMPLERS_SAMPLER_POLICY_H_

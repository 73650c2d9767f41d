// The global_batches sampler policy: updates that do not depend on the
// world size (issue 28). The receipts of update u of an epoch are a
// function of (seed, epoch, u, global batch) only:
//
//   the epoch's permutation (samplers/permutation.h: randperm(n) seeded
//   seed + epoch, or 0..n-1 with disable_shuffle), cut into blocks of the
//   global batch B; update u trains positions [u*B, (u+1)*B); the epoch's
//   last partial block is filled to B with masked slots (valid=false,
//   weight 0; they repeat the permutation's head, computed and never
//   counted), never padded with duplicates and never dropped.
//
// Dealing a block to ranks (samplers/epoch_plan.h) follows the local batch
// sizes, even or uneven, and changes only which rank computes which slot:
// the ids of every update, and its masked slots, are the same at world
// sizes 1, 2, 3, 4, ... (DistributedSampler's order pads to a multiple of
// the world size instead, so its last update differs with the world
// size). Every update holds exactly B slots.
// Options: GlobalBatchesOptions (samplers/sampler_options.proto).
//
// Thread safety: stateless; safe to call concurrently.
#ifndef RECEIPT_PARITY_SAMPLERS_GLOBAL_BATCHES_H_
#define RECEIPT_PARITY_SAMPLERS_GLOBAL_BATCHES_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "plugins/plugin_factory.h"
#include "samplers/distributed_order.h"
#include "samplers/epoch_plan.h"
#include "samplers/sampler_options.pb.h"
#include "samplers/sampler_policy.h"

namespace receipt_parity {

// The epoch's global order (see above). InvalidArgument for
// num_examples < 0, world_size < 1, epoch < 0 or global_batch < 1.
absl::StatusOr<GlobalOrder> GlobalBatchesOrder(const OrderRequest& request, bool shuffle);

class GlobalBatchesPolicy : public SamplerPolicy {
 public:
  explicit GlobalBatchesPolicy(bool shuffle) : shuffle_(shuffle) {}

  absl::StatusOr<GlobalOrder> Order(const OrderRequest& request) const override {
    return GlobalBatchesOrder(request, shuffle_);
  }
  bool world_size_independent() const override { return true; }
  // Padded to whole global batches, whatever the epoch's permutation.
  bool same_size_every_epoch() const override { return true; }

 private:
  const bool shuffle_;
};

class GlobalBatchesFactory final
    : public TypedFactory<SamplerPolicy, GlobalBatchesOptions>,
      public UnshuffledOptionsFactory {
 public:
  // Stable: written into manifests and audits.
  std::string name() const override { return "global_batches"; }

  std::unique_ptr<google::protobuf::Message> UnshuffledOptions() const override;

 private:
  absl::StatusOr<std::unique_ptr<SamplerPolicy>> CreateTyped(
      const GlobalBatchesOptions& options) const override;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_SAMPLERS_GLOBAL_BATCHES_H_

// The global order of torch.utils.data.DistributedSampler (PyTorch 2.11, unchanged since 1.13),
// shared by the built-in sampler policies, which differ only in the tail.
//
// For n examples on W ranks (the Python code, distributed.py):
//   permutation  randperm(n) seeded seed + epoch (samplers/permutation.h),
//                or 0..n-1 without shuffle;
//   kDuplicatePad / kMaskedTail (drop_last=False): total = ceil(n/W) * W;
//                position p >= n repeats permutation[p % n] (the head of the
//                permutation, the whole of it several times when n < W);
//                kMaskedTail marks those pad slots valid=false;
//   kDropTail (drop_last=True): total = floor(n/W) * W; the permutation's
//                last n - total indices are GlobalOrder::dropped.
// Dealt with one slot per rank per update (samplers/epoch_plan.h), rank r
// gets positions r, r+W, ... exactly as DistributedSampler(rank=r) yields.
//
// Thread safety: stateless; safe to call concurrently.
#ifndef RECEIPT_PARITY_SAMPLERS_DISTRIBUTED_ORDER_H_
#define RECEIPT_PARITY_SAMPLERS_DISTRIBUTED_ORDER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "plugins/plugin_factory.h"
#include "samplers/epoch_plan.h"
#include "samplers/sampler_policy.h"

namespace receipt_parity {

enum class TailHandling { kDuplicatePad, kMaskedTail, kDropTail };

// InvalidArgument for num_examples < 0, world_size < 1 or epoch < 0.
absl::StatusOr<GlobalOrder> DistributedSamplerOrder(const OrderRequest& request,
                                                    bool shuffle,
                                                    TailHandling tail);

// A SamplerPolicy whose Order() is DistributedSamplerOrder().
class DistributedSamplerPolicy : public SamplerPolicy {
 public:
  DistributedSamplerPolicy(bool shuffle, TailHandling tail)
      : shuffle_(shuffle), tail_(tail) {}

  absl::StatusOr<GlobalOrder> Order(
      const OrderRequest& request) const override {
    return DistributedSamplerOrder(request, shuffle_, tail_);
  }
  EpochCoverage epoch_coverage() const override;
  // DistributedSampler's size: ceil or floor of num_examples / world_size a
  // rank, whatever the epoch's permutation.
  bool same_size_every_epoch() const override { return true; }

 private:
  const bool shuffle_;
  const TailHandling tail_;
};

// A sampler factory whose options can turn shuffling off
// (DistributedSampler(shuffle=False)), for the audit tool's --no_shuffle.
class UnshuffledOptionsFactory {
 public:
  virtual ~UnshuffledOptionsFactory() = default;
  // The factory's options: defaults, but disable_shuffle = true.
  virtual std::unique_ptr<google::protobuf::Message> UnshuffledOptions() const = 0;
};

// The factory of a built-in policy: a subclass only adds its stable name().
// REQUIRES: Options has `bool disable_shuffle`.
template <typename Options, TailHandling kTail>
class DistributedSamplerFactory : public TypedFactory<SamplerPolicy, Options>,
                                  public UnshuffledOptionsFactory {
 public:
  std::unique_ptr<google::protobuf::Message> UnshuffledOptions() const override {
    auto options = std::make_unique<Options>();
    options->set_disable_shuffle(true);
    return options;
  }

 private:
  absl::StatusOr<std::unique_ptr<SamplerPolicy>> CreateTyped(
      const Options& options) const override {
    return std::make_unique<DistributedSamplerPolicy>(
        !options.disable_shuffle(), kTail);
  }
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_SAMPLERS_DISTRIBUTED_ORDER_H_

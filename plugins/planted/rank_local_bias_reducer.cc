// A planted mistake, built into libplanted_mistakes.so and kept out of the
// built-ins' list: the reducer plugin "test_rank_local_bias". It sums every
// gradient over the ranks as allreduce_sum does (one all-reduce SUM per
// bucket, after the backward pass), except one bias: the first
// one-dimensional gradient in the trainer's layout that is not the
// layout's last (the last bucket carries the every-update checks' reports). That bias gets a bucket of its own,
// which this reducer leaves as the rank's backward left it, so each rank
// updates the bias with its own gradient: the mistake of a hand-written
// reducer that forgets a parameter. The study's planted_mistakes stage
// shows which verdict catches it.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "absl/status/status.h"
#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"
#include "plugins/planted/planted_options.pb.h"
#include "reducers/allreduce_sum_reducer.h"
#include "reducers/gradient_reducer.h"

namespace receipt_parity {
namespace {

constexpr char kName[] = "test_rank_local_bias";

// The index of the bias left rank-local, or -1 when no gradient but the
// last is one-dimensional.
int RankLocalBias(const std::vector<at::Tensor>& gradients) {
  for (int i = 0; i + 1 < static_cast<int>(gradients.size()); ++i) {
    if (gradients[i].dim() == 1) return i;
  }
  return -1;
}

GradientBucket Bucket(const std::vector<at::Tensor>& gradients, int begin, int end) {
  GradientBucket bucket{begin, end, 0};
  for (int i = begin; i < end; ++i) {
    bucket.bytes += gradients[i].numel() * gradients[i].element_size();
  }
  return bucket;
}

class RankLocalBiasReducer : public GradientReducer {
 public:
  explicit RankLocalBiasReducer(AllreduceSumReducer sum) : sum_(std::move(sum)) {}

  // Up to three buckets: the gradients before the bias, the bias alone,
  // the gradients after it (the layout's last among them).
  std::vector<GradientBucket> PlanBuckets(
      const std::vector<at::Tensor>& gradients) const override {
    const int n = static_cast<int>(gradients.size());
    const int bias = RankLocalBias(gradients);
    if (bias < 0) return {Bucket(gradients, 0, n)};
    std::vector<GradientBucket> buckets;
    if (bias > 0) buckets.push_back(Bucket(gradients, 0, bias));
    local_bucket_ = static_cast<int>(buckets.size());
    buckets.push_back(Bucket(gradients, bias, bias + 1));
    buckets.push_back(Bucket(gradients, bias + 1, n));
    return buckets;
  }

  // allreduce_sum's, but for the bias's bucket, left as it is.
  absl::Status ReduceBucket(at::Tensor& flat, c10d::ProcessGroup& group) override {
    if (next_bucket_++ == local_bucket_) return absl::OkStatus();
    return sum_.ReduceBucket(flat, group);
  }

  absl::Status FinishBuckets() override {
    next_bucket_ = 0;
    return sum_.FinishBuckets();
  }

  ReduceStats stats() const override { return sum_.stats(); }

 private:
  AllreduceSumReducer sum_;
  // PlanBuckets is const and called once, before the first update.
  mutable int local_bucket_ = -1;
  int next_bucket_ = 0;
};

class RankLocalBiasFactory
    : public TypedFactory<GradientReducer, testing::RankLocalBiasReducerOptions> {
 public:
  std::string name() const override { return kName; }

 private:
  absl::StatusOr<std::unique_ptr<GradientReducer>> CreateTyped(
      const testing::RankLocalBiasReducerOptions& /*options*/) const override {
    absl::StatusOr<AllreduceSumReducer> sum =
        AllreduceSumReducer::Create(0, /*overlap_backward=*/false);
    if (!sum.ok()) return sum.status();
    return std::make_unique<RankLocalBiasReducer>(*std::move(sum));
  }
};

PluginRegistrar<RankLocalBiasFactory, GradientReducer> registrar;

}  // namespace
}  // namespace receipt_parity

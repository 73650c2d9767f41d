// Test only: the reducer plugin "test_late_drift", linked (alwayslink) into
// //trainer:train_with_test_plugins. It is allreduce_sum (one all-reduce SUM
// per bucket, no overlap), and from the run's update `from_update` on (it
// counts the updates it reduced) it scales every reduced bucket by `scale`:
// a mistake that leaves the first update exact and shows only later, which
// the whole-run parity verdict must catch (trainer/integration/whole_run_test.py).
#include <memory>
#include <string>
#include <utility>

#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"
#include "plugins/test_options.pb.h"
#include "reducers/allreduce_sum_reducer.h"

namespace receipt_parity {
namespace {

class LateDriftReducer : public GradientReducer {
 public:
  LateDriftReducer(AllreduceSumReducer sum, int64_t from_update, double scale)
      : sum_(std::move(sum)), from_update_(from_update), scale_(scale) {}

  absl::Status ReduceBucket(at::Tensor& flat, c10d::ProcessGroup& group) override {
    if (absl::Status s = sum_.ReduceBucket(flat, group); !s.ok()) return s;
    if (updates_ >= from_update_) flat.mul_(scale_);
    return absl::OkStatus();
  }

  absl::Status FinishBuckets() override {
    ++updates_;
    return absl::OkStatus();
  }

  ReduceStats stats() const override { return sum_.stats(); }

 private:
  AllreduceSumReducer sum_;
  int64_t from_update_;
  double scale_;
  int64_t updates_ = 0;
};

class LateDriftFactory
    : public TypedFactory<GradientReducer, testing::LateDriftReducerOptions> {
 public:
  std::string name() const override { return "test_late_drift"; }

 private:
  absl::StatusOr<std::unique_ptr<GradientReducer>> CreateTyped(
      const testing::LateDriftReducerOptions& options) const override {
    absl::StatusOr<AllreduceSumReducer> sum =
        AllreduceSumReducer::Create(0, /*overlap_backward=*/false);
    if (!sum.ok()) return sum.status();
    return std::make_unique<LateDriftReducer>(*std::move(sum), options.from_update(),
                                              options.scale());
  }
};

PluginRegistrar<LateDriftFactory, GradientReducer> registrar;

}  // namespace
}  // namespace receipt_parity

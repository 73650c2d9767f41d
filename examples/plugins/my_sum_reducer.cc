// An example reducer plugin built as a shared library
// (libmy_sum_reducer.so) and loaded at start through the config's
// `plugin_library`; select it with
//
//   plugin_library: "path/to/libmy_sum_reducer.so"
//   reducer {
//     name: "my_sum"
//     options {
//       [type.googleapis.com/receipt_parity.MySumOptions] {
//         gradients_per_collective: 2
//       }
//     }
//   }
//
// `my_sum` sums every gradient over the ranks with c10d's all-reduce SUM,
// MySumOptions.gradients_per_collective consecutive gradients in each
// collective. The trainer keeps those gradients in one persistent flat
// buffer (reducers/gradient_buckets.h), so a reducer only plans the groups
// (PlanBuckets) and reduces one flat buffer in place (ReduceBucket). A sum is what the effective-batch rule needs: with
// `global_count` weighting every rank ends with the one-worker gradient.
//
// The reducer interface is reducers/gradient_reducer.h. The library depends
// on header-only targets and its own options only, so the registry it
// registers into is the host binary's (see plugins/plugin_library.h).
#include <algorithm>
#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "examples/plugins/my_sum_options.pb.h"
#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"
#include "collectives/collective_error.h"
#include "reducers/gradient_reducer.h"

namespace receipt_parity {
namespace {

constexpr char kName[] = "my_sum";

class MySumReducer : public GradientReducer {
 public:
  // 0 means all of them.
  explicit MySumReducer(int gradients_per_collective)
      : per_collective_(gradients_per_collective) {}

  // Groups of `gradients_per_collective` consecutive gradients; the
  // trainer keeps each group in one flat buffer (the gradients are views
  // into it) for the whole run.
  std::vector<GradientBucket> PlanBuckets(
      const std::vector<at::Tensor>& gradients) const override {
    const int n = static_cast<int>(gradients.size());
    const int step = per_collective_ == 0 ? n : per_collective_;
    std::vector<GradientBucket> buckets;
    for (int begin = 0; begin < n; begin += step) {
      GradientBucket bucket{begin, std::min(n, begin + step), 0};
      for (int i = bucket.begin; i < bucket.end; ++i) {
        bucket.bytes += gradients[i].numel() * gradients[i].element_size();
      }
      buckets.push_back(bucket);
    }
    return buckets;
  }

  // One all-reduce SUM of the flat buffer, in place.
  absl::Status ReduceBucket(at::Tensor& flat, c10d::ProcessGroup& group) override {
    // c10d throws; a Status leaves this function.
    try {
      std::vector<at::Tensor> buffer = {flat};
      c10d::AllreduceOptions sum;
      sum.reduceOp = c10d::ReduceOp::SUM;
      const auto start = std::chrono::steady_clock::now();
      group.allreduce(buffer, sum)->wait();
      stats_.seconds += std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - start)
                            .count();
      ++stats_.collectives;
      stats_.bytes += flat.numel() * flat.element_size();
    } catch (const std::exception& e) {
      return CollectiveErrorToStatus(
          e, absl::StrCat(kName, ": bucket of ", flat.numel(), " elements"));
    }
    return absl::OkStatus();
  }

  ReduceStats stats() const override { return stats_; }

 private:
  const int per_collective_;
  ReduceStats stats_;
};

class MySumFactory : public TypedFactory<GradientReducer, MySumOptions> {
 public:
  std::string name() const override { return kName; }

 private:
  absl::StatusOr<std::unique_ptr<GradientReducer>> CreateTyped(
      const MySumOptions& options) const override {
    if (options.gradients_per_collective() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "gradients_per_collective: must be >= 0 (0 = all in one), got ",
          options.gradients_per_collective()));
    }
    return std::make_unique<MySumReducer>(options.gradients_per_collective());
  }
};

PluginRegistrar<MySumFactory, GradientReducer> registrar;

}  // namespace
}  // namespace receipt_parity

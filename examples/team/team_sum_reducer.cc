// A team's own reducer, the one its parity_test proves (examples/team/BUILD):
// `team_sum` sums each bucket over the ranks in float64 (c10d all-reduce
// SUM of a double copy) and rounds once back to the bucket's dtype, for a
// team that wants the ranks' sum free of float32 rounding between ranks.
// Buckets are the default plan's (reducers/gradient_reducer.h).
//
//   plugin_library: "path/to/libteam_sum_reducer.so"
//   reducer { name: "team_sum" }
//
// TeamSumOptions.test_only_divide_by_world_size turns it into the DDP
// average, deliberately wrong under the effective-batch rule.
#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "collectives/collective_error.h"
#include "examples/team/team_sum_options.pb.h"
#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"
#include "reducers/gradient_reducer.h"

namespace receipt_parity {
namespace {

constexpr char kName[] = "team_sum";

class TeamSumReducer : public GradientReducer {
 public:
  explicit TeamSumReducer(bool divide_by_world_size)
      : divide_by_world_size_(divide_by_world_size) {}

  absl::Status ReduceBucket(at::Tensor& flat, c10d::ProcessGroup& group) override {
    const auto start = std::chrono::steady_clock::now();
    try {
      std::vector<at::Tensor> wide = {flat.to(at::kDouble)};
      c10d::AllreduceOptions sum;
      sum.reduceOp = c10d::ReduceOp::SUM;
      group.allreduce(wide, sum)->wait();
      if (divide_by_world_size_) wide[0].div_(group.getSize());
      flat.copy_(wide[0]);
      stats_.bytes += wide[0].numel() * wide[0].element_size();
    } catch (const std::exception& e) {
      return CollectiveErrorToStatus(
          e, absl::StrCat(kName, ": bucket of ", flat.numel(), " elements"));
    }
    ++stats_.collectives;
    stats_.seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return absl::OkStatus();
  }

  ReduceStats stats() const override { return stats_; }

 private:
  const bool divide_by_world_size_;
  ReduceStats stats_;
};

class TeamSumFactory : public TypedFactory<GradientReducer, TeamSumOptions> {
 public:
  std::string name() const override { return kName; }

 private:
  absl::StatusOr<std::unique_ptr<GradientReducer>> CreateTyped(
      const TeamSumOptions& options) const override {
    return std::make_unique<TeamSumReducer>(options.test_only_divide_by_world_size());
  }
};

PluginRegistrar<TeamSumFactory, GradientReducer> registrar;

}  // namespace
}  // namespace receipt_parity

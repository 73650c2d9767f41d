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
// MySumOptions.gradients_per_collective consecutive gradients flattened
// into each collective. A sum is what the effective-batch rule needs: with
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
#include "plugins/examples/my_sum_options.pb.h"
#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"
#include "reducers/collective_error.h"
#include "reducers/gradient_reducer.h"

namespace receipt_parity {
namespace {

constexpr char kName[] = "my_sum";

class MySumReducer : public GradientReducer {
 public:
  // 0 means all of them.
  explicit MySumReducer(int gradients_per_collective)
      : per_collective_(gradients_per_collective) {}

  absl::Status Reduce(std::vector<at::Tensor>& grads,
                      c10d::ProcessGroup& group) override {
    const size_t step = per_collective_ == 0 ? grads.size() : per_collective_;
    for (size_t begin = 0; begin < grads.size(); begin += step) {
      const size_t end = std::min(grads.size(), begin + step);
      // c10d throws; a Status leaves this function.
      try {
        SumOver(group, grads, begin, end);
      } catch (const std::exception& e) {
        return CollectiveErrorToStatus(
            e, absl::StrCat(kName, ": gradients [", begin, ", ", end, ")"));
      }
    }
    return absl::OkStatus();
  }

  ReduceStats stats() const override { return stats_; }

 private:
  // One all-reduce SUM of grads[begin, end), flattened, then split back.
  void SumOver(c10d::ProcessGroup& group, std::vector<at::Tensor>& grads,
               size_t begin, size_t end) {
    std::vector<at::Tensor> flat;
    std::vector<int64_t> sizes;
    for (size_t i = begin; i < end; ++i) {
      flat.push_back(grads[i].reshape({-1}));
      sizes.push_back(grads[i].numel());
    }
    std::vector<at::Tensor> buffer = {at::cat(flat)};
    c10d::AllreduceOptions sum;
    sum.reduceOp = c10d::ReduceOp::SUM;
    const auto start = std::chrono::steady_clock::now();
    group.allreduce(buffer, sum)->wait();
    stats_.seconds += std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - start)
                          .count();
    ++stats_.collectives;
    stats_.bytes += buffer[0].numel() * buffer[0].element_size();
    std::vector<at::Tensor> parts = buffer[0].split_with_sizes(sizes);
    for (size_t i = begin; i < end; ++i) {
      grads[i].copy_(parts[i - begin].view(grads[i].sizes()));
    }
  }

  const size_t per_collective_;
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

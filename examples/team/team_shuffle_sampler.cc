// A team's own sampler policy: `team_shuffle` shuffles the epoch with its
// own generator (a Fisher-Yates shuffle driven by SplitMix64, seeded by the
// seed and the epoch), cuts it into global batches and masks the pads of the
// last one, so every receipt is trained exactly once per epoch and the
// updates do not depend on the world size.
//
//   plugin_library: "path/to/libteam_shuffle_sampler.so"
//   sampler { name: "team_shuffle" }
//
// The kind's interface is samplers/sampler_policy.h; its conformance suite
// runs in examples/team/BUILD.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "examples/team/team_data_options.pb.h"
#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"
#include "samplers/sampler_policy.h"

namespace receipt_parity {
namespace {

constexpr char kName[] = "team_shuffle";

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

class TeamShufflePolicy : public SamplerPolicy {
 public:
  absl::StatusOr<GlobalOrder> Order(const OrderRequest& request) const override {
    if (request.num_examples < 0 || request.world_size < 1 || request.global_batch < 1 ||
        request.epoch < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          kName, ": needs num_examples >= 0, world_size >= 1, global_batch >= 1 and epoch >= 0; got ",
          request.num_examples, ", ", request.world_size, ", ", request.global_batch, ", ",
          request.epoch));
    }
    const int64_t n = request.num_examples;
    std::vector<int64_t> permutation(n);
    for (int64_t i = 0; i < n; ++i) permutation[i] = i;
    uint64_t state = request.seed * 0x100000001B3ULL + static_cast<uint64_t>(request.epoch);
    for (int64_t i = n - 1; i > 0; --i) {
      std::swap(permutation[i], permutation[SplitMix64(state) % static_cast<uint64_t>(i + 1)]);
    }
    GlobalOrder order;
    const int64_t total = (n + request.global_batch - 1) / request.global_batch * request.global_batch;
    for (int64_t p = 0; p < total; ++p) order.slots.push_back({permutation[p % n], p < n});
    return order;
  }

  bool world_size_independent() const override { return true; }
};

class TeamShuffleFactory : public TypedFactory<SamplerPolicy, TeamShuffleOptions> {
 public:
  std::string name() const override { return kName; }

 private:
  absl::StatusOr<std::unique_ptr<SamplerPolicy>> CreateTyped(
      const TeamShuffleOptions&) const override {
    return std::make_unique<TeamShufflePolicy>();
  }
};

PluginRegistrar<TeamShuffleFactory, SamplerPolicy> registrar;

}  // namespace
}  // namespace receipt_parity

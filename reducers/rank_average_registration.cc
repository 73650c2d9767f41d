// Registers `rank_average` (reducers/rank_average_reducer.h).
#include <memory>
#include <string>

#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"
#include "reducers/rank_average_reducer.h"
#include "reducers/reducer_options.pb.h"

namespace receipt_parity {
namespace {

class RankAverageFactory
    : public TypedFactory<GradientReducer, RankAverageOptions> {
 public:
  std::string name() const override { return RankAverageReducer::kName; }

 private:
  absl::StatusOr<std::unique_ptr<GradientReducer>> CreateTyped(
      const RankAverageOptions& options) const override {
    absl::StatusOr<RankAverageReducer> reducer =
        RankAverageReducer::Create(options.bucket_cap_bytes());
    if (!reducer.ok()) return reducer.status();
    return std::make_unique<RankAverageReducer>(*std::move(reducer));
  }
};

PluginRegistrar<RankAverageFactory, GradientReducer> registrar;

}  // namespace
}  // namespace receipt_parity

// Registers `rank_mean` (weighting/rank_mean_weighting.h).
#include <memory>
#include <string>

#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"
#include "weighting/loss_weighting_options.pb.h"
#include "weighting/rank_mean_weighting.h"

namespace receipt_parity {
namespace {

class RankMeanFactory : public TypedFactory<LossWeighting, RankMeanOptions> {
 public:
  std::string name() const override { return RankMeanWeighting::kName; }

 private:
  absl::StatusOr<std::unique_ptr<LossWeighting>> CreateTyped(
      const RankMeanOptions&) const override {
    return std::make_unique<RankMeanWeighting>();
  }
};

PluginRegistrar<RankMeanFactory, LossWeighting> registrar;

}  // namespace
}  // namespace receipt_parity

// Registers `micro_batch_mean` (weighting/micro_batch_mean_weighting.h).
#include <memory>
#include <string>

#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"
#include "weighting/loss_weighting_options.pb.h"
#include "weighting/micro_batch_mean_weighting.h"

namespace receipt_parity {
namespace {

class MicroBatchMeanFactory : public TypedFactory<LossWeighting, MicroBatchMeanOptions> {
 public:
  std::string name() const override { return MicroBatchMeanWeighting::kName; }

 private:
  absl::StatusOr<std::unique_ptr<LossWeighting>> CreateTyped(
      const MicroBatchMeanOptions&) const override {
    return std::make_unique<MicroBatchMeanWeighting>();
  }
};

PluginRegistrar<MicroBatchMeanFactory, LossWeighting> registrar;

}  // namespace
}  // namespace receipt_parity

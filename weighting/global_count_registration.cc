// Registers `global_count` (weighting/global_count_weighting.h).
#include <memory>
#include <string>

#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"
#include "weighting/global_count_weighting.h"
#include "weighting/loss_weighting_options.pb.h"

namespace receipt_parity {
namespace {

class GlobalCountFactory
    : public TypedFactory<LossWeighting, GlobalCountOptions> {
 public:
  std::string name() const override { return GlobalCountWeighting::kName; }

 private:
  absl::StatusOr<std::unique_ptr<LossWeighting>> CreateTyped(
      const GlobalCountOptions&) const override {
    return std::make_unique<GlobalCountWeighting>();
  }
};

PluginRegistrar<GlobalCountFactory, LossWeighting> registrar;

}  // namespace
}  // namespace receipt_parity

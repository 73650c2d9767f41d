// Registers `class_balanced` (weighting/class_balanced_weighting.h).
#include <memory>
#include <string>

#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"
#include "weighting/class_balanced_weighting.h"
#include "weighting/loss_weighting_options.pb.h"

namespace receipt_parity {
namespace {

class ClassBalancedFactory
    : public TypedFactory<LossWeighting, ClassBalancedOptions> {
 public:
  std::string name() const override { return ClassBalancedWeighting::kName; }

 private:
  absl::StatusOr<std::unique_ptr<LossWeighting>> CreateTyped(
      const ClassBalancedOptions& options) const override {
    absl::StatusOr<ClassBalancedWeighting> weighting =
        ClassBalancedWeighting::Create(
            options.has_power() ? options.power() : 1.0, options.smoothing());
    if (!weighting.ok()) return weighting.status();
    return std::make_unique<ClassBalancedWeighting>(*std::move(weighting));
  }
};

PluginRegistrar<ClassBalancedFactory, LossWeighting> registrar;

}  // namespace
}  // namespace receipt_parity

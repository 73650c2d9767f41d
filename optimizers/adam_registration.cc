// Registers `adam` (optimizers/builtin_optimizers.h).
#include <memory>
#include <string>

#include "optimizers/builtin_optimizers.h"
#include "optimizers/optimizer_options.pb.h"
#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"

namespace receipt_parity {
namespace {

class AdamFactory : public TypedFactory<OptimizerPlugin, AdamOptions> {
 public:
  std::string name() const override { return AdamOptimizer::kAdamName; }

 private:
  absl::StatusOr<std::unique_ptr<OptimizerPlugin>> CreateTyped(
      const AdamOptions& options) const override {
    absl::StatusOr<std::unique_ptr<AdamOptimizer>> optimizer = AdamOptimizer::Create(options);
    if (!optimizer.ok()) return optimizer.status();
    return std::unique_ptr<OptimizerPlugin>(*std::move(optimizer));
  }
};

PluginRegistrar<AdamFactory, OptimizerPlugin> registrar;

}  // namespace
}  // namespace receipt_parity

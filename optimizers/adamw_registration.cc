// Registers `adamw` (optimizers/builtin_optimizers.h).
#include <memory>
#include <string>

#include "optimizers/builtin_optimizers.h"
#include "optimizers/optimizer_options.pb.h"
#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"

namespace receipt_parity {
namespace {

class AdamWFactory : public TypedFactory<OptimizerPlugin, AdamWOptions> {
 public:
  std::string name() const override { return AdamOptimizer::kAdamWName; }

 private:
  absl::StatusOr<std::unique_ptr<OptimizerPlugin>> CreateTyped(
      const AdamWOptions& options) const override {
    absl::StatusOr<std::unique_ptr<AdamOptimizer>> optimizer = AdamOptimizer::Create(options);
    if (!optimizer.ok()) return optimizer.status();
    return std::unique_ptr<OptimizerPlugin>(*std::move(optimizer));
  }
};

PluginRegistrar<AdamWFactory, OptimizerPlugin> registrar;

}  // namespace
}  // namespace receipt_parity

// Registers `sgd` (optimizers/builtin_optimizers.h).
#include <memory>
#include <string>

#include "optimizers/builtin_optimizers.h"
#include "optimizers/optimizer_options.pb.h"
#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"

namespace receipt_parity {
namespace {

class SgdFactory : public TypedFactory<OptimizerPlugin, SgdOptions> {
 public:
  std::string name() const override { return SgdOptimizer::kName; }

 private:
  absl::StatusOr<std::unique_ptr<OptimizerPlugin>> CreateTyped(
      const SgdOptions& options) const override {
    absl::StatusOr<std::unique_ptr<SgdOptimizer>> optimizer = SgdOptimizer::Create(options);
    if (!optimizer.ok()) return optimizer.status();
    return std::unique_ptr<OptimizerPlugin>(*std::move(optimizer));
  }
};

PluginRegistrar<SgdFactory, OptimizerPlugin> registrar;

}  // namespace
}  // namespace receipt_parity

// Registers `none` (metrics/none_dedup.h).
#include <memory>
#include <string>

#include "metrics/metric_dedup_options.pb.h"
#include "metrics/none_dedup.h"
#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"

namespace receipt_parity {
namespace {

class NoneDedupFactory : public TypedFactory<MetricDedup, NoneDedupOptions> {
 public:
  std::string name() const override { return NoneDedup::kName; }

 private:
  absl::StatusOr<std::unique_ptr<MetricDedup>> CreateTyped(
      const NoneDedupOptions&) const override {
    return std::make_unique<NoneDedup>();
  }
};

PluginRegistrar<NoneDedupFactory, MetricDedup> registrar;

}  // namespace
}  // namespace receipt_parity

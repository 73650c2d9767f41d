// Registers `by_receipt_id` (metrics/by_receipt_id_dedup.h).
#include <memory>
#include <string>

#include "metrics/by_receipt_id_dedup.h"
#include "metrics/metric_dedup_options.pb.h"
#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"

namespace receipt_parity {
namespace {

class ByReceiptIdFactory
    : public TypedFactory<MetricDedup, ByReceiptIdOptions> {
 public:
  std::string name() const override { return ByReceiptIdDedup::kName; }

 private:
  absl::StatusOr<std::unique_ptr<MetricDedup>> CreateTyped(
      const ByReceiptIdOptions&) const override {
    return std::make_unique<ByReceiptIdDedup>();
  }
};

PluginRegistrar<ByReceiptIdFactory, MetricDedup> registrar;

}  // namespace
}  // namespace receipt_parity

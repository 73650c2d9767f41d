// Registers `by_receipt_id` (metrics/by_receipt_id_dedup.h).
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
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
      const ByReceiptIdOptions& options) const override {
    ReceiptMergeChoice choice;
    if (options.merge() == "gathered") {
      choice.merge = ReceiptMerge::kGathered;
    } else if (options.merge() == "streamed") {
      choice.merge = ReceiptMerge::kStreamed;
    } else if (!options.merge().empty() && options.merge() != "auto") {
      return absl::InvalidArgumentError(absl::StrCat(
          "merge: '", options.merge(), "' is not one of auto, gathered, streamed"));
    }
    if (options.streamed_from() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "streamed_from: ", options.streamed_from(), " must be >= 0 (0 = 100000)"));
    }
    if (options.chunk_rows() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("chunk_rows: ", options.chunk_rows(), " must be >= 0 (0 = 4096)"));
    }
    if (options.streamed_from() > 0) choice.streamed_from = options.streamed_from();
    if (options.chunk_rows() > 0) choice.chunk_rows = options.chunk_rows();
    return std::make_unique<ByReceiptIdDedup>(choice);
  }
};

PluginRegistrar<ByReceiptIdFactory, MetricDedup> registrar;

}  // namespace
}  // namespace receipt_parity

// Registers `ordered_sum` (reducers/ordered_sum_reducer.h).
#include <memory>
#include <string>

#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"
#include "reducers/ordered_sum_reducer.h"
#include "reducers/reducer_options.pb.h"

namespace receipt_parity {
namespace {

class OrderedSumFactory : public TypedFactory<GradientReducer, OrderedSumOptions> {
 public:
  std::string name() const override { return OrderedSumReducer::kName; }

 private:
  absl::StatusOr<std::unique_ptr<GradientReducer>> CreateTyped(
      const OrderedSumOptions& options) const override {
    // Unset: one slot a chunk (reducers/reducer_options.proto).
    absl::StatusOr<OrderedSumReducer> reducer =
        OrderedSumReducer::Create(options.has_chunk_slots() ? options.chunk_slots() : 1,
                                  options.bucket_cap_bytes());
    if (!reducer.ok()) return reducer.status();
    return std::make_unique<OrderedSumReducer>(*std::move(reducer));
  }
};

PluginRegistrar<OrderedSumFactory, GradientReducer> registrar;

}  // namespace
}  // namespace receipt_parity

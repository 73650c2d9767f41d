// Registers `allreduce_sum` (reducers/allreduce_sum_reducer.h).
#include <memory>
#include <string>

#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"
#include "reducers/allreduce_sum_reducer.h"
#include "reducers/reducer_options.pb.h"

namespace receipt_parity {
namespace {

class AllreduceSumFactory
    : public TypedFactory<GradientReducer, AllreduceSumOptions> {
 public:
  std::string name() const override { return AllreduceSumReducer::kName; }

 private:
  absl::StatusOr<std::unique_ptr<GradientReducer>> CreateTyped(
      const AllreduceSumOptions& options) const override {
    absl::StatusOr<AllreduceSumReducer> reducer =
        AllreduceSumReducer::Create(
            options.bucket_cap_bytes(),
            !options.has_overlap_backward() || options.overlap_backward());
    if (!reducer.ok()) return reducer.status();
    return std::make_unique<AllreduceSumReducer>(*std::move(reducer));
  }
};

PluginRegistrar<AllreduceSumFactory, GradientReducer> registrar;

}  // namespace
}  // namespace receipt_parity

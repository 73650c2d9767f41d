// Registers `mpi_allreduce`, the name configs written before backend "mpi"
// existed use: allreduce_sum (reducers/allreduce_sum_reducer.h) with its
// buckets reduced after the backward pass, as that reducer did. The
// transport is the run's backend; a config naming this reducer runs on
// backend "mpi" (config/config_loader.h), so it trains exactly as before.
#include <memory>
#include <string>

#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"
#include "reducers/allreduce_sum_reducer.h"
#include "reducers/mpi_allreduce_options.pb.h"

namespace receipt_parity {
namespace {

class MpiAllreduceFactory : public TypedFactory<GradientReducer, MpiAllreduceOptions> {
 public:
  std::string name() const override { return kMpiAllreduceName; }

 private:
  absl::StatusOr<std::unique_ptr<GradientReducer>> CreateTyped(
      const MpiAllreduceOptions& options) const override {
    absl::StatusOr<AllreduceSumReducer> reducer =
        AllreduceSumReducer::Create(options.bucket_cap_bytes(), /*overlap_backward=*/false);
    if (!reducer.ok()) return reducer.status();
    return std::make_unique<AllreduceSumReducer>(*std::move(reducer));
  }
};

PluginRegistrar<MpiAllreduceFactory, GradientReducer> registrar;

}  // namespace
}  // namespace receipt_parity

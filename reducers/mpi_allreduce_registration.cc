// Registers `mpi_allreduce` (reducers/mpi_allreduce.h).
#include <memory>
#include <string>

#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"
#include "reducers/mpi_allreduce.h"
#include "reducers/mpi_allreduce_options.pb.h"

namespace receipt_parity {
namespace {

class MpiAllreduceFactory : public TypedFactory<GradientReducer, MpiAllreduceOptions> {
 public:
  std::string name() const override { return MpiAllreduceReducer::kName; }

 private:
  absl::StatusOr<std::unique_ptr<GradientReducer>> CreateTyped(
      const MpiAllreduceOptions& options) const override {
    absl::StatusOr<MpiAllreduceReducer> reducer =
        MpiAllreduceReducer::Create(options.bucket_cap_bytes());
    if (!reducer.ok()) return reducer.status();
    return std::make_unique<MpiAllreduceReducer>(*std::move(reducer));
  }
};

PluginRegistrar<MpiAllreduceFactory, GradientReducer> registrar;

}  // namespace
}  // namespace receipt_parity

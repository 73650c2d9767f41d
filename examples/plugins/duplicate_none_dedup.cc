// A deliberately bad shared-library plugin, for plugin_library tests only:
// it registers a metric dedup plugin named `none`, which the built-in
// //metrics:none already registers, so loading it must fail loudly.
//
// Its options are google.protobuf.Empty (compiled into libprotobuf), so the
// library defines no proto of its own that could clash in the host.
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "google/protobuf/empty.pb.h"
#include "metrics/metric_dedup.h"
#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"

namespace receipt_parity {
namespace {

class ImpostorNoneFactory
    : public TypedFactory<MetricDedup, google::protobuf::Empty> {
 public:
  std::string name() const override { return "none"; }

 private:
  absl::StatusOr<std::unique_ptr<MetricDedup>> CreateTyped(
      const google::protobuf::Empty&) const override {
    return absl::UnimplementedError(
        "the test-only duplicate 'none' plugin makes nothing");
  }
};

PluginRegistrar<ImpostorNoneFactory, MetricDedup> registrar;

}  // namespace
}  // namespace receipt_parity

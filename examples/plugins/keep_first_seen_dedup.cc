// An example metric dedup plugin built as a shared library
// (libkeep_first_seen_dedup.so) and loaded at start through the config's
// `plugin_library`; select it with
//
//   plugin_library: "path/to/libkeep_first_seen_dedup.so"
//   metric_dedup {
//     name: "keep_first_seen"
//     options {
//       [type.googleapis.com/receipt_parity.KeepFirstSeenOptions] {
//         max_disagreeing_ids: 3
//       }
//     }
//   }
//
// `keep_first_seen` counts each receipt id once, keeping the first
// prediction in (rank, slot) order, and tolerates copies that disagree (up
// to KeepFirstSeenOptions.max_disagreeing_ids receipt ids, 0 = no limit).
//
// The library depends on header-only targets only: the registry it
// registers into is the host binary's, resolved at load time (the host
// links with -rdynamic). See plugins/plugin_library.h.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "metrics/first_per_receipt.h"
#include "metrics/metric_dedup.h"
#include "examples/plugins/keep_first_seen_options.pb.h"
#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"

namespace receipt_parity {
namespace {

constexpr char kName[] = "keep_first_seen";

class KeepFirstSeenDedup : public MetricDedup {
 public:
  explicit KeepFirstSeenDedup(int max_disagreeing_ids)
      : max_disagreeing_ids_(max_disagreeing_ids) {}

  absl::StatusOr<DedupResult> Dedup(
      const std::vector<Prediction>& gathered) const override {
    FirstPerReceipt first = KeepFirstPerReceiptId(gathered);
    const size_t disagreeing = first.disagreements.size();
    if (max_disagreeing_ids_ > 0 &&
        disagreeing > static_cast<size_t>(max_disagreeing_ids_)) {
      return absl::FailedPreconditionError(absl::StrCat(
          kName, ": ", disagreeing,
          " receipt ids have disagreeing copies, more than "
          "max_disagreeing_ids = ",
          max_disagreeing_ids_, ": ", JoinDisagreements(first.disagreements)));
    }
    return std::move(first.result);
  }

 private:
  const int max_disagreeing_ids_;
};

class KeepFirstSeenFactory
    : public TypedFactory<MetricDedup, KeepFirstSeenOptions> {
 public:
  std::string name() const override { return kName; }

 private:
  absl::StatusOr<std::unique_ptr<MetricDedup>> CreateTyped(
      const KeepFirstSeenOptions& options) const override {
    if (options.max_disagreeing_ids() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("max_disagreeing_ids: ", options.max_disagreeing_ids(),
                       " must be >= 0 (0 = no limit)"));
    }
    return std::make_unique<KeepFirstSeenDedup>(options.max_disagreeing_ids());
  }
};

PluginRegistrar<KeepFirstSeenFactory, MetricDedup> registrar;

}  // namespace
}  // namespace receipt_parity

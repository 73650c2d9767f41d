// An example learning-rate schedule built as a shared library
// (libinverse_sqrt_schedule.so): the transformer recipe's warmup then
// inverse square root, selected with
//
//   plugin_library: "path/to/libinverse_sqrt_schedule.so"
//   lr_schedule {
//     name: "inverse_sqrt"
//     options {
//       [type.googleapis.com/receipt_parity.InverseSqrtOptions] { warmup_updates: 4 }
//     }
//   }
//
// Factor(u) = min((u + 1) / w, sqrt(w / (u + 1))) for w = warmup_updates:
// it rises linearly to 1 at update w - 1, then falls as 1 / sqrt. Like
// every schedule (schedules/lr_schedule.h) it is a function of the update
// index alone, so a resumed run steps at bitwise the uninterrupted run's
// rate. The library depends on header-only targets and its own options.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "examples/plugins/inverse_sqrt_options.pb.h"
#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"
#include "schedules/lr_schedule.h"

namespace receipt_parity {
namespace {

class InverseSqrtSchedule : public LearningRateSchedule {
 public:
  explicit InverseSqrtSchedule(int warmup_updates) : warmup_(warmup_updates) {}

  double Factor(int64_t update) const override {
    const double step = static_cast<double>(update + 1);
    return std::min(step / warmup_, std::sqrt(warmup_ / step));
  }

  absl::Status CheckRun(int64_t total_updates) const override {
    if (warmup_ <= total_updates) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        "warmup_updates: ", warmup_, " is more than the run's ", total_updates, " updates"));
  }

 private:
  double warmup_;
};

class InverseSqrtFactory : public TypedFactory<LearningRateSchedule, InverseSqrtOptions> {
 public:
  std::string name() const override { return "inverse_sqrt"; }

 private:
  absl::StatusOr<std::unique_ptr<LearningRateSchedule>> CreateTyped(
      const InverseSqrtOptions& options) const override {
    if (options.warmup_updates() < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "warmup_updates: must be >= 1, got ", options.warmup_updates()));
    }
    return std::make_unique<InverseSqrtSchedule>(options.warmup_updates());
  }
};

PluginRegistrar<InverseSqrtFactory, LearningRateSchedule> registrar;

}  // namespace
}  // namespace receipt_parity

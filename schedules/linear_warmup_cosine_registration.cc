// Registers `linear_warmup_cosine`
// (schedules/linear_warmup_cosine_schedule.h).
#include <memory>
#include <string>
#include <utility>

#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"
#include "schedules/linear_warmup_cosine_schedule.h"
#include "schedules/schedule_options.pb.h"

namespace receipt_parity {
namespace {

class LinearWarmupCosineFactory
    : public TypedFactory<LearningRateSchedule, LinearWarmupCosineOptions> {
 public:
  std::string name() const override {
    return LinearWarmupCosineSchedule::kName;
  }

 private:
  absl::StatusOr<std::unique_ptr<LearningRateSchedule>> CreateTyped(
      const LinearWarmupCosineOptions& options) const override {
    absl::StatusOr<LinearWarmupCosineSchedule> schedule =
        LinearWarmupCosineSchedule::Create(options);
    if (!schedule.ok()) return schedule.status();
    return std::make_unique<LinearWarmupCosineSchedule>(*std::move(schedule));
  }
};

PluginRegistrar<LinearWarmupCosineFactory, LearningRateSchedule> registrar;

}  // namespace
}  // namespace receipt_parity

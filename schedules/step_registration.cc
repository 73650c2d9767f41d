// Registers `step` (schedules/step_schedule.h).
#include <memory>
#include <string>
#include <utility>

#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"
#include "schedules/schedule_options.pb.h"
#include "schedules/step_schedule.h"

namespace receipt_parity {
namespace {

class StepScheduleFactory
    : public TypedFactory<LearningRateSchedule, StepScheduleOptions> {
 public:
  std::string name() const override { return StepSchedule::kName; }

 private:
  absl::StatusOr<std::unique_ptr<LearningRateSchedule>> CreateTyped(
      const StepScheduleOptions& options) const override {
    absl::StatusOr<StepSchedule> schedule = StepSchedule::Create(options);
    if (!schedule.ok()) return schedule.status();
    return std::make_unique<StepSchedule>(*std::move(schedule));
  }
};

PluginRegistrar<StepScheduleFactory, LearningRateSchedule> registrar;

}  // namespace
}  // namespace receipt_parity

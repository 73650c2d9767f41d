// Registers `constant` (schedules/constant_schedule.h).
#include <memory>
#include <string>

#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"
#include "schedules/constant_schedule.h"
#include "schedules/schedule_options.pb.h"

namespace receipt_parity {
namespace {

class ConstantScheduleFactory
    : public TypedFactory<LearningRateSchedule, ConstantScheduleOptions> {
 public:
  std::string name() const override { return ConstantSchedule::kName; }

 private:
  absl::StatusOr<std::unique_ptr<LearningRateSchedule>> CreateTyped(
      const ConstantScheduleOptions&) const override {
    return std::make_unique<ConstantSchedule>();
  }
};

PluginRegistrar<ConstantScheduleFactory, LearningRateSchedule> registrar;

}  // namespace
}  // namespace receipt_parity

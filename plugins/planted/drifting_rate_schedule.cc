// A planted mistake, built into libplanted_mistakes.so and kept out of the
// built-ins' list: the schedule plugin "test_drifting_rate". It breaks
// schedules/lr_schedule.h's contract on purpose: it keeps a rate between
// calls, and from update `from_update` on each new update it is asked for
// multiplies that rate by `scale` (1.01: a 1 % drift an update). The run
// and its one-worker reference drift alike, so numerics cannot see it; the
// replay, which asks a fresh schedule for the factor of update K alone,
// must (trainer/integration/replay_test.py, the study's planted_mistakes stage).
#include <memory>
#include <string>

#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"
#include "plugins/planted/planted_options.pb.h"
#include "schedules/lr_schedule.h"

namespace receipt_parity {
namespace {

class DriftingRateSchedule : public LearningRateSchedule {
 public:
  DriftingRateSchedule(int64_t from_update, double scale)
      : from_update_(from_update), scale_(scale) {}

  double Factor(int64_t update) const override {
    if (update >= from_update_ && update != last_update_) rate_ *= scale_;
    last_update_ = update;
    return rate_;
  }

 private:
  int64_t from_update_;
  double scale_;
  // The state the contract forbids.
  mutable double rate_ = 1;
  mutable int64_t last_update_ = -1;
};

class DriftingRateFactory
    : public TypedFactory<LearningRateSchedule, testing::DriftingRateScheduleOptions> {
 public:
  std::string name() const override { return "test_drifting_rate"; }

 private:
  absl::StatusOr<std::unique_ptr<LearningRateSchedule>> CreateTyped(
      const testing::DriftingRateScheduleOptions& options) const override {
    return std::make_unique<DriftingRateSchedule>(options.from_update(), options.scale());
  }
};

PluginRegistrar<DriftingRateFactory, LearningRateSchedule> registrar;

}  // namespace
}  // namespace receipt_parity

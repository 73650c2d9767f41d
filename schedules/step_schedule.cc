#include "schedules/step_schedule.h"

#include <cmath>

#include "logging/glog.h"

#include "absl/strings/str_cat.h"

namespace receipt_parity {
namespace {

constexpr double kDefaultGamma = 0.1;

}  // namespace

absl::StatusOr<StepSchedule> StepSchedule::Create(
    const StepScheduleOptions& options) {
  if (!options.has_step_updates()) {
    return absl::InvalidArgumentError(
        "step_updates: required (updates between two decays), absent");
  }
  const int64_t step_updates = options.step_updates();
  if (step_updates <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("step_updates: must be > 0, got ", step_updates));
  }
  const double gamma = options.has_gamma() ? options.gamma() : kDefaultGamma;
  if (!(gamma > 0 && gamma <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("gamma: must be in (0, 1], got ", gamma));
  }
  return StepSchedule(step_updates, gamma);
}

double StepSchedule::Factor(int64_t update) const {
  CHECK_GE(update, 0) << "step: update index";
  const int64_t decays = update / step_updates_;
  return std::pow(gamma_, static_cast<double>(decays));
}

}  // namespace receipt_parity

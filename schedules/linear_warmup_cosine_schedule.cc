#include "schedules/linear_warmup_cosine_schedule.h"

#include <cmath>

#include "logging/glog.h"

#include "absl/strings/str_cat.h"

namespace receipt_parity {
namespace {

constexpr double kPi = 3.14159265358979323846;

}  // namespace

absl::StatusOr<LinearWarmupCosineSchedule> LinearWarmupCosineSchedule::Create(
    const LinearWarmupCosineOptions& options) {
  const int64_t warmup = options.warmup_updates();
  if (warmup < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("warmup_updates: must be >= 0, got ", warmup));
  }
  if (!options.has_total_updates()) {
    return absl::InvalidArgumentError(
        "total_updates: required (the update at which the cosine reaches "
        "min_factor), absent");
  }
  const int64_t total = options.total_updates();
  if (total <= warmup) {
    return absl::InvalidArgumentError(
        absl::StrCat("total_updates: must be > warmup_updates (", warmup,
                     "), got ", total));
  }
  const double min_factor = options.min_factor();
  if (!(min_factor >= 0 && min_factor <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("min_factor: must be in [0, 1], got ", min_factor));
  }
  return LinearWarmupCosineSchedule(warmup, total, min_factor);
}

double LinearWarmupCosineSchedule::Factor(int64_t update) const {
  CHECK_GE(update, 0) << "linear_warmup_cosine: update index";
  if (update < warmup_updates_) return WarmupFactor(update);
  if (update < total_updates_) return CosineFactor(update);
  return min_factor_;
}

absl::Status LinearWarmupCosineSchedule::CheckRun(int64_t total_updates) const {
  if (warmup_updates_ > total_updates) {
    return absl::InvalidArgumentError(
        absl::StrCat("warmup_updates: ", warmup_updates_,
                     " is more than the run's ", total_updates, " updates"));
  }
  return absl::OkStatus();
}

double LinearWarmupCosineSchedule::WarmupFactor(int64_t update) const {
  return static_cast<double>(update + 1) /
         static_cast<double>(warmup_updates_);
}

double LinearWarmupCosineSchedule::CosineFactor(int64_t update) const {
  const double angle = kPi * static_cast<double>(update - warmup_updates_) /
                       static_cast<double>(total_updates_ - warmup_updates_);
  return min_factor_ + (1 - min_factor_) * 0.5 * (1 + std::cos(angle));
}

}  // namespace receipt_parity

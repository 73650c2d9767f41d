// `step`: PyTorch's StepLR counted in updates: the rate is multiplied by
// gamma every step_updates updates,
//
//   Factor(u) = gamma ^ floor(u / step_updates)
//
// computed as std::pow(gamma, floor(u / step_updates)) from u alone (the
// closed form, not a running product). Options: StepScheduleOptions
// (schedules/schedule_options.proto).
//
// Thread safety: immutable after Create; Factor() is safe to call
// concurrently.
#ifndef RECEIPT_PARITY_SCHEDULES_STEP_SCHEDULE_H_
#define RECEIPT_PARITY_SCHEDULES_STEP_SCHEDULE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "schedules/lr_schedule.h"
#include "schedules/schedule_options.pb.h"

namespace receipt_parity {

class StepSchedule : public LearningRateSchedule {
 public:
  static constexpr char kName[] = "step";

  // InvalidArgument, the message starting with the option's name, unless
  // step_updates is present and > 0 and gamma (absent: 0.1) is in (0, 1]
  // (so never NaN). E.g. "step_updates: must be > 0, got 0".
  static absl::StatusOr<StepSchedule> Create(
      const StepScheduleOptions& options);

  // gamma ^ floor(update / step_updates); may underflow to 0 after very
  // many decays. REQUIRES: update >= 0 (CHECKed).
  double Factor(int64_t update) const override;

  // CheckRun: the default (every run length is served).

  int64_t step_updates() const { return step_updates_; }
  double gamma() const { return gamma_; }

 private:
  StepSchedule(int64_t step_updates, double gamma)
      : step_updates_(step_updates), gamma_(gamma) {}

  int64_t step_updates_;
  double gamma_;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_SCHEDULES_STEP_SCHEDULE_H_

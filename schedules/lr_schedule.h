// Learning-rate schedule plugins: the factor the base learning rate is
// multiplied by at each update.
//
// The learning rate of update u is base_rate * Factor(u): a function of the
// run's update index u alone (0-based, counted over the whole run, resumed
// attempts included), never of loader iterations, epochs or the world size,
// so a resumed run's first update uses bitwise the rate the uninterrupted
// run used (PyTorch's LambdaLR semantics). A schedule keeps no state between
// calls: nothing about it needs to be checkpointed.
//
// Built-ins (options: schedules/schedule_options.proto): constant,
// linear_warmup_cosine, step. Header only; no LibTorch.
//
// Thread safety: a schedule is immutable after its factory's Create;
// Factor() and CheckRun() are safe to call concurrently.
#ifndef RECEIPT_PARITY_SCHEDULES_LR_SCHEDULE_H_
#define RECEIPT_PARITY_SCHEDULES_LR_SCHEDULE_H_

#include <cstdint>

#include "absl/status/status.h"

namespace receipt_parity {

class LearningRateSchedule {
 public:
  static constexpr char kKind[] = "lr_schedule";
  virtual ~LearningRateSchedule() = default;

  // The factor of update `update`; finite, >= 0. The same `update` gives
  // bitwise the same factor, whatever was asked before.
  // REQUIRES: update >= 0 (a programmer error otherwise: CHECKed).
  virtual double Factor(int64_t update) const = 0;

  // InvalidArgument naming the option when this schedule cannot serve a run
  // of `total_updates` updates (e.g. "warmup_updates: 500 is more than the
  // run's 120 updates"). Default: OK.
  // REQUIRES: total_updates >= 0.
  virtual absl::Status CheckRun(int64_t /*total_updates*/) const {
    return absl::OkStatus();
  }
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_SCHEDULES_LR_SCHEDULE_H_

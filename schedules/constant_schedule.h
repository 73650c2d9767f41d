// `constant`: Factor(u) = 1 for every update; the base learning rate
// throughout. Options: ConstantScheduleOptions (none).
//
// Thread safety: immutable; Factor() is safe to call concurrently.
#ifndef RECEIPT_PARITY_SCHEDULES_CONSTANT_SCHEDULE_H_
#define RECEIPT_PARITY_SCHEDULES_CONSTANT_SCHEDULE_H_

#include <cstdint>

#include "schedules/lr_schedule.h"

namespace receipt_parity {

class ConstantSchedule : public LearningRateSchedule {
 public:
  static constexpr char kName[] = "constant";

  // 1. REQUIRES: update >= 0 (CHECKed).
  double Factor(int64_t update) const override;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_SCHEDULES_CONSTANT_SCHEDULE_H_

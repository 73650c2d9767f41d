#include "schedules/constant_schedule.h"

#include "logging/glog.h"

namespace receipt_parity {

double ConstantSchedule::Factor(int64_t update) const {
  CHECK_GE(update, 0) << "constant: update index";
  return 1.0;
}

}  // namespace receipt_parity

// `linear_warmup_cosine`: a linear warmup, then a cosine decay to a floor.
// With W = warmup_updates, T = total_updates, m = min_factor:
//
//   u < W:       Factor(u) = (u + 1) / W            (1/W at u = 0, 1 at W - 1)
//   W <= u < T:  Factor(u) = m + (1 - m) * 0.5 * (1 + cos(pi * (u - W) / (T - W)))
//                                                   (1 at u = W)
//   u >= T:      Factor(u) = m
//
// evaluated left to right in double precision, as written, so a reference
// implementation of the same formula gets the same bits. Options:
// LinearWarmupCosineOptions (schedules/schedule_options.proto).
//
// Thread safety: immutable after Create; Factor() and CheckRun() are safe to
// call concurrently.
#ifndef RECEIPT_PARITY_SCHEDULES_LINEAR_WARMUP_COSINE_SCHEDULE_H_
#define RECEIPT_PARITY_SCHEDULES_LINEAR_WARMUP_COSINE_SCHEDULE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "schedules/lr_schedule.h"
#include "schedules/schedule_options.pb.h"

namespace receipt_parity {

class LinearWarmupCosineSchedule : public LearningRateSchedule {
 public:
  static constexpr char kName[] = "linear_warmup_cosine";

  // InvalidArgument, the message starting with the option's name, unless
  // warmup_updates >= 0, total_updates is present and > warmup_updates, and
  // min_factor is in [0, 1] (so never NaN). E.g. "total_updates: must be >
  // warmup_updates (100), got 50".
  static absl::StatusOr<LinearWarmupCosineSchedule> Create(
      const LinearWarmupCosineOptions& options);

  // The formula above. REQUIRES: update >= 0 (CHECKed).
  double Factor(int64_t update) const override;

  // InvalidArgument "warmup_updates: W is more than the run's N updates"
  // when W > total_updates (the run's). A run shorter or longer than the
  // schedule's own total_updates is accepted: it holds min_factor at the
  // end, or stops part way down the cosine.
  absl::Status CheckRun(int64_t total_updates) const override;

  int64_t warmup_updates() const { return warmup_updates_; }
  int64_t total_updates() const { return total_updates_; }
  double min_factor() const { return min_factor_; }

 private:
  LinearWarmupCosineSchedule(int64_t warmup_updates, int64_t total_updates,
                             double min_factor)
      : warmup_updates_(warmup_updates),
        total_updates_(total_updates),
        min_factor_(min_factor) {}

  // REQUIRES: 0 <= update < warmup_updates_.
  double WarmupFactor(int64_t update) const;
  // REQUIRES: warmup_updates_ <= update < total_updates_.
  double CosineFactor(int64_t update) const;

  int64_t warmup_updates_;
  int64_t total_updates_;
  double min_factor_;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_SCHEDULES_LINEAR_WARMUP_COSINE_SCHEDULE_H_

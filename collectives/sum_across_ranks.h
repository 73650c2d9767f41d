// A sum over every rank of a process group, for the few small values the
// harness itself adds up across ranks (the whole update's loss at a checked
// update, the synchronized batch norm's statistics): c10d's all-reduce SUM,
// in place, waited for.
//
// Thread safety: as the group's; every rank of the group must call it for
// the same tensor shape at the same point (it is a collective).
#ifndef RECEIPT_PARITY_COLLECTIVES_SUM_ACROSS_RANKS_H_
#define RECEIPT_PARITY_COLLECTIVES_SUM_ACROSS_RANKS_H_

#include <functional>
#include <utility>

#include <ATen/core/Tensor.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace c10d {
class ProcessGroup;
}  // namespace c10d

namespace receipt_parity {

// Replaces `tensor` (contiguous, on the group's device) by its sum over the
// ranks. Errors: CollectiveErrorToStatus's (collectives/collective_error.h),
// "<what>: ..." (DeadlineExceeded after the group's timeout, Unavailable
// for a lost peer).
absl::Status SumAcrossRanks(c10d::ProcessGroup& group, at::Tensor& tensor,
                            absl::string_view what);

// A sum across ranks started and not waited for (StartSumAcrossRanks): the
// collective runs in the group's threads while the caller goes on.
class RankSumInFlight {
 public:
  RankSumInFlight() = default;
  explicit RankSumInFlight(std::function<absl::Status()> wait) : wait_(std::move(wait)) {}
  // Waits until the tensor holds the sum; errors as SumAcrossRanks's. A
  // second call, or one on a default-constructed sum, does nothing.
  absl::Status Wait() {
    if (!wait_) return absl::OkStatus();
    std::function<absl::Status()> wait = std::move(wait_);
    wait_ = nullptr;
    return wait();
  }

 private:
  std::function<absl::Status()> wait_;
};

// SumAcrossRanks without waiting: `tensor` must not be touched until the
// returned sum's Wait() returns. Errors of the start itself as
// SumAcrossRanks's.
absl::StatusOr<RankSumInFlight> StartSumAcrossRanks(c10d::ProcessGroup& group,
                                                    at::Tensor& tensor, absl::string_view what);

// A sum across ranks as a function: what a computation that must add up
// values over the ranks is given (a real group's SumAcrossRanks; with one
// rank, nothing to do).
using RankSum = std::function<absl::Status(at::Tensor& tensor)>;

// SumAcrossRanks over `group`, or, for nullptr, the identity.
RankSum RankSumOver(c10d::ProcessGroup* group, absl::string_view what);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_COLLECTIVES_SUM_ACROSS_RANKS_H_

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

#include <ATen/core/Tensor.h>

#include "absl/status/status.h"
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

// A sum across ranks as a function: what a computation that must add up
// values over the ranks is given (a real group's SumAcrossRanks; with one
// rank, nothing to do).
using RankSum = std::function<absl::Status(at::Tensor& tensor)>;

// SumAcrossRanks over `group`, or, for nullptr, the identity.
RankSum RankSumOver(c10d::ProcessGroup* group, absl::string_view what);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_COLLECTIVES_SUM_ACROSS_RANKS_H_

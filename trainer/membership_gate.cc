#include "trainer/membership_gate.h"

#include <exception>
#include <utility>

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "collectives/collective_error.h"
#include "collectives/sum_across_ranks.h"
#include "logging/glog.h"

namespace receipt_parity {

MembershipGate::MembershipGate(c10d::ProcessGroup* group, int rank,
                               std::function<bool()> published)
    : group_(group), rank_(rank), published_(std::move(published)) {}

absl::StatusOr<std::optional<GateStop>> MembershipGate::AfterUpdate(int64_t completed) {
  double seen = published_() ? 1 : 0;
  try {
    at::Tensor figures = at::full({1}, seen, at::kDouble);
    if (absl::Status s = SumAcrossRanks(
            *group_, figures,
            absl::StrCat("rank ", rank_, ", update ", completed, ": the membership poll"));
        !s.ok()) {
      return s;
    }
    seen = figures.item<double>();
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "the membership poll: LibTorch");
  }
  if (seen == 0) return std::optional<GateStop>();
  LOG(WARNING) << "rank " << rank_ << ": the launcher published a new membership (seen by "
               << seen << " rank(s)): every rank stops after update " << completed
               << " to form it";
  return std::optional<GateStop>(GateStop{kStoppedByMembership, /*save=*/false});
}

}  // namespace receipt_parity

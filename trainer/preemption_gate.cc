#include "trainer/preemption_gate.h"

#include <exception>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "collectives/collective_error.h"
#include "collectives/sum_across_ranks.h"
#include "logging/glog.h"

namespace receipt_parity {

PreemptionGate::PreemptionGate(c10d::ProcessGroup* group, int rank, std::chrono::seconds grace,
                               std::function<bool()> requested,
                               std::function<double()> longest_save)
    : group_(group),
      rank_(rank),
      grace_(grace),
      requested_(std::move(requested)),
      longest_save_(std::move(longest_save)) {}

GateStop PreemptionGate::Stop(int64_t completed, double signalled_ranks,
                              double longest_save) const {
  const double usable = 0.75 * static_cast<double>(grace_.count());
  const bool save = longest_save == 0 || 2 * longest_save <= usable;
  LOG(WARNING) << "rank " << rank_ << ": preempted (a SIGTERM or SIGUSR1 reached "
               << signalled_ranks << " rank(s)): every rank stops after update " << completed
               << (save ? ", saving a generation there"
                        : absl::StrCat(", without a save (the longest save, ", longest_save,
                                       " s, does not fit twice in ", usable, " s)"));
  return GateStop{kStoppedByPreemption, save};
}

absl::StatusOr<std::optional<GateStop>> PreemptionGate::AfterUpdate(int64_t completed) {
  double signalled = requested_() ? 1 : 0;
  double longest_save = rank_ == 0 ? longest_save_() : 0;
  if (group_ != nullptr) {
    try {
      at::Tensor figures =
          at::tensor(std::vector<double>{signalled, longest_save}, at::kDouble);
      if (absl::Status s = SumAcrossRanks(
              *group_, figures,
              absl::StrCat("rank ", rank_, ", update ", completed, ": the preemption poll"));
          !s.ok()) {
        return s;
      }
      signalled = figures[0].item<double>();
      longest_save = figures[1].item<double>();
    } catch (const std::exception& e) {
      return LibTorchErrorToStatus(e, "the preemption poll: LibTorch");
    }
  }
  if (signalled == 0) return std::optional<GateStop>();
  return std::optional<GateStop>(Stop(completed, signalled, longest_save));
}

}  // namespace receipt_parity

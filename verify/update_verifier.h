// Every update verified (docs/parity.md): each rank measures what it did
// in an update, the ranks all-gather those few numbers once after the
// optimizer step, and every rank judges them alike (verify/update_checks.h),
// so every rank reaches the same verdict at the same update without
// another message.
//
// Per update, on every rank, in this order:
//   BeginUpdate(plan, update, total)     (BeginEpoch first in each epoch)
//   AddSlots / AddPositions              each forward's slots, weights and
//                                        keys (the accounting's rows)
//   AddContribution                      each piece of this rank's gradient
//                                        as its backward passes left it,
//                                        before the reducer sees it (may be
//                                        called from autograd's thread)
//   SetReduced(layout)                   the reduced gradient, in the same
//                                        layout (before clipping)
//   ExpectClipFactor(parameters)         with clipping by the global norm:
//                                        the factor from the reduced
//                                        gradient; then SetStepped(layout)
//                                        with the gradient the optimizer
//                                        steps with
//   Launch(replica, loss_finite, rider)  after the optimizer step: this
//                                        rank's report sent, riding in the
//                                        next update's last gradient bucket
//                                        (GradientBuckets' rider) or in a
//                                        gather of its own
//   Settle(rider_reduced)                the reports read and judged: the
//                                        update's verdict
// The trainer settles an update just before the next update's step (its
// report rode with that update's gradients), and before any save and at
// the end (then gathered on its own). One update may be in flight at a
// time: Launch() needs the last one settled. A pass adds the update to
// record().verified; a failure is recorded (record().first_failure is the
// first) and returned. Exchange() is Launch() then Settle() without a
// rider.
//
// Ownership: the options' pointers are not owned and must outlive the
// verifier. Thread safety: one caller, but AddContribution may come from
// another thread while the caller waits in a backward pass.
#ifndef RECEIPT_PARITY_VERIFY_UPDATE_VERIFIER_H_
#define RECEIPT_PARITY_VERIFY_UPDATE_VERIFIER_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "parity/parity_report.pb.h"
#include "samplers/epoch_plan.h"
#include "verify/gradient_projection.h"
#include "verify/replica_checksum.h"
#include "verify/update_accounting.h"
#include "verify/update_checks.h"

namespace c10d {
class ProcessGroup;
}  // namespace c10d

namespace receipt_parity {

struct UpdateVerifierOptions {
  int rank = 0;
  int world_size = 1;
  // Carries the reports that do not ride in a gradient bucket (a gather of
  // a few 64-bit words a rank); nullptr with one rank: then only the
  // accounting is checked (nothing is reduced, there is one replica). Not
  // owned.
  c10d::ProcessGroup* group = nullptr;
  // The device the group's tensors live on.
  c10::Device device = c10::Device(c10::DeviceType::CPU);
  OneWorkerInputs one_worker;
  // Receipt ids by dataset index, for the failure message; may be nullptr.
  const std::vector<std::string>* receipt_ids = nullptr;
  // GradientReducer::reduced_divisor: the reduced gradient is the
  // contributions' sum over this.
  int reduced_divisor = 1;
  // Float additions that make one reduced element (UpdateCheckContext).
  int64_t reduction_terms = 1;
  // The gradients' dtype's unit roundoff.
  double unit_roundoff = kFloat32UnitRoundoff;
  // clip_grad_norm with scope "global": its max_norm.
  std::optional<double> clip_max_norm;
  // Elements of the gradient layout (every parameter's, in either order).
  int64_t gradient_elements = 0;
  // The projection direction's seed.
  uint64_t seed = 0;
};

// A tensor of a replica and the name a failure gives it.
using ReplicaTensor = std::pair<std::string, at::Tensor>;

struct UpdateVerdict {
  // The run's global update it judges.
  int64_t update = 0;
  // No check failed.
  bool verified = true;
  std::optional<EveryUpdateFailure> failure;
  // Every rank's reduced gradient, or some rank's loss, is not finite (not
  // a check's failure: the trainer stops as for any non-finite update).
  bool not_finite = false;
  // The seconds this rank spent on the update's checks: measuring, sending,
  // and reading or waiting for the reports when it was settled.
  double seconds = 0;
};

class UpdateVerifier {
 public:
  // REQUIRES: world_size >= 1, the one-worker inputs set.
  explicit UpdateVerifier(UpdateVerifierOptions options);
  ~UpdateVerifier();

  // Each epoch's plan, before its first update here. Errors:
  // OneWorkerAccounting::BeginEpoch's.
  absl::Status BeginEpoch(const EpochPlan& plan);

  // REQUIRES: BeginEpoch with `plan` (which must outlive the update).
  // Errors: one worker's rows' (the example source's keys).
  absl::Status BeginUpdate(const EpochPlan& plan, int64_t update, int64_t total_update);

  // This rank's slots [first, first + slots.size()) of the update, as its
  // forward took them: their weights (the loss weighting's) and update
  // keys ([n] int64, or undefined), in micro-batch `micro_batch`.
  void AddSlots(int first, absl::Span<const Slot> slots, absl::Span<const double> weights,
                const at::Tensor& update_keys, int micro_batch);
  // The same where the caller knows each slot's position in the block (the
  // ordered mode computes by position).
  void AddPositions(absl::Span<const int64_t> positions, absl::Span<const Slot> slots,
                    absl::Span<const double> weights, const at::Tensor& update_keys,
                    int micro_batch);

  // A piece of this rank's contribution at [offset, offset + numel) of the
  // layout. Errors: the projection's.
  absl::Status AddContribution(const at::Tensor& piece, int64_t offset);
  // The reduced gradient, pieces laid end to end from offset 0.
  absl::Status SetReduced(const std::vector<at::Tensor>& layout);
  // With clip_max_norm: the factor torch::nn::utils::clip_grad_norm_
  // applies to these gradients (the parameters' .grad, in the order the
  // clipping gets them). Errors: Internal (LibTorch).
  absl::Status ExpectClipFactor(const std::vector<at::Tensor>& parameters);
  // With clip_max_norm: the gradient the optimizer steps with.
  absl::Status SetStepped(const std::vector<at::Tensor>& layout);

  // The values the reports need in a gradient bucket to ride there (a
  // GradientBuckets rider: every rank's row of this rank's words, each word
  // as four 16-bit pieces), for a bucket of `dtype`; 0 where they cannot
  // (one rank, or a dtype whose significand holds fewer than 16 bits).
  int64_t RiderElements(at::ScalarType dtype) const;

  // After the optimizer step: this rank's report of the update is sent.
  // With `rider` (a GradientBuckets rider of RiderElements values, reduced
  // with the next update's gradients) the report is written into this
  // rank's row of it, the other rows zeroed: it crosses the ranks in that
  // reduction, with no collective of its own (a summing reducer returns
  // every rank's row exactly; one that divides by its declared divisor, the
  // rows divided, undone on reading). Without one it is gathered on its
  // own, in the group's threads (a collective: every rank calls it once
  // per update). `replica` is what the replica check compares (the
  // parameters; before a save, the optimizer's state too): its tensors are
  // read now, and again by a failing Settle() (to name the tensor that
  // differs), so they must not change before it. Errors: the start of the
  // gather's (a lost peer), LibTorch's.
  // REQUIRES: the previous update settled.
  absl::Status Launch(std::vector<ReplicaTensor> replica, bool loss_finite,
                      at::Tensor rider = at::Tensor());

  // The launched update's verdict: reads the reports (from the rider once
  // `rider_reduced` says the reduction that carries it ran since Launch;
  // else by a gather of their own, waited for or made now), judges them,
  // and on a failure asks the ranks what they did (a second gather), so
  // that the failure names the row, or the tensor, that differs. A rider
  // that comes back otherwise than the rows summed (over the divisor) fails
  // the reduction check of the update that carried it (the one after the
  // pending one, when it settles), and the pending one's reports are then
  // gathered on their own. nullopt when nothing is in flight. Every rank
  // settles at the same point (a collective). Errors: the gathers' (a lost
  // peer, a timeout).
  absl::StatusOr<std::optional<UpdateVerdict>> Settle(bool rider_reduced = false);

  // Launch() without a rider, then Settle().
  absl::StatusOr<UpdateVerdict> Exchange(std::vector<ReplicaTensor> replica, bool loss_finite);

  // Whether the gradients cross ranks (a group of two or more): the
  // reduction, clipping and replica checks run only then, and the
  // contribution, reduced and stepped calls are no-ops otherwise.
  bool reduces() const { return options_.group != nullptr && options_.world_size > 1; }

  // The run's record so far (parity.json's every_update).
  const EveryUpdateVerdict& record() const { return record_; }

  // Takes up `earlier` (an earlier attempt's record) for the updates before
  // `resume_update`, where this attempt starts: what it recorded at or
  // after that update is redone here.
  void Restore(const EveryUpdateVerdict& earlier, int64_t resume_update);

  // Restore for a new group after a lost rank (trainer/live_membership.h):
  // `earlier` is the survivors' record, whose last update before
  // `resume_update` may still have had its reports in flight; such an
  // update is recorded as lost_with_rank with `why`, not as unverified.
  void RestoreAfterLoss(const EveryUpdateVerdict& earlier, int64_t resume_update,
                        const std::string& why);

 private:
  struct Pending;
  struct GatherInFlight;
  class Timed;

  void AddRow(AccountingRow row);
  // The projection of `layout`'s pieces laid end to end from offset 0.
  absl::StatusOr<Projection> ProjectLayout(const std::vector<at::Tensor>& layout);
  // The gather of every rank's words: started, then finished; or both.
  absl::StatusOr<GatherInFlight> StartGather(const std::vector<int64_t>& mine);
  absl::StatusOr<std::vector<std::vector<int64_t>>> FinishGather(GatherInFlight in_flight);
  absl::StatusOr<std::vector<std::vector<int64_t>>> Gather(const std::vector<int64_t>& mine);
  // The rows the reducer returned in a rider, as words; nullopt with
  // `altered` saying where when they are not the rows summed.
  std::optional<std::vector<std::vector<int64_t>>> ReadRider(const at::Tensor& rider,
                                                              std::string* altered) const;
  // The row this rank trained that one worker does not, as words.
  static std::vector<int64_t> FirstDifferingRow(const Pending& pending);
  absl::StatusOr<std::string> DescribeAccounting(const Pending& pending,
                                                 const std::vector<int>& outliers);
  absl::StatusOr<std::string> DescribeReplicas(const Pending& pending,
                                               const std::vector<int>& outliers);
  void Record(int64_t total_update, const UpdateCheckResult& result);

  UpdateVerifierOptions options_;
  OneWorkerAccounting one_worker_;
  ProjectionDirection direction_;
  ReplicaChecksum checksum_;
  EveryUpdateVerdict record_;

  const EpochPlan* plan_ = nullptr;
  int64_t update_ = 0;
  int64_t total_update_ = 0;
  std::vector<AccountingRow> rows_;
  std::vector<AccountingRow> expected_;  // one worker's, by position
  mutable std::mutex contribution_mutex_;
  Projection contribution_;
  absl::Status contribution_error_;
  Projection reduced_;
  bool reduced_not_finite_ = false;
  Projection stepped_;
  double clip_factor_ = 0;
  // This update's seconds in the checks so far; guarded by
  // contribution_mutex_ (AddContribution adds to it too).
  double seconds_ = 0;
  // The launched update, until settled.
  std::unique_ptr<Pending> pending_;
  // An update whose reduction returned the reports riding in it altered:
  // it fails its reduction check, with this sentence, when it settles.
  std::optional<std::pair<int64_t, std::string>> carried_failure_;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_VERIFY_UPDATE_VERIFIER_H_

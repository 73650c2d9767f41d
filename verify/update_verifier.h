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
//   Exchange(replica, loss_finite)       after the optimizer step: the
//                                        gather, the verdict
// A pass adds the update to record().verified; a failure is recorded
// (record().first_failure is the first) and returned.
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
  // Carries the gathers (one all-reduce of a few 64-bit words a rank per
  // update); nullptr with one rank: then only the accounting is checked
  // (nothing is reduced, there is one replica). Not owned.
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
  // No check failed.
  bool verified = true;
  std::optional<EveryUpdateFailure> failure;
  // Every rank's reduced gradient, or some rank's loss, is not finite (not
  // a check's failure: the trainer stops as for any non-finite update).
  bool not_finite = false;
};

class UpdateVerifier {
 public:
  // REQUIRES: world_size >= 1, the one-worker inputs set.
  explicit UpdateVerifier(UpdateVerifierOptions options);

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

  // After the optimizer step: gathers every rank's report (a collective:
  // every rank calls it once per update), judges it, and on a failure asks
  // the ranks what they did (a second gather), so that the failure names
  // the row, or the tensor, that differs. `replica` is what the replica
  // check compares (the parameters; before a save, the optimizer's state
  // too). Errors: the gathers' (a lost peer, a timeout), LibTorch's.
  absl::StatusOr<UpdateVerdict> Exchange(const std::vector<ReplicaTensor>& replica,
                                         bool loss_finite);

  // Whether the gradients cross ranks (a group of two or more): the
  // reduction, clipping and replica checks run only then, and the
  // contribution, reduced and stepped calls are no-ops otherwise.
  bool reduces() const { return options_.group != nullptr && options_.world_size > 1; }

  // Seconds this rank spent in the checks since BeginUpdate (waiting for
  // the gather included): what they cost the update.
  double update_seconds() const;

  // The run's record so far (parity.json's every_update).
  const EveryUpdateVerdict& record() const { return record_; }

  // Takes up `earlier` (an earlier attempt's record) for the updates before
  // `resume_update`, where this attempt starts: what it recorded at or
  // after that update is redone here.
  void Restore(const EveryUpdateVerdict& earlier, int64_t resume_update);

 private:
  void AddRow(AccountingRow row);
  // The projection of `layout`'s pieces laid end to end from offset 0.
  absl::StatusOr<Projection> ProjectLayout(const std::vector<at::Tensor>& layout);
  absl::StatusOr<std::vector<std::vector<int64_t>>> Gather(const std::vector<int64_t>& mine);
  // The row this rank trained that one worker does not, as words.
  std::vector<int64_t> FirstDifferingRow() const;
  absl::StatusOr<std::string> DescribeAccounting(const std::vector<int>& outliers);
  absl::StatusOr<std::string> DescribeReplicas(const std::vector<ReplicaTensor>& replica,
                                               const std::vector<int>& outliers);
  void Record(const UpdateCheckResult& result);
  class Timed;

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
  // Guarded by contribution_mutex_ (AddContribution adds to it too).
  double seconds_ = 0;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_VERIFY_UPDATE_VERIFIER_H_

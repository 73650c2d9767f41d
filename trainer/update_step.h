// One update of one rank: the loss weighting's weights for this rank's
// slots, the weighted backward, the reducer over the process group, and
// the optimizer step.
//
// UpdateStep::Run(plan, u, ...) on rank r:
//   weights  = weighting.Weights(the whole update u of `plan`, r): from the
//              plan alone, no communication (artifacts/epoch_accounting.h)
//   backward of sum_i w_i * loss_i over r's slots (model/weighted_loss.h);
//              masked slots are computed and weigh zero; with
//              accumulation, one forward and backward per micro-batch
//              (samplers/micro_batches.h), their gradients added; a model
//              with synchronized batch norms on several ranks runs its
//              micro-batches as one forward and backward
//              (model/sync_batch_norm_update.h), its statistics' sums
//              crossing the ranks inside them, its buckets armed before
//              that backward as before a plain model's last one
//   in the ordered mode (a reducer with chunk_slots() > 0, e.g.
//   ordered_sum), instead: every chunk of the update's global order that
//   this rank's share covers is its own forward and backward (no
//   micro-batches), and the reducer adds all chunks' gradients along its
//   fixed order: on one rank SumChunks over every row; on a group through
//   the buckets, started from inside the last chunk's backward
//   (OrderedBackward below)
//   with a group, the gradients live in persistent flat buckets
//   (reducers/gradient_buckets.h, made at the first update; every .grad a
//   view into them); the reducer reduces the buckets in place once per
//   update, starting each during the (last micro-batch's) backward pass
//   once it is ready when the reducer overlaps_backward(), all done before
//   the step  (skipped without a group)
//   the reduced gradients and this rank's loss are finite
//   with clipping (scope "global"), the reduced gradient scaled by
//   min(1, max_norm / (norm + 1e-6)), its norm the same on every rank; with
//   scope "local" each rank scales its own gradient so before the reduction
//   (its buckets are then reduced after the backward pass, not during it)
//   at a whole-loss update, the ranks' shares of the loss summed (a
//   one-element all-reduce)
//   observer->BeforeOptimizerStep(...)        gradients reduced, not stepped
//   every parameter group's rate set to its base rate (as the optimizer
//   was built) times the schedule's factor of the run's update index
//   optimizer.step()
//   observer->AfterOptimizerStep(...)
// A NaN or an infinity in the reduced gradients or the loss ends the update
// with FailedPrecondition naming the rank, the update and the tensor ("rank
// 1, update 7: the reduced gradient of fc0.weight is not finite ..."). A
// non-finite loss on any rank makes every reduced gradient NaN, so every
// rank stops at the same update; the check reads one small gradient per
// update. Parameters that overflow in a step show in the next update's
// loss; CheckParametersFinite is for the points where state is kept (a
// checkpoint, the end of the run).
// Every rank of the group must run the same updates in the same order (the
// reducer is a collective).
//
// Ownership: an UpdateStep holds the pointers of UpdateStepParts; all of
// them must outlive it. It changes the model's parameters and gradients,
// the optimizer's state and the reducer's stats. From its first update with
// a group on, the parameters' gradients are views into the UpdateStep's
// buckets, and their gradient accumulators carry its hooks (removed when it
// is destroyed); nothing else may replace a .grad meanwhile.
// Thread safety: not thread-safe; one UpdateStep per rank.
#ifndef RECEIPT_PARITY_TRAINER_UPDATE_STEP_H_
#define RECEIPT_PARITY_TRAINER_UPDATE_STEP_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <optional>
#include <set>
#include <vector>

#include <torch/optim/optimizer.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "checkpoint/fault_injection.h"
#include "model/classifier.h"
#include "model/share_backward.h"
#include "model/weighted_loss.h"
#include "optimizers/step_rules.h"
#include "reducers/gradient_buckets.h"
#include "reducers/gradient_reducer.h"
#include "samplers/epoch_plan.h"
#include "schedules/lr_schedule.h"
#include "data/example_source.h"
#include "data/receipt_tensors.h"
#include "verify/update_verifier.h"
#include "weighting/loss_weighting.h"
#include "weighting/update_shares.h"

namespace c10d {
class ProcessGroup;
}  // namespace c10d

namespace receipt_parity {

// FailedPrecondition "rank R, update U: parameter NAME is not finite ..."
// when a parameter of `model` holds a NaN or an infinity.
absl::Status CheckParametersFinite(const Classifier& model, int rank,
                                   int64_t total_update);

// run.fault's flipped bit (config.proto FaultInjection): rank `rank` flips
// bit `bit` of the largest-magnitude element of its reduced gradient at
// global update `update`, after the reduction and before anything reads it.
struct GradientCorruption {
  bool armed = false;
  int rank = 0;
  int64_t update = 0;
  int bit = 0;
};

// Flips bit `bit` (0-31) of the float32 element of largest magnitude among
// `layout`'s tensors (the first such element; NaN counts as largest), in
// place, and names it: "element E of the reduced gradient (V -> W)".
// Errors: Internal (LibTorch); InvalidArgument for a layout that is not
// float32 or is empty.
absl::StatusOr<std::string> FlipLargestElementBit(const std::vector<at::Tensor>& layout, int bit);

struct UpdateStepParts {
  Classifier* model = nullptr;
  torch::optim::Optimizer* optimizer = nullptr;  // over model's parameters
  const LossWeighting* weighting = nullptr;
  GradientReducer* reducer = nullptr;
  // nullptr for a one-worker run: the gradients are not reduced.
  c10d::ProcessGroup* group = nullptr;
  int rank = 0;
  // The training set, by dataset index (the plan's slots index it).
  const ExampleSource* examples = nullptr;
  const std::vector<int>* labels = nullptr;
  // Training examples per class (for class_balanced).
  const std::vector<int64_t>* class_counts = nullptr;
  // Micro-batches per update and rank (accumulation_steps): each is its
  // own forward and backward, their gradients added; the reduction starts
  // during the last one. REQUIRES: >= 1, dividing every local batch.
  int micro_batches = 1;
  // precision "bf16": forward passes under bfloat16 autocast, weights,
  // gradients and their reduction in fp32 (model/weighted_loss.h).
  bool bf16 = false;
  // The learning-rate schedule; nullptr: the base rates throughout.
  const LearningRateSchedule* schedule = nullptr;
  // Clipping; nullopt: none.
  std::optional<GradientClipping> clipping;
  // The run's global updates whose mean loss over the accepted examples
  // is wanted: at those the step sums the ranks' accepted losses over the
  // group (UpdateResult.whole_update_loss). nullptr: none. Not owned.
  const std::set<int64_t>* whole_loss_updates = nullptr;
  // An injected kill inside the backward (forward_backward: weights,
  // forward, backward) or the reducer call (allreduce) of one update
  // (checkpoint/phase_kill.h); unarmed by default.
  PhaseKillPlan phase_kill;
  // A flipped bit in the reduced gradient; unarmed by default.
  GradientCorruption corruption;
  // The every-update checks (verify/update_verifier.h); nullptr: none.
  // Where they check the reduction (more than one rank), a non-finite
  // reduced gradient or loss is judged after the ranks' reports are
  // gathered (so that a gradient corrupted on one rank fails the check on
  // every rank instead of stopping that rank alone).
  // Not owned.
  UpdateVerifier* verifier = nullptr;
  // With a verifier: what else the replica check compares after update T
  // besides the parameters (the optimizer's state before a save); may be
  // empty.
  std::function<std::vector<ReplicaTensor>(int64_t total_update)> replica_extras;
  // With a verifier: an update whose earlier update failed its checks is
  // not stepped (parity.stop_on_failure: the run stops after the failed
  // one).
  bool skip_step_after_failed_check = false;
};

// What one update did on this rank.
struct UpdateResult {
  // This rank's share of the update's loss: sum_i w_i * loss_i. The shares
  // of all ranks add up to the update's loss.
  double weighted_loss = 0;
  // Wall time in the reducer (waiting for peers included).
  double sync_seconds = 0;
  // This rank's slots, masked ones included.
  int64_t local_slots = 0;
  // Valid slots of the update over all ranks (the denominator).
  int64_t global_accepted = 0;
  // The rate of the optimizer's first parameter group for this update.
  double learning_rate = 0;
  // With clipping: the L2 norm measured (the reduced gradient's, or with
  // scope local this rank's own) and the factor applied (1: not clipped).
  // Without: 0 and 1.
  double gradient_norm = 0;
  double clip_factor = 1;
  // This rank's sum of its accepted examples' losses (WeightedBackwardResult).
  double accepted_loss_sum = 0;
  // At the updates UpdateStepParts.whole_loss_updates names: the update's
  // mean loss over its accepted examples, every rank's accepted_loss_sum
  // added (in the group's order) over global_accepted: the same quantity
  // whatever the weighting and reducer.
  std::optional<double> whole_update_loss;
  // With UpdateStepParts.verifier: the every-update verdict of the update
  // before this one, settled just before this one's step (its gather ran
  // while this update computed), the same on every rank; nullopt for the
  // first update of a loop (or without checks).
  std::optional<UpdateVerdict> earlier_verdict;
  // That verdict failed and UpdateStepParts.skip_step_after_failed_check
  // holds: this update was computed and reduced but NOT stepped (the
  // parameters are still the failed update's); the run must stop.
  bool not_stepped = false;
};

// Sees the model at the two points of an update that are not visible from
// outside: the reduced gradients before the step, the parameters after it.
// An error status ends the update with that status.
class UpdateObserver {
 public:
  virtual ~UpdateObserver() = default;

  // The model's gradients are the reduced ones; nothing stepped yet.
  virtual absl::Status BeforeOptimizerStep(int64_t total_update,
                                           const Classifier& model) = 0;

  // The optimizer stepped; `result` is complete.
  virtual absl::Status AfterOptimizerStep(int64_t total_update,
                                          const EpochPlan& plan,
                                          int64_t update,
                                          const UpdateResult& result,
                                          const Classifier& model) = 0;

  // Called by the update loop (trainer/update_loop.h) once the update's
  // time is taken: where an observer writes files, so that no write is
  // timed as part of the update. Default: nothing.
  virtual absl::Status AfterTimedUpdate(int64_t /*total_update*/) {
    return absl::OkStatus();
  }
};

class UpdateStep {
 public:
  // REQUIRES: every pointer of `parts` but group is set.
  explicit UpdateStep(const UpdateStepParts& parts);

  // Runs update `update` of `plan`, the run's `total_update`-th (0-based,
  // only used in errors and passed to the observer). `observer` may be
  // nullptr.
  // REQUIRES: plan.world_size() is the group's size (1 without a group),
  // 0 <= update < plan.num_updates(), the plan indexes `examples`.
  // Errors: WeightedBackward's status; the reducer's, prefixed
  // "rank R, update T: "; the observer's; Internal "rank R, update T:
  // LibTorch: ..." for anything LibTorch throws. After an error the model
  // and optimizer may be half updated: the run must stop.
  absl::StatusOr<UpdateResult> Run(const EpochPlan& plan, int64_t update,
                                   int64_t total_update,
                                   UpdateObserver* observer);

  // With a verifier: the verdict of the last update run, if not yet
  // settled (waiting for its gather); nullopt otherwise. Every rank must
  // call it at the same point: before a save, and after the last update.
  // Errors: the gather's; FailedPrecondition when every rank's reduced
  // gradient or a rank's loss was not finite (as a non-finite update
  // without checks).
  absl::StatusOr<std::optional<UpdateVerdict>> SettleChecks();

  // The run updates whose optimizer step this step has applied (the last
  // one's index + 1); -1 before any. After an error in Run, it says whether
  // the update in flight was stepped (the model then holds it).
  int64_t updates_stepped() const { return updates_stepped_; }

 private:
  absl::StatusOr<WeightedBackwardResult> Backward(const EpochPlan& plan, int64_t update,
                                                  int64_t total_update);
  // What this rank's share of an update is computed with
  // (model/share_backward.h), and the weighting's inputs.
  ShareBackwardParts ShareParts(int64_t total_update);
  WeightingInputs Weighting() const;
  // The ordered mode (the reducer's chunk_slots() C > 0,
  // reducers/ordered_sum_reducer.h): this rank's chunks of the update's
  // global order (EpochPlan::UpdateOrder), the positions
  // [its first slot, + its local batch) of the global batch cut into chunks
  // of C, each one forward and backward from zero gradients, each chunk's
  // gradient a row of chunk_rows_ ([chunks, parameter elements], zeros
  // where another rank computes). A rank computes as many slots as its
  // local batch, not the slots dealt to it.
  absl::StatusOr<WeightedBackwardResult> OrderedBackward(const EpochPlan& plan, int64_t update,
                                                         int64_t total_update);
  // One rank: every chunk's gradient a row of chunk_rows_ ([chunks,
  // parameter elements], zeros where no chunk is computed), for SumChunks.
  absl::StatusOr<WeightedBackwardResult> ChunksIntoRows(const EpochPlan& plan,
                                                        const std::vector<ChunkShare>& mine,
                                                        const ShareBackwardParts& share,
                                                        const ChunkObserver& on_chunk);
  // On a group: chunk_rows_ is this rank's rows only, in the buckets'
  // layout; every chunk but the last is copied into its row (except for
  // one pair: PairIntoBuckets), and the last one's backward starts the
  // reducer's sum bucket by bucket
  // (GradientReducer::BeginChunkBuckets), overlapping the rest of that
  // backward, the every-update reports riding in the last bucket.
  absl::StatusOr<WeightedBackwardResult> ChunksIntoBuckets(const std::vector<ChunkShare>& mine,
                                                           const ShareBackwardParts& share,
                                                           const ChunkObserver& on_chunk);
  // Whether this rank computes exactly the two rows of the one subtree it
  // holds (as at two workers and four chunks).
  bool HoldsOnePairWhole(const std::vector<ChunkShare>& mine) const;
  // Then: the second chunk's backward adds into the first one's gradients,
  // in the buckets, which then hold the pair's node of the tree (autograd
  // adds the two rows as the tree does, element by element, and the sum is
  // commutative), and it starts the reduction; no row is copied or added,
  // and the every-update checks see the pair's sum as the buckets start.
  absl::StatusOr<WeightedBackwardResult> PairIntoBuckets(const std::vector<ChunkShare>& mine,
                                                         const ShareBackwardParts& share,
                                                         const ChunkObserver& on_chunk);
  // The reducer told this update's rows; `buckets_node` what the buckets
  // will hold (lo == hi: none).
  absl::Status BeginChunkBuckets(ChunkTreeNode buckets_node);
  // One rank's ordered reduction: the reducer's SumChunks over chunk_rows_,
  // its result the parameters' gradients.
  absl::Status SumChunks(int64_t total_update);
  // With a group: the buckets, made once.
  absl::Status PrepareBuckets(int64_t total_update);
  // With buckets: armed for the next backward pass, unless this rank clips
  // its own gradient before the reduction.
  void ArmBuckets();
  absl::Status Reduce(int64_t total_update);
  // Clips when `clip_here` (the scope's point of the update) and records
  // the norm and factor in `result`.
  absl::Status Clip(bool clip_here, int64_t total_update, UpdateResult* result);
  absl::Status Step(int64_t total_update, UpdateResult* result);
  absl::Status CheckReducedUpdate(int64_t total_update, double loss);
  // With a verifier: its epoch when `plan` is new to it, and the update.
  absl::Status BeginVerifiedUpdate(const EpochPlan& plan, int64_t update, int64_t total_update);
  // The reduced gradient laid out as the verifier reads it: the buckets
  // in order, or (ordered mode, no buckets) the parameters' gradients.
  std::vector<at::Tensor> GradientLayout() const;
  // With a verifier: this rank's contribution as the backward left it,
  // where the buckets' start observer does not see it (a rank that clips
  // its own gradient before the reduction; the ordered mode's chunks).
  absl::Status ProbeContribution(bool clips_locally);
  // The armed flipped bit, at its update on its rank.
  absl::Status Corrupt(int64_t total_update);
  // A verifier that checks the reduction (more than one rank): it then
  // judges non-finite reduced gradients after the ranks' reports.
  bool ReducesVerified() const;
  // With a verifier, after the reduction: the reduced gradient, the clip
  // factor it asks for, (after Clip) the gradient stepped with; then,
  // after the step, the gathered verdict.
  absl::Status ReportReduced(int64_t total_update);
  absl::Status ReportStepped(int64_t total_update);
  // After the step: this update's report sent (riding in the buckets'
  // rider with the next update's gradients, where there are buckets).
  absl::Status LaunchChecks(int64_t total_update, const UpdateResult& result);
  // `rider_reduced`: this update's reduction carried the last report.
  absl::StatusOr<std::optional<UpdateVerdict>> SettleChecks(bool rider_reduced);
  // At a whole-loss update: the ranks' shares of the loss added.
  absl::Status SumLoss(int64_t total_update, UpdateResult* result);

  UpdateStepParts parts_;
  std::unique_ptr<GradientBuckets> buckets_;
  // Each parameter group's rate as the optimizer was built: what the
  // schedule's factor multiplies.
  std::vector<double> base_rates_;
  int64_t updates_stepped_ = -1;
  // The model has synchronized batch norms (model/sync_batch_norm.h).
  bool has_sync_batch_norm_ = false;
  // The reducer's chunk_slots(): > 0 in the ordered mode.
  int chunk_slots_ = 0;
  // The ordered mode's chunk gradients: every row of the update on one
  // rank; this rank's rows, in the buckets' layout, on a group (kept from
  // update to update while its shape holds).
  at::Tensor chunk_rows_;
  // Which rows of chunk_rows_ each rank computes (ChunkRowBounds).
  std::vector<int64_t> chunk_row_bounds_;
  // The plan whose epoch the verifier began last.
  const EpochPlan* verified_plan_ = nullptr;
  int64_t verified_epoch_ = -1;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_TRAINER_UPDATE_STEP_H_

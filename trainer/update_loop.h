// A run's updates, from its cursor to its end, as a composition:
//
//   for each epoch from the cursor's, while updates remain:
//     plan = the sampler's epoch plan (samplers/sampler_policy.h)
//     for each update of the plan from the cursor's:
//       stop here once run.max_updates updates are done
//       UpdateStep::Run            weights, backward, reduce, step; the
//                                  observer (the UpdateRecorder) records;
//                                  the checks of the update before it
//                                  settle before its step: a failure stops
//                                  the run there (failed_check_stop), this
//                                  update not stepped
//       RankReportBuilder::AddUpdate   the update's time ends before this
//       UpdateObserver::AfterTimedUpdate  the recorder's file writes
//       before a save (or a gate's stop): this update's own checks settled;
//                                  a failure stops the run, unsaved
//       CheckpointCadence::AfterUpdate   saves when due
//       ProgressLog::AfterUpdate         logs when due
//       UpdateGate::AfterUpdate          stops the run here when it says so
//                                        (saving a generation first when it
//                                        asks and the cadence has not)
//       ReturnFreeHeapPages        every 64 updates (runtime/heap_trim.h)
//     RankReportBuilder::AddEpoch  the epoch's accounting of the updates run
//   the last update's checks settled
//
// Every rank runs the same loop over the same plans, so all ranks run the
// same updates, save the same generations and stop at the same update.
//
// Ownership: the parts are the caller's; the loop only calls them.
#ifndef RECEIPT_PARITY_TRAINER_UPDATE_LOOP_H_
#define RECEIPT_PARITY_TRAINER_UPDATE_LOOP_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "samplers/sampler_policy.h"
#include "checkpointing/checkpoint_cadence.h"
#include "trainer/progress_log.h"
#include "trainer/rank_report_builder.h"
#include "checkpointing/run_checkpoints.h"
#include "trainer/update_step.h"

namespace receipt_parity {

// Which updates run.
struct UpdateSchedule {
  const SamplerPolicy* sampler = nullptr;
  // The training set's size, the world and the sampler seed (OrderRequest).
  int64_t num_examples = 0;
  int world_size = 1;
  uint64_t seed = 0;
  // Slots per rank per update.
  std::vector<int> local_batch;
  int epochs = 0;
  // 0: no limit; else the run stops once this many updates (counted over
  // the whole run, resumed attempts included) are done.
  int64_t max_updates = 0;
  // Where the first update starts (fresh: all zeros).
  TrainingCursor start;
};

// Asked after each update, once its checkpoint is saved when due: whether
// the run stops there. Every rank's gate must give the same answer at the
// same update (it may be a collective), so all ranks stop together.
// Why a gate stops the run, and whether the cadence saves a generation
// where it stops (unless the update's own save just did).
struct GateStop {
  std::string reason;  // "parity_failed", "preempted"
  bool save = false;
};

class UpdateGate {
 public:
  virtual ~UpdateGate() = default;
  // `completed`: the run's updates done so far (resumed attempts'
  // included). A stop here, or nullopt to go on; an error ends the run
  // with it.
  virtual absl::StatusOr<std::optional<GateStop>> AfterUpdate(int64_t completed) = 0;
};

// Gates asked in order, every one at every update (each may be a
// collective); the first stop wins. Not owned.
class GateChain : public UpdateGate {
 public:
  explicit GateChain(std::vector<UpdateGate*> gates) : gates_(std::move(gates)) {}
  absl::StatusOr<std::optional<GateStop>> AfterUpdate(int64_t completed) override;

 private:
  std::vector<UpdateGate*> gates_;
};

// Not owned; observer and gate may be nullptr.
// Where the loop stands, kept as it goes (for a caller that must know,
// after an error, which update was in flight): the cursor after the last
// update it completed, and the cursor after the update in flight (equal
// between updates).
struct LoopPosition {
  TrainingCursor completed;
  TrainingCursor after_in_flight;
};

struct UpdateLoopParts {
  UpdateStep* step = nullptr;
  UpdateObserver* observer = nullptr;
  CheckpointCadence* cadence = nullptr;
  const ProgressLog* progress = nullptr;
  RankReportBuilder* report = nullptr;
  UpdateGate* gate = nullptr;
  // An update whose every-update checks failed (UpdateResult's
  // earlier_verdict, or UpdateStep::SettleChecks before a save and at the
  // end) stops the run right after it, before any save, with this reason as
  // UpdateLoopEnd.stopped_by; empty: the run goes on. The step must then
  // skip the step after a failed check (skip_step_after_failed_check).
  std::string failed_check_stop;
  // Kept up to date when set.
  LoopPosition* position = nullptr;
};

// What ended the loop: empty when the schedule ran out (its epochs or
// max_updates), else the gate's reason; and whether a generation was saved
// at the stop.
struct UpdateLoopEnd {
  std::string stopped_by;
  bool saved_at_stop = false;
};

// The most updates a run may have: its artifacts count them as int32.
inline constexpr int64_t kMostRunUpdates = 2147483647;
// The most slots RunUpdateCount plans epoch by epoch (about a second).
inline constexpr int64_t kMostSlotsPlannedAtStart = 100000000;

// The updates of every epoch of `schedule` from update 0, whatever
// max_updates stops an attempt at (operational: a later attempt may ask for
// more): the run a learning-rate schedule is checked against. The first
// epoch's, times the epochs, where the sampler declares the same size every
// epoch; otherwise every epoch planned. Errors: the plans'; InvalidArgument
// starting "epochs: " when the run would have more than kMostRunUpdates
// updates, or when counting them would plan more than
// kMostSlotsPlannedAtStart slots: refused at once, never a start that does
// not end.
absl::StatusOr<int64_t> RunUpdateCount(const UpdateSchedule& schedule);

// Runs the schedule, until it ends or the gate stops it. The updates run
// are parts.report->updates(). Errors: the first error of the plan, the
// step, a save or the gate; the run must then stop (the model may be half
// updated).
// REQUIRES: every part but the observer and the gate is set; the step's
// plan inputs (examples, labels) match `schedule`.
absl::StatusOr<UpdateLoopEnd> RunUpdateLoop(const UpdateSchedule& schedule,
                                            const UpdateLoopParts& parts);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_TRAINER_UPDATE_LOOP_H_

// What one rank's training run is given (TrainingRunOptions) and what it
// gives back (TrainingOutcome): the interface of trainer/training_run.h,
// apart so that the run's own parts (trainer/run_context.h,
// trainer/run_finish.h) need not include the composition they belong to.
#ifndef RECEIPT_PARITY_TRAINER_TRAINING_RUN_OPTIONS_H_
#define RECEIPT_PARITY_TRAINER_TRAINING_RUN_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "artifacts/run_folder.h"
#include "artifacts/run_summary.pb.h"
#include "checkpointing/run_checkpoints.h"
#include "checkpoint/fault_injection.h"
#include "config/checkpoint_plan.h"
#include "config/config_loader.h"
#include "runtime/process_group.h"
#include "trainer/run_examples.h"
#include "samplers/audit.h"
#include "verdicts/whole_run_references.h"
#include "verify/update_verifier.h"

namespace receipt_parity {

// What a run whose update loop failed hands back when asked
// (TrainingRunOptions::live), for its rank to go on in a new group after a
// lost rank (trainer/live_membership.h).
struct LiveHandover {
  bool filled = false;
  // The whole state at the last update this rank stepped, its cursor, the
  // group's world size and local batches, the cadence's next generation.
  MemoryState state;
  // Whether the update in flight was abandoned before this rank stepped it.
  bool abandoned_in_flight = false;
  // The every-update checks' record so far (with checks on).
  std::optional<EveryUpdateVerdict> every_update;
  // When the loop's error came back (or it stopped for a new membership).
  std::chrono::steady_clock::time_point failed_at;
  // The run folder's attempt the state was trained in.
  int attempt = 1;
};

struct TrainingRunOptions {
  const LoadedConfig* loaded = nullptr;
  int rank = 0;
  // This rank's index on its machine (LOCAL_RANK): which GPU it uses.
  int local_rank = 0;
  int world_size = 1;
  // nullptr when world_size == 1.
  const ProcessGroupHandle* process_group = nullptr;
  // Where this run's artifacts go (OUT for a multi-worker run,
  // OUT/reference for the one-worker reference).
  std::string artifact_dir;
  // A multi-worker run compares its first update with this folder's
  // first_step.json and writes parity.json; empty: no comparison.
  std::string reference_dir;
  // Whether and where the run saves checkpoints and resumes from them
  // (config/checkpoint_plan.h); nullopt: it does neither.
  std::optional<CheckpointPlan> checkpoints;
  // An injected failure during a save (checkpoint/fault_injection.h).
  FaultPlan fault;
  // This attempt's number in the run folder (artifacts/run_folder.h); every
  // artifact names it.
  int attempt = 1;
  // The run folder's decision for this attempt (artifacts/run_folder.h);
  // when set, rank 0 begins the attempt in `artifact_dir` (BeginAttempt)
  // once the data, plugins and model are made, so a run refused for its
  // input leaves the folder as it was. Not owned.
  const RunFolderDecision* folder = nullptr;
  // What this run is, as run_manifest.json, run_summary.json and
  // validation.json say ("training run" unless a caller says otherwise).
  std::string purpose = "training run";
  // Above this many training slots (views x epochs trained) rank 0 streams
  // the sampler audit: sampler_audit.json the summary, sampler_audit.slots
  // every slot (samplers/audit.h).
  int64_t audit_slots_file_above = kAuditSlotsFileAbove;
  // Above this many synthetic identities the run renders its examples'
  // pixels when a slot needs them, keeping `pixel_cache_bytes` of them
  // (trainer/run_examples.h); at or below, it holds them all.
  int64_t render_pixels_above = kRenderPixelsAbove;
  int64_t pixel_cache_bytes = kPixelCacheBytes;
  // Global update indices whose reduced gradients and parameters after the
  // step rank 0 writes to `artifact_dir`/update-K.json (the first update of
  // a resumed run always is).
  std::set<int64_t> record_updates;
  // --allow_recipe_change: a checkpoint generation written with another
  // recipe (the optimizer's settings, lr_schedule, clip_grad_norm) resumes
  // with this one (checkpointing/run_checkpoints.h).
  bool allow_recipe_change = false;
  // With a reference: rank 0, at the run's end, gets the whole-run
  // references from this before judging the whole run. Unset: the whole
  // run is not judged (parity.json's whole_run says so).
  WholeRunReferencesMaker whole_run_references;
  // This process takes SIGTERM and SIGUSR1 as preemption
  // (runtime/preemption.h's watch is running): with a checkpoint plan, the
  // run stops where its ranks agree and saves a generation there.
  bool preemptible = false;
  // Survivors go on (runtime/membership.h): when set, an error of the
  // update loop fills this before it is returned. Not owned.
  LiveHandover* live = nullptr;
  // Start from this state, a peer's memory, instead of the checkpoints: a
  // new group after a lost rank, in the same attempt (the folder's attempt
  // is not begun again). Not owned.
  const LiveHandover* resume_from_memory = nullptr;
  // The changes of membership so far (run_summary.json's membership); no
  // changes: none.
  MembershipTotals membership;
};

struct TrainingOutcome {
  bool parity_checked = false;
  bool parity_pass = false;
  // With parity checked: one line, the verdict on the first update and on
  // the whole run, for the console.
  std::string parity_verdict;
  int64_t updates = 0;
  // A preemption signal stopped the run at an update boundary
  // (trainer/preemption_gate.h): nothing was validated or written but the
  // generation saved there (`saved_at_stop`) and run_state.json's record.
  bool preempted = false;
  bool saved_at_stop = false;
  // The launcher published a membership that takes a replacement in
  // (trainer/membership_gate.h): every member stopped at the same update
  // boundary and handed its state over (TrainingRunOptions::live); nothing
  // was validated or written. The rank goes on in the grown group.
  bool membership_changed = false;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_TRAINER_TRAINING_RUN_OPTIONS_H_

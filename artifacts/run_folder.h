// A run folder's states and their rules (docs/design.md, "Run
// folders"). DIR holds one run:
//   run_state.json   RunFolderState (artifacts/run_folder_state.proto): the config as
//                    it is fingerprinted and every attempt; written when an
//                    attempt begins
//   finished.json    FinishRecord: written last, after every artifact, when
//                    the run reached its stopping point
//   the run's artifacts (artifacts/run_artifacts.h), update-K.json,
//   trajectory/ (artifacts/parity_trajectory.h),
//   world_size_change.json, checkpoints/, and for a multi-worker run
//   reference/ (the one-worker reference's own run folder) and
//   drift_reference/ (its drift twin's, trainer/run_folder_setup.h).
//
// The states, as DecideRunFolder reads them:
//   empty (nothing a run wrote)   a fresh run, attempt 1
//   unfinished, same config       resume as attempt N+1 (from the newest
//                                 generation that verifies, or from the
//                                 start when none does)
//   finished, same config, no     train nothing
//     more updates asked for
//   finished, more updates        continue as attempt N+1
//   another config                refused, naming what differs, unless
//                                 checkpoint { allow_world_size_change } or
//                                 { allow_data_change } covers every
//                                 difference, or the only difference is the
//                                 number of workers (world_size,
//                                 local_batch_sizes, accumulation_steps)
//                                 of a run whose updates ignore it
//                                 (RunFolderRules::world_size_dependence);
//                                 another global_batch is always refused
//   another recipe (only the      with --allow_recipe_change: resumed or
//     optimizer's settings,       continued as attempt N+1 with the new
//     lr_schedule, clip_grad_     recipe, recorded in the attempt's
//     norm differ)                recipe_changes; without it refused, naming
//                                 the fields and the flag
// Every function here is called by the process that holds DIR/LOCK
// (io/run_folder_lock.h), before any rank reads or writes DIR.
#ifndef RECEIPT_PARITY_ARTIFACTS_RUN_FOLDER_H_
#define RECEIPT_PARITY_ARTIFACTS_RUN_FOLDER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "artifacts/artifact_stamp.h"
#include "artifacts/run_folder_state.pb.h"
#include "config/config.pb.h"

namespace receipt_parity {

inline constexpr char kRunStateFile[] = "run_state.json";
inline constexpr char kFinishRecordFile[] = "finished.json";
// The every-update checks' record of the updates so far
// (parity/parity_report.proto EveryUpdateVerdict), written by rank 0 with
// every save and at an attempt's end, so that a resumed attempt carries on
// its count (verify/update_verifier.h Restore).
inline constexpr char kEveryUpdateRecordFile[] = "every_update.json";

// kStartOver: a folder's unfinished (or finished, asked for more) run taken
// up with nothing to resume from: it trains again from update 0.
enum class AttemptStart { kFresh, kResume, kContinue, kStartOver };

// "fresh", "resume", "continue", "start_over": AttemptRecord.start.
absl::string_view AttemptStartName(AttemptStart start);

struct RunFolderDecision {
  // The run in DIR is finished and this config asks for no more: train
  // nothing, touch nothing.
  bool finished = false;
  // The attempt to begin; when finished, the attempt that finished.
  int attempt = 1;
  AttemptStart start = AttemptStart::kFresh;
  // When finished: the record read from finished.json.
  FinishRecord finish;
  // One line for the log: what was found and what happens.
  std::string description;
  // With --allow_recipe_change, on a folder that holds a run: the fields
  // whose recipe this config changes, "field: old -> new" (empty when it
  // changes none). BeginAttempt records them.
  std::vector<std::string> recipe_changes;
};

struct RunFolderRules {
  // --allow_recipe_change: a config that differs from the folder's only in
  // its recipe (RecipeFreeConfig, config/config_loader.h) continues the
  // run instead of being refused.
  bool allow_recipe_change = false;
  // Why this run's updates would train otherwise on another number of
  // workers (RunPluginSelections::world_size_dependence,
  // config/run_plugins.h), or empty when they would not: then a folder
  // holding a run of this config written by another number of workers
  // (another world_size, local_batch_sizes or accumulation_steps, the same
  // global_batch) is taken up as this config's, without
  // checkpoint.allow_world_size_change. Not empty unless the caller asked
  // the run's plugins.
  std::string world_size_dependence = "the run's plugins were not consulted";
  // Why a run in the folder cannot be resumed (it saves no checkpoints; its
  // checkpoint folder holds no advertised generation), or empty when a
  // generation is there: an unfinished run is then taken up as kStartOver,
  // said so, never "RESUMING".
  std::string nothing_to_resume;
};

// DIR's run_state.json (an empty state when there is none). Errors:
// InvalidArgument naming the file when it is unreadable.
absl::StatusOr<RunFolderState> ReadRunFolderState(const std::string& dir);

// Nothing a run in --out=OUT reads or removes may lie outside OUT (CWE-59):
// the entries a run writes in OUT, OUT/reference and OUT/drift_reference
// (RemoveRun's), and every entry of their trajectory/ and tensorboard/,
// must not be links whose targets leave OUT. A user's own entry (a link to
// a plot kept elsewhere) is none of the run's business and never refused. (A
// generation folder linked out of checkpoints/ is set aside at resume
// instead, checkpoint/recovery.h.) Reads the folders; writes nothing.
// InvalidArgument naming the first such link and its target.
absl::Status RefuseLinksLeaving(const std::string& out);

// Reads DIR; writes nothing. `config` is the config about to run in DIR.
// Errors: InvalidArgument (exit 2) "DIR holds a run of another config
// (DIR/run_state.json): <field>: <old> -> <new>; ..." when the configs
// differ beyond what checkpoint.allow_* and `rules` allow (when only the
// recipe differs, the message names --allow_recipe_change);
// InvalidArgument naming run_state.json or finished.json when one is
// unreadable.
absl::StatusOr<RunFolderDecision> DecideRunFolder(const std::string& dir,
                                                  const TrainingConfig& config,
                                                  const RunFolderRules& rules = {});

// --overwrite: removes what runs write in DIR (the files above, the
// artifacts, checkpoints/ and corrupt-gen-*, and reference/ and
// drift_reference/ unless `keep_reference`), never LOCK nor anything a run
// did not write. Returns
// the names removed. Internal naming the entry on a failure.
absl::StatusOr<std::vector<std::string>> RemoveRun(const std::string& dir,
                                                   bool keep_reference);

// Begins `decision.attempt`: run_state.json gains its AttemptRecord (with
// the decision's recipe_changes) and this config (written atomically), and
// finished.json is removed. Internal naming the
// file on a failure.
absl::Status BeginAttempt(const std::string& dir, const TrainingConfig& config,
                          const RunFolderDecision& decision);

// The newest attempt in DIR/run_state.json ended as `ended` ("preempted")
// after the run's `updates` updates, a generation saved there or not.
// Errors: the state's (unreadable, or no attempt), and the write's.
absl::Status RecordAttemptEnd(const std::string& dir, const std::string& ended, int64_t updates,
                              bool saved);

// Rank 0, once it knows whether the attempt resumed a generation: removes
// what earlier attempts wrote that this attempt would otherwise leave stale
// beside its own, and finished.json. A fresh start removes every artifact;
// a resume keeps first_step.json, update-K.json and trajectory/ (each
// names the attempt that wrote it; the resumed run cannot recompute them)
// and removes the others, which this attempt writes anew. Returns the names removed.
absl::StatusOr<std::vector<std::string>> RemoveStaleArtifacts(const std::string& dir,
                                                              bool resumed);

// Writes DIR/finished.json from `record` (its `artifacts` filled with the
// artifact files present in DIR), stamped. Call last.
absl::Status WriteFinishRecord(const std::string& dir, const ArtifactStamp& stamp,
                               FinishRecord record);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_ARTIFACTS_RUN_FOLDER_H_

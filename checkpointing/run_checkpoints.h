// A training run's checkpoints: save a generation at a completed update,
// and resume from the newest advertised one at start.
//
// Save (every rank, at the same update): the replicated state (parameters
// "model/<name>" and the optimizer's buffers "optimizer/<name>/<buffer>",
// optimizers/optimizer_plugin.h) is split with
// OwnedNames so each rank writes only its part; every rank adds its RNG
// state and the cursor. checkpoint/save_generation.h does the durable
// protocol: each rank's shard is fsynced and renamed, confirmed to rank 0
// through the c10d store, and only then does rank 0 write the MANIFEST.
// The other ranks wait until the MANIFEST is durable.
//
// Resume (every rank): rank 0 finds the newest advertised generation that
// verifies (sizes and checksums BEFORE anything is deserialised), removes
// partial folders, and publishes its decision; every rank reads every
// shard and rebuilds the whole state.
#ifndef RECEIPT_PARITY_CHECKPOINTING_RUN_CHECKPOINTS_H_
#define RECEIPT_PARITY_CHECKPOINTING_RUN_CHECKPOINTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/optim/optimizer.h>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "checkpoint/background_prune.h"
#include "checkpoint/fault_injection.h"
#include "checkpoint/shard_state.h"
#include "model/classifier.h"
#include "optimizers/optimizer_plugin.h"
#include "artifacts/resume_record.pb.h"
#include "artifacts/run_summary.pb.h"
#include "config/checkpoint_plan.h"
#include "config/config.pb.h"

namespace receipt_parity {

// Where the next update starts.
struct TrainingCursor {
  int64_t total_updates = 0;
  int epoch = 0;
  int64_t update_in_epoch = 0;
};

struct RunCheckpointContext {
  // Where the generations are (plan.folder, e.g. OUT/checkpoints) and how
  // many are kept.
  CheckpointPlan plan;
  int rank = 0;
  int world_size = 1;
  // nullptr when world_size == 1.
  c10d::Store* store = nullptr;
  const TrainingConfig* config = nullptr;
  std::string model_revision;
  // The run's optimizer plugin: what its optimizer's state is as named
  // tensors, saved and restored. Not owned.
  const OptimizerPlugin* optimizer = nullptr;
  // DataHash (artifacts/run_manifest.h) of the receipts this run trains on.
  std::string data_hash;
  // --allow_recipe_change: a generation written with another recipe (the
  // optimizer's settings, lr_schedule, clip_grad_norm: RecipeFreeConfig,
  // config/config_loader.h) resumes with this config's.
  bool allow_recipe_change = false;
  // RunPluginSelections::world_size_dependence (config/run_plugins.h): when
  // empty, a generation written by another number of workers (same global
  // batch) resumes without checkpoint.allow_world_size_change, as if nothing
  // changed.
  std::string world_size_dependence = "the run's plugins were not consulted";
  // Its kill points, and its phase kill of phase save: SaveCheckpoint is
  // that phase, from the shard's bytes until the generation is advertised
  // to this rank.
  FaultPlan fault;
};

struct SaveResult {
  int64_t generation = 0;
  // Rank 0: the bytes of all shards, the save's wall time, one fsync'd
  // sequential write of as many bytes, and where the save's time went.
  // Other ranks: zeros.
  int64_t bytes = 0;
  double seconds = 0;
  double sequential_write_seconds = 0;
  SavePhases phases;
  // Rank 0: how long the update loop stood still for this save: the whole
  // save when synchronous; with checkpoint.async, the wait for the save
  // before it and the copy (checkpointing/async_save.h books it).
  double blocked_seconds = 0;
};

// A rank's part of a generation copied off the live model, optimizer and
// generator: what a background writer writes while training goes on.
struct SaveCopy {
  ShardState shard;
  TrainingCursor cursor;
  // The copy's wall time on this rank.
  double seconds = 0;
};

// Every rank calls it once, before training. Loads the chosen generation
// into `model`, `optimizer`, torch's CPU generator and `cursor` (untouched
// on a fresh start and on any error). Errors (never an exception):
//   FailedPrecondition  naming both sides, when the generation was written
//                       with another config or model, or with another
//                       world size and checkpoint.allow_world_size_change
//                       is false, or with another recipe and
//                       allow_recipe_change is false (or its MANIFEST
//                       predates recipe fingerprints);
//   DataLoss            when the newest generation is corrupt and
//                       stop_on_corruption is set or nothing is left; or
//                       when a shard that verifies holds what cannot be
//                       restored (a tensor LibTorch refuses, a missing
//                       cursor), naming the generation. `model` and
//                       `optimizer` may then be half loaded: the run must
//                       stop.
absl::StatusOr<ResumeRecord> ResumeFromCheckpoint(
    const RunCheckpointContext& context, Classifier& model,
    torch::optim::Optimizer& optimizer, TrainingCursor* cursor);

// Every rank calls it at the same completed update with the same
// `generation` (ResumeRecord::next_generation, then +1 per save); it
// returns once the generation is advertised. Errors (never an exception):
// SaveGeneration's (checkpoint/save_generation.h), the store's, Internal
// when LibTorch fails.
//
// `pruner` (rank 0's; nullptr on other ranks, or to prune inline): older
// generations are deleted in its thread once this one is advertised (and
// the sequential-write baseline taken), and the previous save's pruning is
// waited for (and its error returned) before this one starts;
// SaveResult.phases.prune is that wait.
absl::StatusOr<SaveResult> SaveCheckpoint(const RunCheckpointContext& context,
                                          int64_t generation, Classifier& model,
                                          torch::optim::Optimizer& optimizer,
                                          const TrainingCursor& cursor,
                                          BackgroundPruner* pruner = nullptr);

// SaveCheckpoint in two halves, for a save in the background
// (checkpoint.async): CopyForSave, on the training thread, copies this
// rank's owned tensors (to the CPU), torch's CPU generator state and the
// cursor (FailedPrecondition when a tensor is not finite, as
// SaveCheckpoint; Internal when LibTorch fails); WriteSaveCopy, on any
// thread, serialises the copy and runs the save protocol from there
// (every rank, the same generation) until the generation is advertised,
// touching neither model nor optimizer. SaveCheckpoint is the two in a
// row inside the kill phase `save`; a background writer holds the phase
// `save_background` around WriteSaveCopy.
absl::StatusOr<SaveCopy> CopyForSave(const RunCheckpointContext& context, Classifier& model,
                                     torch::optim::Optimizer& optimizer,
                                     const TrainingCursor& cursor);
absl::StatusOr<SaveResult> WriteSaveCopy(const RunCheckpointContext& context,
                                         int64_t generation, const SaveCopy& copy,
                                         BackgroundPruner* pruner = nullptr);

// The cursor a shard holds (its scalars "total_updates", "epoch",
// "update_in_epoch"). DataLoss "<what> lacks the cursor's '<name>'" when
// one is missing.
absl::StatusOr<TrainingCursor> CursorOf(const ShardState& shard, absl::string_view what);

// A run's whole state in memory, as a survivor of a lost rank hands it to
// its new group (trainer/live_membership.h): every replicated tensor (one
// owner: what a one-rank generation holds), the cursor, and where the
// cadence's numbering stands.
struct MemoryState {
  ShardState whole;
  TrainingCursor cursor;
  // The world size of the group that trained it, and the generation the
  // next save writes.
  int world_size = 1;
  std::vector<int> local_batch;
  int64_t next_generation = 1;
};

// Copies the whole replicated state of `model` and `optimizer` (to the
// CPU), torch's CPU generator and `cursor`. Errors as CopyForSave's.
absl::StatusOr<MemoryState> CopyWholeState(const RunCheckpointContext& context,
                                           Classifier& model,
                                           torch::optim::Optimizer& optimizer,
                                           const TrainingCursor& cursor);

// Every rank of a new group calls it once, before training, instead of
// ResumeFromCheckpoint: loads `state` (a peer's memory, as it came over the
// group) into `model`, `optimizer` and `cursor`; nothing is read from disk.
// The record says so (from_peer_memory, the world sizes, next_generation).
// DataLoss when `state` holds what cannot be restored (`model` and
// `optimizer` may then be half loaded: the run must stop).
absl::StatusOr<ResumeRecord> ResumeFromMemory(const RunCheckpointContext& context,
                                              const MemoryState& state, Classifier& model,
                                              torch::optim::Optimizer& optimizer,
                                              TrainingCursor* cursor);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CHECKPOINTING_RUN_CHECKPOINTS_H_

// What one rank's training run holds from its start to its artifacts:
// trainer/training_run.cc starts, resumes and trains it,
// trainer/run_finish.h ends it. Internal to //trainer:training_run.
#ifndef RECEIPT_PARITY_TRAINER_RUN_CONTEXT_H_
#define RECEIPT_PARITY_TRAINER_RUN_CONTEXT_H_

#include <memory>
#include <set>
#include <string>
#include <vector>

#include <c10/core/Device.h>
#include <torch/optim/optimizer.h>

#include "data/receipt_dataset.h"
#include "model/classifier.h"
#include "model/layer_audit.pb.h"
#include "artifacts/artifact_stamp.h"
#include "artifacts/run_manifest.pb.h"
#include "artifacts/resume_record.pb.h"
#include "data/example_source.h"
#include "data/receipt_tensors.h"
#include "checkpointing/run_checkpoints.h"
#include "trainer/run_examples.h"
#include "config/run_plugins.h"
#include "trainer/training_run_options.h"
#include "verify/update_verifier.h"

namespace receipt_parity {

// What a run needs before its first update.
struct RunInputs {
  // Loaded with LoadingFor(pixels): without pixels when they are rendered
  // on demand; once the run has started, only its image size and class
  // counts (its examples are RunData's).
  ReceiptSplit data;
  ExamplePixels pixels = ExamplePixels::kInMemory;
  RunPlugins plugins;
  std::shared_ptr<Classifier> model;
  // The model's layer audit, its policy applied (config/layer_policy.h).
  LayerAudit audit;
  // The run's checked updates (parity/whole_run_parity.h CheckUpdates):
  // recorded into trajectory/ on the writer, their loss summed over ranks.
  std::set<int64_t> check_updates;
  // The updates the run trains (every epoch's, or run.max_updates).
  int64_t run_length = 0;
};

// Everything a run holds from its start to its artifacts. Rank 0 is the
// writer.
// Run.stopped_by of a run stopped after a first update that failed parity
// (parity.stop_on_failure); finished.json's stopped_by.
inline constexpr char kStoppedByParity[] = "parity_failed";

struct Run {
  const TrainingRunOptions* options = nullptr;
  const TrainingConfig* config = nullptr;
  // Where the model, the batches and the gradients live.
  c10::Device device = c10::Device(c10::DeviceType::CPU);
  RunInputs inputs;
  RunData data;
  // DataHash of inputs.data: what the ranks agree on and checkpoints keep.
  std::string data_hash;
  RunManifest manifest;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::vector<int> local_batch;
  // Set when the run has a checkpoint plan (options->checkpoints).
  RunCheckpointContext checkpoints;
  TrainingCursor cursor;
  ResumeRecord resume;
  // What stopped the update loop before its schedule ended
  // (UpdateLoopEnd.stopped_by); empty when nothing did.
  std::string stopped_by;
  // The every-update checks (parity.every_update; on one worker its
  // accounting alone); nullptr when they are off.
  std::unique_ptr<UpdateVerifier> verifier;

  bool writer() const { return options->rank == 0; }
  ArtifactStamp stamp() const {
    return MakeArtifactStamp(options->loaded->fingerprint, options->attempt);
  }
  bool fresh() const { return cursor.total_updates == 0; }
  Classifier& model() const { return *inputs.model; }
  RunPlugins& plugins() { return inputs.plugins; }
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_TRAINER_RUN_CONTEXT_H_

#include "trainer/training_run.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <c10/util/hash.h>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/optim/optimizer.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "io/atomic_file.h"
#include "data/label_map.h"
#include "data/random_stream.h"
#include "data/receipt_dataset.h"
#include "logging/glog.h"
#include "runtime/heap_trim.h"
#include "runtime/preemption.h"
#include "model/classifier.h"
#include "parity/whole_run_parity.h"
#include "collectives/collective_error.h"
#include "reducers/gradient_reducer.h"
#include "samplers/sampler_policy.h"
#include "artifacts/run_manifest.pb.h"
#include "artifacts/resume_record.pb.h"
#include "checkpoint/phase_kill.h"
#include "checkpointing/async_save.h"
#include "checkpointing/checkpoint_cadence.h"
#include "trainer/compute_settings.h"
#include "config/device_check.h"
#include "config/layer_policy.h"
#include "config/plugin_kinds.h"
#include "runtime/heartbeat.h"
#include "trainer/membership_gate.h"
#include "trainer/preemption_gate.h"
#include "trainer/progress_log.h"
#include "trainer/rank_report_builder.h"
#include "data/receipt_tensors.h"
#include "checkpointing/run_checkpoints.h"
#include "trainer/run_context.h"
#include "trainer/run_finish.h"
#include "artifacts/run_folder.h"
#include "artifacts/run_manifest.h"
#include "config/run_model.h"
#include "config/run_plugins.h"
#include "trainer/update_loop.h"
#include "trainer/update_recorder.h"
#include "trainer/update_step.h"
#include "artifacts/world_size_change.h"
#include "weighting/loss_weighting.h"
#include "weighting/update_shares.h"

namespace receipt_parity {
namespace {

// Which updates a run of `config` runs, from update 0.
UpdateSchedule RunSchedule(const TrainingConfig& config, const SamplerPolicy& sampler,
                           int64_t num_examples, int world_size) {
  UpdateSchedule schedule;
  schedule.sampler = &sampler;
  schedule.num_examples = num_examples;
  schedule.world_size = world_size;
  schedule.seed = config.seeds().sampler();
  schedule.local_batch = LocalBatchSizes(config);
  schedule.epochs = config.epochs();
  schedule.max_updates = config.run().max_updates();
  return schedule;
}

// The learning-rate schedule serves the run's updates, every epoch's (a
// warmup longer than the run is refused, naming the option; run.max_updates
// only says where an attempt stops, as a multi-worker run's one-update
// reference does).
absl::Status CheckScheduleFitsRun(const LoadedConfig& loaded, int64_t epoch_updates,
                                  const RunInputs& inputs) {
  const absl::Status fits = inputs.plugins.schedule->CheckRun(epoch_updates);
  if (fits.ok()) return fits;
  return loaded.locator->Locate(
      absl::Status(fits.code(), absl::StrCat("lr_schedule.options: ", fits.message())));
}

// The updates this run trains: every epoch's, or run.max_updates when fewer.
int64_t RunLength(const TrainingConfig& config, int64_t epoch_updates) {
  const int64_t max_updates = config.run().max_updates();
  return max_updates > 0 ? std::min(max_updates, epoch_updates) : epoch_updates;
}

// The run's checked updates (parity.check_updates or the default), each
// inside the run.
absl::StatusOr<std::vector<int64_t>> RunCheckUpdates(const LoadedConfig& loaded,
                                                     int64_t run_length) {
  const std::vector<int64_t> configured(loaded.config.parity().check_updates().begin(),
                                        loaded.config.parity().check_updates().end());
  absl::StatusOr<std::vector<int64_t>> updates = CheckUpdates(configured, run_length);
  if (!updates.ok()) return loaded.locator->Locate(updates.status());
  return updates;
}

// run.fault's flipped bit names an update of the run.
absl::Status CheckCorruptionInRun(const LoadedConfig& loaded, int64_t run_length) {
  const FaultInjection& fault = loaded.config.run().fault();
  if (!fault.has_corrupt_update() || fault.corrupt_update() < run_length) return absl::OkStatus();
  return loaded.locator->Locate(absl::InvalidArgumentError(absl::StrCat(
      "run.fault.corrupt_update: update ", fault.corrupt_update(),
      " is beyond the run, whose updates are 0..", run_length - 1, " (", run_length,
      " updates)")));
}

// The receipts as `pixels` says; held pixels that would not fit in this
// machine's available memory are refused before any is made.
absl::StatusOr<ReceiptSplit> LoadRunReceipts(const LoadedConfig& loaded, ExamplePixels pixels) {
  const int64_t limit =
      pixels == ExamplePixels::kInMemory ? AvailableMemoryBytes().value_or(-1) : -1;
  absl::StatusOr<ReceiptSplit> data = LoadReceipts(loaded.data, LoadingFor(pixels), limit);
  if (!data.ok()) return loaded.locator->Locate(data.status());
  return data;
}

// The config, its plugins and its model settings were checked when it was
// loaded; this loads the data (its pixels as `pixels` says) and makes this
// run's plugins and model.
absl::StatusOr<RunInputs> PrepareRun(const LoadedConfig& loaded, ExamplePixels pixels) {
  RunInputs inputs;
  inputs.pixels = pixels;
  absl::StatusOr<ReceiptSplit> data = LoadRunReceipts(loaded, pixels);
  if (!data.ok()) return data.status();
  inputs.data = std::move(*data);
  absl::StatusOr<RunPlugins> plugins = loaded.plugins.Create();
  if (!plugins.ok()) return loaded.locator->Locate(plugins.status());
  inputs.plugins = std::move(*plugins);
  absl::StatusOr<int64_t> epoch_updates = RunUpdateCount(
      RunSchedule(loaded.config, *inputs.plugins.sampler,
                  static_cast<int64_t>(inputs.data.train.size()), loaded.config.world_size()));
  if (!epoch_updates.ok()) return loaded.locator->Locate(epoch_updates.status());
  if (absl::Status s = CheckScheduleFitsRun(loaded, *epoch_updates, inputs); !s.ok()) return s;
  inputs.run_length = RunLength(loaded.config, *epoch_updates);
  absl::StatusOr<std::vector<int64_t>> check_updates =
      RunCheckUpdates(loaded, inputs.run_length);
  if (!check_updates.ok()) return check_updates.status();
  inputs.check_updates = std::set<int64_t>(check_updates->begin(), check_updates->end());
  if (absl::Status s = CheckCorruptionInRun(loaded, inputs.run_length); !s.ok()) return s;
  absl::StatusOr<std::shared_ptr<Classifier>> model = loaded.model.Build();
  if (!model.ok()) return loaded.locator->Locate(model.status());
  inputs.model = std::move(*model);
  // parity.batch_dependent_layers: "refuse" stops a parity run here.
  absl::StatusOr<LayerAudit> audit = AuditRunModel(loaded, *inputs.model, loaded.config.world_size());
  if (!audit.ok()) return audit.status();
  inputs.audit = *std::move(audit);
  return inputs;
}

// The receipts' pixels are in RunData's tensors once they are made: their
// second copy goes (8 MB for the study's 2000 receipts of 32 x 32).
void ReleasePixels(ReceiptSplit* split) {
  for (std::vector<ReceiptExample>* part : {&split->train, &split->validation}) {
    for (ReceiptExample& e : *part) std::vector<float>().swap(e.pixels);
  }
}

// Once hashed and recorded, the examples themselves go too (72 bytes each
// without pixels: 72 MB of a million receipts): RunData's ids, labels and
// sources are what the run reads from then on.
void ReleaseExamples(ReceiptSplit* split) {
  std::vector<ReceiptExample>().swap(split->train);
  std::vector<ReceiptExample>().swap(split->validation);
}

// Hex SHA-1 of this executable's file: ranks built differently differ.
std::string ThisBinaryHash() {
  static const std::string* hash = [] {
    absl::StatusOr<std::string> bytes = ReadFileToString("/proc/self/exe");
    return new std::string(bytes.ok() ? c10::sha1(*bytes).str()
                                      : absl::StrCat("unreadable: ", bytes.status().message()));
  }();
  return *hash;
}

// What keeps ranks in step besides the fingerprint, which leaves out the
// operational settings: the checkpoint schedule, the update limit, the
// split, the collective timeout, the plugin libraries' contents and the
// binary.
std::vector<std::pair<std::string, std::string>> LockstepFields(const Run& run) {
  const TrainingConfig& config = *run.config;
  return {
      {"checkpoint", config.checkpoint().ShortDebugString()},
      {"max_updates", absl::StrCat(config.run().max_updates())},
      {"local_batch_sizes", absl::StrJoin(run.local_batch, ",")},
      {"collective_timeout_seconds",
       absl::StrCat(config.run().collective_timeout_seconds())},
      {"plugin_libraries",
       absl::StrJoin(run.options->loaded->plugin_libraries, ",",
                     [](std::string* out, const LoadedPluginLibrary& library) {
                       out->append(library.sha1);
                     })},
      {"binary", ThisBinaryHash()}};
}

// Every rank checks that all ranks start from the same config, model, data,
// plugins and schedule.
absl::Status AgreeWithPeers(const Run& run) {
  const TrainingRunOptions& options = *run.options;
  const TrainingConfig& config = *run.config;
  if (options.process_group == nullptr) return absl::OkStatus();
  std::vector<std::pair<std::string, std::string>> fields = {
      {"config_fingerprint", options.loaded->fingerprint},
      {"model_revision", run.manifest.model_revision().revision()},
      {"data", run.data_hash}};
  for (auto& kind_and_name : SelectedPluginNames(config)) {
    fields.push_back(std::move(kind_and_name));
  }
  for (auto& field : LockstepFields(run)) fields.push_back(std::move(field));
  absl::Status agreed = AgreeOnStart(*options.process_group->store, options.rank,
                                     options.world_size, fields);
  if (!agreed.ok()) return agreed;
  LOG(INFO) << "rank " << options.rank << ": all " << options.world_size
            << " ranks agree on config, model revision, data, plugins, "
               "checkpoint schedule, limits, split, timeout and binary";
  return absl::OkStatus();
}

// The model and every example tensor on the run's device (a no-op on the
// CPU). After the manifest, whose model revision hashes the parameters as
// they were built.
absl::Status MoveToDevice(Run* run) {
  if (run->device.is_cpu()) return absl::OkStatus();
  try {
    run->model().to(run->device);
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(
        e, absl::StrCat("moving the model to ", run->device.str(), ": LibTorch"));
  }
  for (ExampleSource* examples : {run->data.train.get(), run->data.validation.get()}) {
    if (absl::Status s = examples->MoveTo(run->device); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// Device and compute settings, data, plugins, model, manifest, start
// agreement, optimizer.
absl::Status StartRun(const TrainingRunOptions& options, Run* run) {
  const LoadedConfig& loaded = *options.loaded;
  run->options = &options;
  run->config = &loaded.config;
  try {
    run->device = RankDevice(loaded.config, options.local_rank);
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "choosing this rank's GPU: LibTorch");
  }
  absl::StatusOr<PlatformRecord> platform = ApplyComputeSettings(loaded.config, run->device);
  if (!platform.ok()) return platform.status();
  absl::StatusOr<RunInputs> inputs = PrepareRun(
      loaded, ChooseExamplePixels(loaded.data, options.render_pixels_above));
  if (!inputs.ok()) return inputs.status();
  run->inputs = std::move(*inputs);
  absl::StatusOr<RunData> data = MakeRunData(run->inputs.data, loaded.data, run->inputs.pixels,
                                             options.pixel_cache_bytes);
  if (!data.ok()) return data.status();
  run->data = std::move(*data);
  ReleasePixels(&run->inputs.data);
  // Streamed from the sources, before they move to the run's device.
  absl::StatusOr<std::string> data_hash =
      DataHash(run->inputs.data, *run->data.train, *run->data.validation);
  if (!data_hash.ok()) return data_hash.status();
  run->data_hash = *std::move(data_hash);
  try {
    run->manifest = MakeRunManifest(loaded, run->model(), run->inputs.data,
                                    options.world_size);
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "run_manifest.json: LibTorch");
  }
  *run->manifest.mutable_platform() = *std::move(platform);
  *run->manifest.mutable_audit() = run->inputs.audit;
  run->manifest.mutable_data()->set_pixels(ExamplePixelsName(run->inputs.pixels));
  if (run->inputs.pixels == ExamplePixels::kRenderedOnDemand) {
    run->manifest.mutable_data()->set_pixel_cache_bytes(options.pixel_cache_bytes);
  }
  ReleaseExamples(&run->inputs.data);
  if (absl::Status s = MoveToDevice(run); !s.ok()) return s;
  run->local_batch = LocalBatchSizes(*run->config);
  if (absl::Status s = AgreeWithPeers(*run); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<torch::optim::Optimizer>> optimizer =
      loaded.optimizer.plugin->Build(NamedParametersOf(run->model()));
  if (!optimizer.ok()) return loaded.locator->Locate(optimizer.status());
  run->optimizer = std::move(*optimizer);
  return absl::OkStatus();
}

// world_size_change.json: how the rest of the epoch is dealt to the new
// world (rank 0, after a resume across world sizes).
absl::Status ReportWorldSizeChange(Run& run) {
  const TrainingConfig& config = *run.config;
  WorldSizeChange change;
  change.policy = run.plugins().sampler.get();
  change.policy_name = config.sampler().name();
  change.receipt_ids = run.data.train_ids;
  change.seed = config.seeds().sampler();
  change.epoch = run.cursor.epoch;
  change.updates_done = run.cursor.update_in_epoch;
  // The saved run's split of the same global batch (CompareDataOrder
  // refuses another global batch).
  change.old_local_batch.assign(run.resume.saved_local_batch_sizes().begin(),
                                run.resume.saved_local_batch_sizes().end());
  change.new_local_batch = run.local_batch;
  change.stamp = run.stamp();
  return WriteWorldSizeChangeReport(
      change, run.options->artifact_dir + "/world_size_change.json");
}

// What the run's checkpoints (and its copies in memory) are made with.
void FillCheckpointContext(const Run& run, RunCheckpointContext* checkpoints) {
  const TrainingRunOptions& options = *run.options;
  if (options.checkpoints.has_value()) checkpoints->plan = *options.checkpoints;
  checkpoints->rank = options.rank;
  checkpoints->world_size = options.world_size;
  checkpoints->store =
      options.process_group ? options.process_group->store.get() : nullptr;
  checkpoints->config = run.config;
  checkpoints->model_revision = run.manifest.model_revision().revision();
  checkpoints->optimizer = options.loaded->optimizer.plugin.get();
  checkpoints->data_hash = run.data_hash;
  checkpoints->allow_recipe_change = options.allow_recipe_change;
  checkpoints->world_size_dependence = options.loaded->plugins.world_size_dependence;
  checkpoints->fault = options.fault;
}

// From a peer's memory (a new group after a lost rank), or with a
// checkpoint plan from the newest generation that verifies (or fresh).
absl::Status ResumeRun(Run* run) {
  const TrainingRunOptions& options = *run->options;
  FillCheckpointContext(*run, &run->checkpoints);
  absl::StatusOr<ResumeRecord> resumed;
  if (options.resume_from_memory != nullptr) {
    resumed = ResumeFromMemory(run->checkpoints, options.resume_from_memory->state,
                               run->model(), *run->optimizer, &run->cursor);
  } else if (options.checkpoints.has_value()) {
    resumed = ResumeFromCheckpoint(run->checkpoints, run->model(), *run->optimizer,
                                   &run->cursor);
  } else {
    return absl::OkStatus();
  }
  if (!resumed.ok()) return resumed.status();
  run->resume = *std::move(resumed);
  return absl::OkStatus();
}

// Rank 0, once the run knows where it starts: nothing an earlier attempt
// wrote is left stale beside this attempt's artifacts.
absl::Status PrepareArtifactFolder(Run& run) {
  if (!run.writer()) return absl::OkStatus();
  absl::StatusOr<std::vector<std::string>> removed =
      RemoveStaleArtifacts(run.options->artifact_dir, !run.fresh());
  if (!removed.ok()) return removed.status();
  if (!removed->empty()) {
    LOG(INFO) << "attempt " << run.options->attempt << ": removed what earlier attempts "
              << "left in " << run.options->artifact_dir << ": "
              << absl::StrJoin(*removed, ", ");
  }
  if (run.resume.world_size_changed()) return ReportWorldSizeChange(run);
  return absl::OkStatus();
}

// Writes the every-update checks' record (rank 0; nothing without checks).
absl::Status WriteEveryUpdateRecord(const Run& run, const EveryUpdateVerdict& record) {
  if (!run.writer() || run.verifier == nullptr) return absl::OkStatus();
  return WriteArtifact(run.options->artifact_dir + "/" + kEveryUpdateRecordFile, run.stamp(),
                       record);
}

// The every-update checks (parity.every_update; on one worker, the
// accounting alone), carrying on the record of the updates before a
// resumed attempt's start: every_update.json as the last save (or attempt)
// left it.
absl::StatusOr<std::unique_ptr<UpdateVerifier>> MakeVerifier(Run& run) {
  const TrainingRunOptions& options = *run.options;
  const TrainingConfig& config = *run.config;
  if (!config.parity().every_update()) return std::unique_ptr<UpdateVerifier>();
  UpdateVerifierOptions v;
  v.rank = options.rank;
  v.world_size = options.world_size;
  // One worker (a reference, or an attempt of a multi-worker run on one):
  // its accounting alone.
  if (options.world_size > 1 && options.process_group != nullptr) {
    v.group = options.process_group->gradient_group.get();
  }
  v.device = run.device;
  v.one_worker.policy = run.plugins().sampler.get();
  v.one_worker.num_examples = run.data.train->size();
  v.one_worker.seed = config.seeds().sampler();
  v.one_worker.weighting = run.plugins().weighting.get();
  v.one_worker.labels = &run.data.train_labels;
  v.one_worker.class_counts = &run.inputs.data.train_class_counts;
  v.one_worker.examples = run.data.train.get();
  v.receipt_ids = &run.data.train_ids;
  const GradientReducer& reducer = *run.plugins().reducer;
  v.reduced_divisor = reducer.reduced_divisor(options.world_size);
  const int chunk = reducer.chunk_slots();
  v.reduction_terms =
      chunk > 0 ? (config.global_batch() + chunk - 1) / chunk : options.world_size;
  const std::vector<at::Tensor> parameters = run.model().parameters();
  for (const at::Tensor& p : parameters) v.gradient_elements += p.numel();
  if (!parameters.empty()) v.unit_roundoff = UnitRoundoff(parameters.front().scalar_type());
  if (config.has_clip_grad_norm() && config.clip_grad_norm().scope() == "global") {
    v.clip_max_norm = config.clip_grad_norm().max_norm();
  }
  v.seed = MixSeed(config.seeds().sampler(), 0x76657269);  // "veri"
  auto verifier = std::make_unique<UpdateVerifier>(v);
  const LiveHandover* memory = options.resume_from_memory;
  if (memory != nullptr && memory->every_update.has_value()) {
    verifier->RestoreAfterLoss(
        *memory->every_update, run.cursor.total_updates,
        "its checks' reports cross the ranks with the next update's gradients, a reduction a "
        "lost rank abandoned (membership.json); the survivors' replicas agreed after it");
  } else if (!run.fresh()) {
    EveryUpdateVerdict earlier;
    const std::string path = options.artifact_dir + "/" + kEveryUpdateRecordFile;
    std::error_code ec;
    if (std::filesystem::exists(path, ec)) {
      if (absl::Status s = ReadArtifact(path, &earlier); !s.ok()) return s;
    }
    verifier->Restore(earlier, run.cursor.total_updates);
  }
  return verifier;
}

// A multi-worker parity run's writer keeps its checked updates' replay
// inputs (parity.replay); nullopt elsewhere.
std::optional<ReplayRecording> ReplayRecordingOf(const Run& run) {
  const TrainingConfig& config = *run.config;
  if (!run.writer() || run.options->reference_dir.empty() || !config.parity().replay() ||
      run.options->world_size < 2) {
    return std::nullopt;
  }
  ReplayRecording recording;
  recording.optimizer_state = [&run]() {
    return run.options->loaded->optimizer.plugin->SaveState(NamedParametersOf(run.model()),
                                                            *run.optimizer);
  };
  const GradientReducer* reducer = run.inputs.plugins.reducer.get();
  const WeightingInputs weighting{run.inputs.plugins.weighting.get(), &run.data.train_labels,
                                  &run.inputs.data.train_class_counts,
                                  config.accumulation_steps()};
  const int chunk_slots = reducer->chunk_slots();
  recording.shares = [weighting, chunk_slots](const EpochPlan& plan, int64_t update,
                                              RecordedUpdate* out) {
    if (chunk_slots > 0) {
      out->chunks = OrderedChunks(plan, update, chunk_slots, weighting);
      out->chunk_rows = ChunkRows(plan, chunk_slots);
    } else {
      out->shares = UpdateShares(plan, update, weighting);
    }
  };
  RecordedUpdate& header = recording.header;
  header.bf16 = config.precision() == "bf16";
  header.device = run.device.str();
  header.reduced_divisor = reducer->reduced_divisor(run.options->world_size);
  if (config.has_clip_grad_norm()) {
    header.clipping = GradientClipping{config.clip_grad_norm().max_norm(),
                                       config.clip_grad_norm().scope() == "global"};
  }
  recording.schedule = run.inputs.plugins.schedule.get();
  return recording;
}

UpdateRecorderOptions RecorderOptions(const Run& run) {
  UpdateRecorderOptions options;
  options.world_size = run.options->world_size;
  options.loss_weighting = run.config->loss_weighting().name();
  options.reducer = run.config->reducer().name();
  options.first_update = run.cursor.total_updates;
  options.writer = run.writer();
  options.record_updates = run.options->record_updates;
  options.artifact_dir = run.options->artifact_dir;
  options.receipt_ids = &run.data.train_ids;
  options.micro_batches = run.config->accumulation_steps();
  options.trajectory_updates = run.inputs.check_updates;
  options.stamp = run.stamp();
  options.defer_writes = true;  // no artifact write inside a timed update
  options.replay = ReplayRecordingOf(run);
  return options;
}

constexpr char kFirstUpdateParityKey[] = "parity/first_update_pass";

// parity.stop_on_failure: after a fresh parity run's first update, rank 0
// checks it against the reference and tells every rank, through the store,
// whether the run goes on; a failed first update stops every rank there.
class FirstUpdateParityGate : public UpdateGate {
 public:
  FirstUpdateParityGate(const Run& run, const UpdateRecorder& recorder)
      : run_(run), recorder_(recorder) {}

  absl::StatusOr<std::optional<GateStop>> AfterUpdate(int64_t completed) override {
    if (completed != 1) return std::optional<GateStop>();
    absl::StatusOr<bool> pass = Agree();
    if (!pass.ok()) return pass.status();
    if (*pass) return std::optional<GateStop>();
    LOG(ERROR) << "rank " << run_.options->rank
               << ": the first update failed parity; parity.stop_on_failure stops the run "
                  "here (see parity.json when it is written)";
    return std::optional<GateStop>(GateStop{kStoppedByParity, /*save=*/false});
  }

 private:
  absl::StatusOr<bool> Agree() {
    const TrainingRunOptions& options = *run_.options;
    bool pass = true;
    if (run_.writer()) {
      absl::StatusOr<ParityReport> parity =
          FirstUpdateParity(run_, recorder_.first_step(), /*ranks_agree=*/true);
      if (!parity.ok()) return parity.status();
      pass = parity->pass();
    }
    if (options.process_group == nullptr) return pass;
    try {
      c10d::Store& store = *options.process_group->store;
      if (run_.writer()) {
        store.set(kFirstUpdateParityKey, std::vector<uint8_t>{pass ? uint8_t{1} : uint8_t{0}});
        return pass;
      }
      const std::vector<uint8_t> value = store.get(kFirstUpdateParityKey);
      return !value.empty() && value[0] == 1;
    } catch (const std::exception& e) {
      return CollectiveErrorToStatus(
          e, absl::StrCat("rank ", options.rank, ": agreeing on the first update's parity"));
    }
  }

  const Run& run_;
  const UpdateRecorder& recorder_;
};

// run.fault's flipped bit, armed when the config sets it.
GradientCorruption CorruptionOf(const FaultInjection& fault) {
  GradientCorruption corruption;
  corruption.armed = fault.has_corrupt_rank();
  corruption.rank = fault.corrupt_rank();
  corruption.update = fault.corrupt_update();
  corruption.bit = fault.corrupt_bit();
  return corruption;
}

// What the replica check compares besides the parameters after update T:
// the optimizer's state when a generation is saved after T (its tensors by
// name), nothing otherwise.
std::vector<ReplicaTensor> OptimizerStateBeforeSave(const Run& run, const CheckpointCadence& cadence,
                                                 int64_t total_update) {
  std::vector<ReplicaTensor> state;
  if (!cadence.SavesAfter(total_update + 1)) return state;
  absl::StatusOr<OptimizerState> saved = run.options->loaded->optimizer.plugin->SaveState(
      NamedParametersOf(run.model()), *run.optimizer);
  if (!saved.ok()) {
    LOG(WARNING) << "the replica check leaves the optimizer's state out: " << saved.status();
    return state;
  }
  for (auto& [name, tensor] : *saved) state.emplace_back("optimizer state " + name, tensor);
  return state;
}

// Where the update loop stood when it ended (or failed).
struct TrainProgress {
  LoopPosition position;
  int64_t updates_stepped = -1;
};

// The updates from the cursor to the run's end; `recorder`, `cadence` and
// `report` keep what they recorded, saved and counted, `standing` where
// the loop stood.
absl::StatusOr<UpdateLoopEnd> Train(Run& run, UpdateRecorder* recorder,
                                    CheckpointCadence* cadence, RankReportBuilder* report,
                                    TrainProgress* standing) {
  const TrainingRunOptions& options = *run.options;
  const TrainingConfig& config = *run.config;
  UpdateStepParts step_parts;
  step_parts.model = &run.model();
  step_parts.optimizer = run.optimizer.get();
  step_parts.weighting = run.plugins().weighting.get();
  step_parts.reducer = run.plugins().reducer.get();
  step_parts.group =
      options.process_group ? options.process_group->gradient_group.get() : nullptr;
  step_parts.rank = options.rank;
  step_parts.examples = run.data.train.get();
  step_parts.labels = &run.data.train_labels;
  step_parts.class_counts = &run.inputs.data.train_class_counts;
  step_parts.phase_kill = options.fault.phase;
  step_parts.micro_batches = config.accumulation_steps();
  step_parts.bf16 = config.precision() == "bf16";
  step_parts.schedule = run.plugins().schedule.get();
  step_parts.whole_loss_updates = &run.inputs.check_updates;
  if (config.has_clip_grad_norm()) {
    step_parts.clipping = GradientClipping{config.clip_grad_norm().max_norm(),
                                           config.clip_grad_norm().scope() == "global"};
  }
  step_parts.corruption = CorruptionOf(config.run().fault());
  step_parts.verifier = run.verifier.get();
  step_parts.skip_step_after_failed_check = config.parity().stop_on_failure();
  step_parts.replica_extras = [&run, cadence](int64_t total_update) {
    return OptimizerStateBeforeSave(run, *cadence, total_update);
  };
  UpdateStep step(step_parts);

  UpdateSchedule schedule =
      RunSchedule(config, *run.plugins().sampler,
                  run.data.train->size(), options.world_size);
  schedule.start = run.cursor;

  const ProgressLog progress({run.writer(), config.run().log_every_updates(),
                              config.run().max_updates(), config.epochs()});
  if (absl::Status s = recorder->Start(run.model()); !s.ok()) return s;
  FirstUpdateParityGate parity_gate(run, *recorder);
  PreemptionGate preemption_gate(
      options.process_group ? options.process_group->group.get() : nullptr, options.rank,
      std::chrono::seconds(config.run().preemption_grace_seconds()), PreemptionRequested,
      [cadence] { return cadence->LongestSaveSeconds(); });
  // Survivors that go on stop together for a membership that takes a
  // replacement in.
  MembershipGate membership_gate(
      options.process_group ? options.process_group->group.get() : nullptr, options.rank,
      NewMembershipPublished);
  std::vector<UpdateGate*> gates;
  if (options.preemptible && options.checkpoints.has_value()) gates.push_back(&preemption_gate);
  if (options.live != nullptr && options.process_group != nullptr) {
    gates.push_back(&membership_gate);
  }
  if (!options.reference_dir.empty() && run.fresh() && config.parity().stop_on_failure()) {
    gates.push_back(&parity_gate);
  }
  GateChain chain(gates);
  UpdateLoopParts loop;
  loop.step = &step;
  loop.observer = recorder;
  loop.cadence = cadence;
  loop.progress = &progress;
  loop.report = report;
  loop.gate = gates.empty() ? nullptr : &chain;
  if (config.parity().stop_on_failure()) loop.failed_check_stop = kStoppedByParity;
  loop.position = &standing->position;
  absl::StatusOr<UpdateLoopEnd> end = RunUpdateLoop(schedule, loop);
  standing->updates_stepped = step.updates_stepped();
  return end;
}

// After the update loop failed (TrainingRunOptions::live): the whole state
// at the last update this rank stepped (the one in flight when its step
// was applied), for its rank to go on with in a new group. A copy that
// fails leaves the handover unfilled: the loop's error then stands.
void HandOver(Run& run, const TrainProgress& progress, const CheckpointCadence& cadence,
              LiveHandover* live) {
  live->failed_at = std::chrono::steady_clock::now();
  const LoopPosition& at = progress.position;
  const bool in_flight = at.after_in_flight.total_updates > at.completed.total_updates;
  const bool stepped =
      in_flight && progress.updates_stepped == at.after_in_flight.total_updates;
  absl::StatusOr<MemoryState> state =
      CopyWholeState(run.checkpoints, run.model(), *run.optimizer,
                     stepped ? at.after_in_flight : at.completed);
  if (!state.ok()) {
    LOG(ERROR) << "rank " << run.options->rank << ": cannot copy the state to go on with: "
               << state.status();
    return;
  }
  live->state = *std::move(state);
  live->state.local_batch = run.local_batch;
  live->state.next_generation = cadence.next_generation();
  live->abandoned_in_flight = in_flight && !stepped;
  live->attempt = run.options->attempt;
  if (run.verifier != nullptr) live->every_update = run.verifier->record();
  live->filled = true;
}

// A preempted attempt: its record in run_state.json (rank 0), nothing else.
absl::StatusOr<TrainingOutcome> EndPreempted(const Run& run, const UpdateLoopEnd& end,
                                             const RankReportBuilder& report) {
  TrainingOutcome outcome;
  outcome.preempted = true;
  outcome.saved_at_stop = end.saved_at_stop;
  outcome.updates = report.updates();
  const int64_t total = run.cursor.total_updates + report.updates();
  if (run.writer() && run.options->folder != nullptr) {
    if (absl::Status s = RecordAttemptEnd(run.options->artifact_dir, kStoppedByPreemption, total,
                                          end.saved_at_stop);
        !s.ok()) {
      return s;
    }
  }
  LOG(WARNING) << "rank " << run.options->rank << ": preempted after update " << total
               << (end.saved_at_stop ? ", generation saved there" : ", no generation saved there")
               << "; run the same command again to resume";
  return outcome;
}

// checkpoint.async: copies the state on this thread (the kill phase
// `save`) and returns the write, which runs in the cadence's writer thread
// (the kill phase `save_background`) while training goes on. The
// every-update record goes with the copy, written (rank 0) before the
// generation it describes is advertised.
absl::StatusOr<AsyncSaveWriter::Write> StartBackgroundSave(Run& run, int64_t generation,
                                                           const TrainingCursor& cursor) {
  const RunCheckpointContext& context = run.checkpoints;
  const PhaseKillScope injected_kill(context.fault.phase, KillPhase::kSave, context.rank,
                                     cursor.total_updates);
  absl::StatusOr<SaveCopy> copy = CopyForSave(context, run.model(), *run.optimizer, cursor);
  if (!copy.ok()) return copy.status();
  auto held = std::make_shared<const SaveCopy>(*std::move(copy));
  std::shared_ptr<const EveryUpdateVerdict> record;
  if (run.verifier != nullptr) {
    record = std::make_shared<const EveryUpdateVerdict>(run.verifier->record());
  }
  return AsyncSaveWriter::Write([&run, &context, generation, held,
                                 record]() -> absl::StatusOr<SaveResult> {
    const PhaseKillScope injected_kill(context.fault.phase, KillPhase::kSaveBackground,
                                       context.rank, held->cursor.total_updates);
    if (record != nullptr) {
      if (absl::Status s = WriteEveryUpdateRecord(run, *record); !s.ok()) return s;
    }
    return WriteSaveCopy(context, generation, *held);
  });
}

// The run's saves: in the background (checkpoint.async), or on the
// training thread with `pruner` (rank 0's, or nullptr) deleting old ones.
CheckpointCadence MakeCadence(Run& run, BackgroundPruner* pruner) {
  const std::optional<CheckpointPlan>& plan = run.options->checkpoints;
  if (plan.has_value() && plan->async) {
    return CheckpointCadence::InBackground(
        plan, run.resume.next_generation(),
        [&run](int64_t generation, const TrainingCursor& cursor) {
          return StartBackgroundSave(run, generation, cursor);
        });
  }
  return CheckpointCadence(plan, run.resume.next_generation(),
                           [&run, pruner](int64_t generation, const TrainingCursor& cursor)
                               -> absl::StatusOr<SaveResult> {
                             if (run.verifier != nullptr) {
                               absl::Status s = WriteEveryUpdateRecord(run, run.verifier->record());
                               if (!s.ok()) return s;
                             }
                             return SaveCheckpoint(run.checkpoints, generation, run.model(),
                                                   *run.optimizer, cursor, pruner);
                           });
}

}  // namespace

absl::Status CheckRunnable(const LoadedConfig& loaded) {
  return PrepareRun(loaded, ChooseExamplePixels(loaded.data, kRenderPixelsAbove)).status();
}

absl::StatusOr<TrainingOutcome> RunTraining(const TrainingRunOptions& options) {
  Run run;
  if (absl::Status s = StartRun(options, &run); !s.ok()) return s;
  // A new group after a lost rank goes on in the attempt it was in.
  if (options.folder != nullptr && run.writer() && options.resume_from_memory == nullptr) {
    if (absl::Status s = BeginAttempt(options.artifact_dir, *run.config, *options.folder);
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = ResumeRun(&run); !s.ok()) return s;
  if (absl::Status s = PrepareArtifactFolder(run); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<UpdateVerifier>> verifier = MakeVerifier(run);
  if (!verifier.ok()) return verifier.status();
  run.verifier = *std::move(verifier);

  UpdateRecorder recorder(RecorderOptions(run));
  // Rank 0 deletes generations past keep_last off the update loop (a
  // background save prunes in its own thread).
  std::optional<BackgroundPruner> pruner;
  const bool async_save = options.checkpoints.has_value() && options.checkpoints->async;
  if (options.rank == 0 && options.checkpoints.has_value() && !async_save &&
      options.checkpoints->keep_last > 0) {
    pruner.emplace(options.checkpoints->folder, options.checkpoints->keep_last);
  }
  CheckpointCadence cadence = MakeCadence(run, pruner ? &*pruner : nullptr);
  RankReportBuilder report(options.rank, options.world_size,
                           run.data.train->size());
  TrainProgress progress;
  // A failure from here on, where survivors go on, hands the state over
  // (a lost rank's collective or store wait).
  auto failed = [&](absl::Status status) {
    if (options.live != nullptr) HandOver(run, progress, cadence, options.live);
    return status;
  };
  absl::StatusOr<UpdateLoopEnd> end = Train(run, &recorder, &cadence, &report, &progress);
  if (!end.ok()) return failed(end.status());
  // Every save started is advertised, and retention done (keep_last
  // generations on disk), before the run ends.
  if (absl::Status s = cadence.Finish(); !s.ok()) return failed(s);
  if (pruner.has_value()) {
    if (absl::Status s = pruner->Wait(); !s.ok()) return s;
  }
  if (end->stopped_by == kStoppedByMembership) {
    // Nothing in flight: the grown group goes on from this update.
    HandOver(run, progress, cadence, options.live);
    TrainingOutcome outcome;
    outcome.membership_changed = options.live->filled;
    if (!outcome.membership_changed) {
      return absl::InternalError("cannot copy the state for the grown group");
    }
    outcome.updates = report.updates();
    return outcome;
  }
  report.FinishLoop();
  if (run.verifier != nullptr) {
    if (absl::Status s = WriteEveryUpdateRecord(run, run.verifier->record()); !s.ok()) return s;
  }
  if (end->stopped_by == kStoppedByPreemption) {
    if (absl::Status s = WritePreemptedCurves(run, report); !s.ok()) return s;
    return EndPreempted(run, *end, report);
  }
  run.stopped_by = end->stopped_by;
  // No artifact of a model that a last step made non-finite; a run its
  // checks stopped says why in its parity.json (a corrupted update may have
  // left the parameters so), and saved nothing after it.
  if (absl::Status s = CheckParametersFinite(run.model(), options.rank,
                                             run.cursor.total_updates);
      !s.ok()) {
    if (run.stopped_by != kStoppedByParity) return s;
    LOG(WARNING) << s.message() << " (after the update the every-update checks stopped at)";
  }

  absl::StatusOr<TrainingOutcome> outcome =
      FinishRun(run, report, recorder.first_step(), cadence.cost());
  if (!outcome.ok()) return failed(outcome.status());
  return outcome;
}

}  // namespace receipt_parity

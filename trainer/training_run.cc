#include "trainer/training_run.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <ATen/Parallel.h>
#include <torch/optim/optimizer.h>

#include "absl/strings/str_cat.h"
#include "data/label_map.h"
#include "data/receipt_dataset.h"
#include "glog/logging.h"
#include "io/json_file.h"
#include "metrics/metric_dedup.h"
#include "model/classifier.h"
#include "model/weighted_loss.h"
#include "reducers/gradient_reducer.h"
#include "samplers/audit.h"
#include "samplers/sampler_policy.h"
#include "trainer/artifacts.pb.h"
#include "trainer/epoch_accounting.h"
#include "trainer/first_step_record.h"
#include "trainer/optimizer_factory.h"
#include "trainer/plugin_kinds.h"
#include "trainer/receipt_tensors.h"
#include "trainer/run_checkpoints.h"
#include "trainer/run_manifest.h"
#include "trainer/run_parity.h"
#include "trainer/run_plugins.h"
#include "trainer/run_summary_builder.h"
#include "trainer/validation_pass.h"
#include "trainer/world_size_change.h"
#include "weighting/loss_weighting.h"

namespace receipt_parity {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kWarmupUpdates = 2;

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// This process's peak resident set (VmHWM). Not getrusage's ru_maxrss:
// Linux carries that over from the launcher across fork and exec, so every
// worker would report at least the launcher's peak.
double PeakRssMib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      return std::strtod(line.c_str() + 6, nullptr) / 1024.0;  // in kB
    }
  }
  return 0;
}

// Rank 0 collects every rank's report through the store.
absl::StatusOr<std::vector<RankReport>> CollectReports(
    const TrainingRunOptions& options, const RankReport& mine) {
  if (options.process_group == nullptr) return std::vector<RankReport>{mine};
  return GatherOnRankZero(*options.process_group->store, "report", options.rank,
                          options.world_size, mine);
}

void LogProgress(int64_t total, int64_t planned, int epoch, double loss_share,
                 int64_t run_updates, double elapsed) {
  LOG(INFO) << "update " << total << "/" << planned << " (epoch " << epoch
            << ") rank-0 loss share " << loss_share << ", "
            << run_updates / elapsed << " updates/s, ETA "
            << std::max<double>(0, (planned - total) * elapsed / run_updates) << " s";
}

// What a run needs before its first update.
struct RunInputs {
  ReceiptSplit data;
  RunPlugins plugins;
  std::shared_ptr<Classifier> model;
};

// The config, its plugins and its model settings were checked when it was
// loaded; this loads the data and makes this run's plugins and model.
absl::StatusOr<RunInputs> PrepareRun(const LoadedConfig& loaded) {
  RunInputs inputs;
  absl::StatusOr<ReceiptSplit> data = LoadReceipts(loaded.config.data());
  if (!data.ok()) return loaded.locator->Locate(data.status());
  inputs.data = std::move(*data);
  absl::StatusOr<RunPlugins> plugins = loaded.plugins.Create();
  if (!plugins.ok()) return loaded.locator->Locate(plugins.status());
  inputs.plugins = std::move(*plugins);
  absl::StatusOr<std::shared_ptr<Classifier>> model = BuildClassifier(loaded.model);
  if (!model.ok()) return loaded.locator->Locate(model.status());
  inputs.model = std::move(*model);
  return inputs;
}

}  // namespace

absl::Status CheckRunnable(const LoadedConfig& loaded) {
  return PrepareRun(loaded).status();
}

absl::StatusOr<TrainingOutcome> RunTraining(const TrainingRunOptions& options) {
  const LoadedConfig& loaded = *options.loaded;
  const TrainingConfig& config = loaded.config;
  const int rank = options.rank;
  const int world = options.world_size;
  const bool writer = rank == 0;
  at::set_num_threads(config.run().intra_op_threads());

  absl::StatusOr<RunInputs> inputs = PrepareRun(loaded);
  if (!inputs.ok()) return inputs.status();
  const ReceiptSplit* data = &inputs->data;
  RunPlugins* plugins = &inputs->plugins;
  Classifier& model = *inputs->model;
  const ExampleTensors train = ToTensors(data->train, data->image_size);
  const ExampleTensors validation = ToTensors(data->validation, data->image_size);
  std::vector<std::string> train_ids, validation_ids;
  std::vector<int> train_labels;
  for (const ReceiptExample& e : data->train) {
    train_ids.push_back(e.receipt_id);
    train_labels.push_back(e.label);
  }
  for (const ReceiptExample& e : data->validation) validation_ids.push_back(e.receipt_id);

  RunManifest manifest = MakeRunManifest(loaded, model, *data, world);

  if (options.process_group != nullptr) {
    std::vector<std::pair<std::string, std::string>> fields = {
        {"config_fingerprint", manifest.config_fingerprint()},
        {"model_revision", manifest.model_revision().revision()},
        {"data", DataHash(*data)}};
    for (auto& kind_and_name : SelectedPluginNames(config)) {
      fields.push_back(std::move(kind_and_name));
    }
    absl::Status agreed = AgreeOnStart(*options.process_group->store, rank, world, fields);
    if (!agreed.ok()) return agreed;
    LOG(INFO) << "rank " << rank << ": all " << world
              << " ranks agree on config, model revision, data and plugins";
  }
  absl::StatusOr<std::unique_ptr<torch::optim::Optimizer>> optimizer =
      BuildOptimizer(config.optimizer(), model.parameters());
  if (!optimizer.ok()) return loaded.locator->Locate(optimizer.status());

  const std::vector<int> local_batch = LocalBatchSizes(config);
  FirstStep first_step;
  first_step.set_world_size(world);
  first_step.set_loss_weighting(config.loss_weighting().name());
  first_step.set_reducer(config.reducer().name());
  for (const auto& item : model.named_parameters()) first_step.add_parameter_order(item.key());
  StoreNamedTensors(SnapshotParameters(model), first_step.mutable_parameters_before());

  TrainingCursor cursor;
  ResumeRecord resume;
  RunCheckpointContext checkpoints;
  const bool checkpointing =
      !options.checkpoint_dir.empty() && config.checkpoint().every_updates() > 0;
  if (checkpointing) {
    checkpoints.root = options.checkpoint_dir;
    checkpoints.rank = rank;
    checkpoints.world_size = world;
    checkpoints.store = options.process_group ? options.process_group->store.get() : nullptr;
    checkpoints.config = &config;
    checkpoints.model_revision = manifest.model_revision().revision();
    checkpoints.fault = options.fault;
    absl::StatusOr<ResumeRecord> resumed =
        ResumeFromCheckpoint(checkpoints, model, **optimizer, &cursor);
    if (!resumed.ok()) return resumed.status();
    resume = *resumed;
  }
  const bool fresh = cursor.total_updates == 0;
  if (resume.world_size_changed() && writer) {
    WorldSizeChange change;
    change.policy = plugins->sampler.get();
    change.policy_name = config.sampler().name();
    change.receipt_ids = train_ids;
    change.seed = config.seeds().sampler();
    change.epoch = cursor.epoch;
    change.updates_done = cursor.update_in_epoch;
    // The saved run split the same global batch evenly (CompareDataOrder
    // refuses another global batch).
    change.old_local_batch.assign(resume.saved_world_size(),
                                  config.global_batch() / resume.saved_world_size());
    change.new_local_batch = local_batch;
    if (absl::Status s = WriteWorldSizeChangeReport(
            change, options.artifact_dir + "/world_size_change.json");
        !s.ok()) {
      return s;
    }
  }

  int64_t next_generation = resume.next_generation();

  RankReport report;
  report.set_rank(rank);
  RunTotals totals;
  totals.world_size = world;
  totals.training_views = static_cast<int64_t>(data->train.size());
  totals.warmup_updates = kWarmupUpdates;
  CheckpointCost cost;
  const int64_t max_updates = config.run().max_updates();
  int64_t total = cursor.total_updates;
  int64_t run_updates = 0;
  bool stop = false;
  const Clock::time_point run_start = Clock::now();
  try {
    for (int epoch = cursor.epoch; epoch < config.epochs() && !stop; ++epoch) {
      OrderRequest request;
      request.num_examples = static_cast<int64_t>(data->train.size());
      request.world_size = world;
      request.seed = config.seeds().sampler();
      request.epoch = epoch;
      absl::StatusOr<EpochPlan> plan =
          BuildEpochPlan(*plugins->sampler, request, local_batch);
      if (!plan.ok()) return plan.status();
      const int64_t first_in_epoch = epoch == cursor.epoch ? cursor.update_in_epoch : 0;
      int64_t u = first_in_epoch;
      for (; u < plan->num_updates(); ++u) {
        if (max_updates > 0 && total >= max_updates) {
          stop = true;
          break;
        }
        const Clock::time_point start = Clock::now();
        const absl::Span<const Slot> slots = plan->UpdateSlots(rank, u);
        const std::vector<double> weights = plugins->weighting->Weights(
            ComposeUpdate(*plan, u, train_labels, data->train_class_counts), rank);
        const ExampleTensors batch = SelectSlots(train, slots);
        absl::StatusOr<WeightedBackwardResult> backward =
            WeightedBackward(model, batch.images, batch.labels, weights);
        if (!backward.ok()) return backward.status();
        const Clock::time_point sync_start = Clock::now();
        if (options.process_group != nullptr) {
          std::vector<at::Tensor> grads = Gradients(model);
          absl::Status reduced =
              plugins->reducer->Reduce(grads, *options.process_group->group);
          if (!reduced.ok()) {
            return absl::Status(reduced.code(),
                                absl::StrCat("rank ", rank, ", update ", total,
                                             ": ", reduced.message()));
          }
        }
        const double sync_seconds = Seconds(Clock::now() - sync_start);
        // The first update of a fresh run (first_step.json, parity), and the
        // updates asked for (update-K.json; the first resumed one always).
        const bool record_first = fresh && total == 0;
        const bool record_update = writer && (options.record_updates.count(total) > 0 ||
                                              (!fresh && run_updates == 0));
        FirstStep update_record;
        FirstStep* record = record_first ? &first_step : &update_record;
        if (record_first || record_update) {
          StoreNamedTensors(SnapshotGradients(model), record->mutable_gradients());
        }
        (*optimizer)->step();
        if (record_first || record_update) {
          record->set_world_size(world);
          StoreNamedTensors(SnapshotParameters(model), record->mutable_parameters_after());
          record->set_accepted_examples(static_cast<int32_t>(plan->GlobalAcceptedCount(u)));
          record->set_loss(backward->weighted_loss);
          RecordBatch(*plan, u, train_ids, record);
        }
        if (record_update) {
          for (const std::string& name : first_step.parameter_order()) {
            update_record.add_parameter_order(name);
          }
          std::filesystem::create_directories(options.artifact_dir);
          if (absl::Status s = WriteJsonFile(
                  absl::StrCat(options.artifact_dir, "/update-", total, ".json"),
                  update_record);
              !s.ok()) {
            return s;
          }
        }
        const double update_seconds = Seconds(Clock::now() - start);
        report.add_update_loss(backward->weighted_loss);
        if (run_updates >= kWarmupUpdates) {
          report.mutable_timing()->add_update_seconds(update_seconds);
          report.mutable_timing()->add_sync_seconds(sync_seconds);
          report.mutable_timing()->add_update_examples(static_cast<int32_t>(slots.size()));
        }
        totals.accepted_per_update.push_back(plan->GlobalAcceptedCount(u));
        totals.epoch_of_update.push_back(epoch);
        manifest.add_accepted_examples_per_update(
            static_cast<int32_t>(plan->GlobalAcceptedCount(u)));
        ++total;
        ++run_updates;
        if (checkpointing && total % config.checkpoint().every_updates() == 0) {
          const bool epoch_done = u + 1 == plan->num_updates();
          TrainingCursor at{total, epoch_done ? epoch + 1 : epoch,
                            epoch_done ? 0 : u + 1};
          absl::StatusOr<SaveResult> saved =
              SaveCheckpoint(checkpoints, next_generation++, model, **optimizer, at);
          if (!saved.ok()) return saved.status();
          cost.set_generations_saved(cost.generations_saved() + 1);
          cost.set_bytes_per_generation(static_cast<double>(saved->bytes));
          cost.add_save_seconds(saved->seconds);
          cost.add_sequential_write_seconds(saved->sequential_write_seconds);
        }
        if (writer && total % config.run().log_every_updates() == 0) {
          LogProgress(total, max_updates > 0 ? max_updates
                                             : plan->num_updates() * config.epochs(),
                      epoch, backward->weighted_loss, run_updates,
                      Seconds(Clock::now() - run_start));
        }
      }
      for (const EpochRankRecord& rec : AccountEpoch(*plan, first_in_epoch, u)) {
        if (rec.rank() == rank) *report.add_per_rank() = rec;
      }
    }
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("rank ", rank, ": LibTorch: ",
                                            e.what_without_backtrace()));
  }
  manifest.set_updates(static_cast<int32_t>(run_updates));

  ValidationInputs val;
  val.examples = &validation;
  val.receipt_ids = &validation_ids;
  val.policy = plugins->sampler.get();
  val.seed = config.seeds().sampler();
  val.dedup = plugins->dedup.get();
  val.dedup_name = config.metric_dedup().name();
  val.rank = rank;
  val.world_size = world;
  val.group = options.process_group ? options.process_group->group.get() : nullptr;
  absl::StatusOr<ValidationReport> validation_report = RunValidation(model, val);
  if (!validation_report.ok()) return validation_report.status();

  const ReduceStats stats = plugins->reducer->stats();
  report.mutable_timing()->set_rank(rank);
  report.mutable_timing()->set_peak_rss_mib(PeakRssMib());
  report.mutable_timing()->set_collectives(static_cast<int32_t>(stats.collectives));
  report.mutable_timing()->set_bytes_reduced(static_cast<double>(stats.bytes));
  report.set_final_parameter_hash(ParameterHash(model));
  absl::StatusOr<std::vector<RankReport>> reports = CollectReports(options, report);
  if (!reports.ok()) return reports.status();

  TrainingOutcome outcome;
  outcome.updates = run_updates;
  if (!writer) return outcome;

  const std::string& dir = options.artifact_dir;
  std::filesystem::create_directories(dir);
  RunSummary summary = BuildRunSummary(totals, *reports);
  summary.set_config_fingerprint(manifest.config_fingerprint());
  summary.set_final_parameter_hash(report.final_parameter_hash());
  summary.set_resumed_from_generation(resume.generation());
  summary.set_first_update(static_cast<int32_t>(cursor.total_updates));
  FinishCheckpointCost(&cost);
  *summary.mutable_checkpoint() = cost;
  if (!options.reference_dir.empty() && fresh) {
    bool ranks_agree = true;
    for (const RankReport& r : *reports) {
      ranks_agree &= r.final_parameter_hash() == report.final_parameter_hash();
    }
    absl::StatusOr<ParityReport> parity =
        CheckRunParity(first_step, options.reference_dir, config, ranks_agree);
    if (!parity.ok()) return parity.status();
    outcome.parity_checked = true;
    outcome.parity_pass = parity->pass();
    summary.set_parity(parity->pass() ? "pass" : "fail");
    if (absl::Status s = WriteJsonFile(dir + "/parity.json", *parity); !s.ok()) return s;
  }
  absl::StatusOr<SamplerAudit> audit = AuditSampler(
      *plugins->sampler, config.sampler().name(), train_ids, world,
      config.seeds().sampler(), config.epochs(), local_batch);
  if (!audit.ok()) return audit.status();
  if (checkpointing && (resume.generation() > 0 || resume.skipped_size() > 0 ||
                        resume.cleaned_up_size() > 0)) {
    if (absl::Status s = WriteJsonFile(dir + "/resume.json", resume); !s.ok()) return s;
  }
  std::vector<std::pair<std::string, const google::protobuf::Message*>> artifacts = {
      {"run_manifest.json", &manifest},
      {"run_summary.json", &summary},
      {"validation.json", &*validation_report},
      {"sampler_audit.json", &*audit}};
  if (fresh) artifacts.push_back({"first_step.json", &first_step});
  for (const auto& [name, message] : artifacts) {
    if (absl::Status s = WriteJsonFile(dir + "/" + name, *message); !s.ok()) return s;
  }
  LOG(INFO) << "trained " << run_updates << " updates on " << world << " worker(s): final loss "
            << summary.final_loss() << ", validation accuracy "
            << validation_report->accuracy() << " ("
            << validation_report->unique_ids_counted() << " receipts counted once, "
            << validation_report->duplicates_dropped() << " duplicates dropped); "
            << "artifacts in " << dir;
  return outcome;
}

}  // namespace receipt_parity

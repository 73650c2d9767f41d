#include "trainer/training_run.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <filesystem>

#include <ATen/Parallel.h>
#include <c10/util/hash.h>
#include <torch/optim/optimizer.h>

#include "absl/strings/str_cat.h"
#include "data/label_map.h"
#include "data/receipt_dataset.h"
#include "glog/logging.h"
#include "io/json_file.h"
#include "metrics/metric_dedup.h"
#include "model/classifier.h"
#include "model/weighted_loss.h"
#include "plugins/plugin_selection.h"
#include "reducers/gradient_reducer.h"
#include "samplers/audit.h"
#include "samplers/sampler_policy.h"
#include "trainer/artifacts.pb.h"
#include "trainer/epoch_accounting.h"
#include "trainer/first_step_record.h"
#include "trainer/optimizer_factory.h"
#include "trainer/receipt_tensors.h"
#include "trainer/run_checkpoints.h"
#include "trainer/run_parity.h"
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

double PeakRssMib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;  // ru_maxrss is in KiB on Linux
}

struct Plugins {
  std::unique_ptr<SamplerPolicy> sampler;
  std::unique_ptr<LossWeighting> weighting;
  std::unique_ptr<GradientReducer> reducer;
  std::unique_ptr<MetricDedup> dedup;
};

absl::StatusOr<Plugins> CreatePlugins(const LoadedConfig& loaded) {
  const TrainingConfig& c = loaded.config;
  Plugins p;
  auto sampler = CreateSelectedPlugin<SamplerPolicy>(c.sampler(), "sampler");
  if (!sampler.ok()) return loaded.locator->Locate(sampler.status());
  p.sampler = std::move(*sampler);
  auto weighting =
      CreateSelectedPlugin<LossWeighting>(c.loss_weighting(), "loss_weighting");
  if (!weighting.ok()) return loaded.locator->Locate(weighting.status());
  p.weighting = std::move(*weighting);
  auto reducer = CreateSelectedPlugin<GradientReducer>(c.reducer(), "reducer");
  if (!reducer.ok()) return loaded.locator->Locate(reducer.status());
  p.reducer = std::move(*reducer);
  auto dedup = CreateSelectedPlugin<MetricDedup>(c.metric_dedup(), "metric_dedup");
  if (!dedup.ok()) return loaded.locator->Locate(dedup.status());
  p.dedup = std::move(*dedup);
  return p;
}

// Identity of the data every rank trains on: ids, labels and pixels.
std::string DataHash(const ReceiptSplit& data) {
  std::string bytes;
  for (const auto* part : {&data.train, &data.validation}) {
    for (const ReceiptExample& e : *part) {
      absl::StrAppend(&bytes, e.receipt_id, "/", e.label, "/", e.view, ";");
      bytes.append(reinterpret_cast<const char*>(e.pixels.data()),
                   e.pixels.size() * sizeof(float));
    }
  }
  return c10::sha1(bytes).str();
}

RunManifest MakeManifest(const LoadedConfig& loaded, const Classifier& model,
                         const ReceiptSplit& data, int world_size) {
  const TrainingConfig& c = loaded.config;
  RunManifest m;
  for (const std::string& name : LabelNames()) m.add_label_map(name);
  const std::string hash = ParameterHash(model);
  m.mutable_model_revision()->set_architecture(model.Describe());
  m.mutable_model_revision()->set_initial_parameter_hash(hash);
  m.mutable_model_revision()->set_revision(ModelRevision(model));
  int64_t count = 0;
  for (const auto& p : model.parameters()) count += p.numel();
  m.mutable_model_revision()->set_parameter_count(static_cast<int32_t>(count));
  *m.mutable_seeds() = c.seeds();
  *m.mutable_optimizer() = c.optimizer();
  m.set_precision(c.precision());
  m.set_config_fingerprint(ConfigFingerprint(c));
  m.set_world_size(world_size);
  m.set_global_batch(c.global_batch());
  for (int b : LocalBatchSizes(c)) m.add_local_batch_sizes(b);
  m.mutable_plugins()->set_sampler(c.sampler().name());
  m.mutable_plugins()->set_loss_weighting(c.loss_weighting().name());
  m.mutable_plugins()->set_reducer(c.reducer().name());
  m.mutable_plugins()->set_metric_dedup(c.metric_dedup().name());
  DataRecord* d = m.mutable_data();
  d->set_source(c.data().has_synthetic() ? "synthetic" : c.data().manifest_path());
  d->set_image_size(data.image_size);
  d->set_train_examples(static_cast<int32_t>(data.train.size()));
  d->set_validation_identities(static_cast<int32_t>(data.validation.size()));
  std::set<std::string> identities;
  for (const ReceiptExample& e : data.train) identities.insert(e.receipt_id);
  d->set_train_identities(static_cast<int32_t>(identities.size()));
  for (int64_t n : data.train_class_counts) {
    d->add_train_class_counts(static_cast<int32_t>(n));
  }
  m.set_config_path(loaded.locator->path());
  m.set_epochs(c.epochs());
  return m;
}

// Rank 0 collects every rank's report through the store.
absl::StatusOr<std::vector<RankReport>> CollectReports(
    const TrainingRunOptions& options, const RankReport& mine) {
  if (options.process_group == nullptr) return std::vector<RankReport>{mine};
  c10d::Store& store = *options.process_group->store;
  if (absl::Status s = StoreSet(store, absl::StrCat("report/", options.rank),
                                mine.SerializeAsString());
      !s.ok()) {
    return s;
  }
  std::vector<RankReport> reports;
  if (options.rank != 0) return reports;
  for (int r = 0; r < options.world_size; ++r) {
    absl::StatusOr<std::string> bytes = StoreGet(store, absl::StrCat("report/", r));
    if (!bytes.ok()) return bytes.status();
    RankReport report;
    if (!report.ParseFromString(*bytes)) {
      return absl::DataLossError(absl::StrCat("rank ", r, "'s report is corrupt"));
    }
    reports.push_back(std::move(report));
  }
  return reports;
}

void LogProgress(int64_t total, int64_t planned, int epoch, double loss_share,
                 int64_t run_updates, double elapsed) {
  LOG(INFO) << "update " << total << "/" << planned << " (epoch " << epoch
            << ") rank-0 loss share " << loss_share << ", "
            << run_updates / elapsed << " updates/s, ETA "
            << std::max<double>(0, (planned - total) * elapsed / run_updates) << " s";
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

absl::Status CheckRunnable(const LoadedConfig& loaded) {
  const TrainingConfig& config = loaded.config;
  absl::StatusOr<ReceiptSplit> data = LoadReceipts(config.data());
  if (!data.ok()) return loaded.locator->Locate(data.status());
  absl::StatusOr<Plugins> plugins = CreatePlugins(loaded);
  if (!plugins.ok()) return plugins.status();
  absl::StatusOr<std::shared_ptr<Classifier>> model = BuildClassifier(
      config.model(), {1, data->image_size, data->image_size}, kNumLabels,
      config.seeds().model_init());
  if (!model.ok()) return loaded.locator->Locate(model.status());
  return absl::OkStatus();
}

absl::StatusOr<TrainingOutcome> RunTraining(const TrainingRunOptions& options) {
  const LoadedConfig& loaded = *options.loaded;
  const TrainingConfig& config = loaded.config;
  const int rank = options.rank;
  const int world = options.world_size;
  const bool writer = rank == 0;
  at::set_num_threads(config.run().intra_op_threads());

  absl::StatusOr<ReceiptSplit> data = LoadReceipts(config.data());
  if (!data.ok()) return loaded.locator->Locate(data.status());
  const ExampleTensors train = ToTensors(data->train, data->image_size);
  const ExampleTensors validation = ToTensors(data->validation, data->image_size);
  std::vector<std::string> train_ids, validation_ids;
  std::vector<int> train_labels;
  for (const ReceiptExample& e : data->train) {
    train_ids.push_back(e.receipt_id);
    train_labels.push_back(e.label);
  }
  for (const ReceiptExample& e : data->validation) validation_ids.push_back(e.receipt_id);

  absl::StatusOr<Plugins> plugins = CreatePlugins(loaded);
  if (!plugins.ok()) return plugins.status();
  absl::StatusOr<std::shared_ptr<Classifier>> built = BuildClassifier(
      config.model(), {1, data->image_size, data->image_size}, kNumLabels,
      config.seeds().model_init());
  if (!built.ok()) return loaded.locator->Locate(built.status());
  Classifier& model = **built;
  RunManifest manifest = MakeManifest(loaded, model, *data, world);

  if (options.process_group != nullptr) {
    absl::Status agreed = AgreeOnStart(
        *options.process_group->store, rank, world,
        {{"config_fingerprint", manifest.config_fingerprint()},
         {"model_revision", manifest.model_revision().revision()},
         {"data", DataHash(*data)},
         {"sampler", config.sampler().name()},
         {"loss_weighting", config.loss_weighting().name()},
         {"reducer", config.reducer().name()},
         {"metric_dedup", config.metric_dedup().name()}});
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
    const int old_world = resume.saved_world_size();
    WorldSizeChange change;
    change.policy = plugins->sampler.get();
    change.policy_name = config.sampler().name();
    change.receipt_ids = train_ids;
    change.seed = config.seeds().sampler();
    change.epoch = cursor.epoch;
    change.updates_done = cursor.update_in_epoch;
    // The saved run split the same global batch evenly (or it could not
    // have been resumed with this one: CompareDataOrder checks).
    change.old_local_batch.assign(old_world, config.global_batch() / old_world);
    change.new_local_batch = local_batch;
    absl::StatusOr<WorldSizeChangeReport> change_report = CompareDataOrder(change);
    if (!change_report.ok()) return change_report.status();
    LOG(WARNING) << "world size changed: " << change_report->summary();
    std::filesystem::create_directories(options.artifact_dir);
    if (absl::Status s = WriteJsonFile(options.artifact_dir + "/world_size_change.json",
                                       *change_report);
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
  cost.set_save_seconds_median(Median({cost.save_seconds().begin(), cost.save_seconds().end()}));
  cost.set_sequential_write_seconds_median(Median(
      {cost.sequential_write_seconds().begin(), cost.sequential_write_seconds().end()}));
  if (cost.sequential_write_seconds_median() > 0) {
    cost.set_save_vs_sequential_ratio(cost.save_seconds_median() /
                                      cost.sequential_write_seconds_median());
  }
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

#include "bench/scaling_plan.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "config/run_optimizer.h"
#include "data/data_config.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "model/model_forms.h"
#include "model/model_options.pb.h"
#include "reducers/reducer_options.pb.h"

namespace receipt_parity {
namespace {

// Keeps the first syntax error, located 1-based.
class FirstError : public google::protobuf::io::ErrorCollector {
 public:
  explicit FirstError(std::string name) : name_(std::move(name)) {}
  void AddError(int line, int column, const std::string& message) override {
    if (error_.empty()) {
      error_ = absl::StrCat(name_, ":", line + 1, ":", column + 1, ": ", message);
    }
  }
  const std::string& error() const { return error_; }

 private:
  std::string name_;
  std::string error_;
};

std::string FormatFloat(double value) { return absl::StrCat(value); }

// `script` and ddp_baseline.py's model arguments: the layers of `model`.
std::vector<std::string> ScriptAndLayers(const std::string& script,
                                         const BenchmarkModel& model) {
  return {script, absl::StrCat("--architecture=", model.model.architecture()),
          absl::StrCat("--conv-channels=", absl::StrJoin(model.model.conv_channels(), ",")),
          absl::StrCat("--hidden-units=", absl::StrJoin(model.model.hidden_units(), ",")),
          absl::StrCat("--image-size=", model.image_size)};
}

}  // namespace

BenchmarkModel CommunicationBoundMlp() {
  BenchmarkModel m;
  m.name = "communication_bound";
  m.model.set_architecture("mlp");
  m.model.add_hidden_units(244);
  m.image_size = 32;
  m.batch_per_rank = 32;
  return m;
}

absl::StatusOr<TrainingConfig> ParseBaseConfig(const std::string& text,
                                               const std::string& name) {
  TrainingConfig config;
  FirstError errors(name);
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &config)) {
    return absl::InvalidArgumentError(
        errors.error().empty() ? absl::StrCat(name, ": not a TrainingConfig")
                               : errors.error());
  }
  // The plugin form of the built-in model and optimizer, as the shipped
  // configs write them, read in their short forms (the same model and
  // optimizer).
  if (config.has_model()) *config.mutable_model() = ArchitectureFormOf(config.model());
  *config.mutable_optimizer() = OptimizerShortFormOf(config.optimizer());
  if (!config.data().has_synthetic()) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": data: the benchmark needs the built-in synthetic receipts "
              "(data { synthetic { ... } }) to size its epochs"));
  }
  if (config.data().synthetic().num_identities() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": data.synthetic.num_identities: must be >= 1"));
  }
  if (config.model().architecture().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": model: the compute-bound model is the base "
                           "config's model, a built-in cnn, mlp or linear; none is set"));
  }
  if (!config.optimizer().has_sgd()) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": optimizer: the baselines use SGD; select optimizer { name: \"sgd\" } "
              "(without dampening or parameter groups)"));
  }
  const int world = std::max(1, config.world_size());
  if (config.global_batch() < world || config.global_batch() % world != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": global_batch: ", config.global_batch(),
        " does not split evenly over world_size ", world));
  }
  if ((config.global_batch() / world) % kLargestBenchmarkAccumulation != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": global_batch: each rank's ", config.global_batch() / world,
        " examples do not cut into ", kLargestBenchmarkAccumulation,
        " micro-batches (the benchmark's accumulation runs)"));
  }
  return config;
}

std::vector<BenchmarkModel> BenchmarkModels(const TrainingConfig& base) {
  BenchmarkModel compute;
  compute.name = "compute_bound";
  compute.model = base.model();
  compute.image_size = ResolvedImageSize(base.data());
  compute.batch_per_rank = base.global_batch() / std::max(1, base.world_size());
  return {compute, CommunicationBoundMlp()};
}

int EpochsFor(const DataConfig& data, int global_batch, int updates) {
  const double identities = data.synthetic().num_identities();
  const double train_share = 1.0 - data.validation_fraction();
  DataConfig resolved = data;
  ApplyDataDefaults(&resolved);
  const int views = resolved.views_per_identity();
  // The identity split rounds; one identity less is a safe lower bound.
  const int64_t train_views = std::max<int64_t>(
      0, static_cast<int64_t>(std::floor(identities * train_share)) - 1) * views;
  const int64_t per_epoch = std::max<int64_t>(1, train_views / global_batch);
  return static_cast<int>((updates + per_epoch - 1) / per_epoch) + 1;
}

TrainingConfig TrainerConfig(const TrainingConfig& base,
                             const BenchmarkModel& model, int world_size,
                             int updates) {
  TrainingConfig c = base;
  *c.mutable_model() = model.model;
  c.mutable_data()->set_image_size(model.image_size);
  c.set_world_size(world_size);
  c.set_global_batch(model.batch_per_rank * world_size);
  c.clear_local_batch_sizes();
  c.set_epochs(EpochsFor(c.data(), c.global_batch(), updates));
  c.clear_checkpoint();
  RunOptions* run = c.mutable_run();
  run->clear_output_dir();
  run->clear_fault();
  run->set_intra_op_threads(1);
  run->set_max_updates(updates);
  run->set_log_every_updates(std::max(1, updates / 4));
  if (!run->has_collective_timeout_seconds()) run->set_collective_timeout_seconds(120);
  return c;
}

std::vector<std::string> DdpArguments(const std::string& script,
                                      const BenchmarkModel& model,
                                      const OptimizerConfig& optimizer,
                                      const PoolFiles& pool, int world_size,
                                      int updates, int no_sync_updates,
                                      const std::string& out) {
  std::vector<std::string> args = ScriptAndLayers(script, model);
  args.insert(args.end(),
              {absl::StrCat("--batch-per-rank=", model.batch_per_rank),
               absl::StrCat("--world-size=", world_size),
               absl::StrCat("--updates=", updates),
               absl::StrCat("--no-sync-updates=", no_sync_updates),
               absl::StrCat("--learning-rate=", FormatFloat(optimizer.sgd().learning_rate())),
               absl::StrCat("--momentum=", FormatFloat(optimizer.sgd().momentum())),
               absl::StrCat("--pool-images=", pool.images),
               absl::StrCat("--pool-labels=", pool.labels),
               absl::StrCat("--out=", out)});
  return args;
}

std::vector<std::string> BareArguments(const BenchmarkModel& model,
                                       const OptimizerConfig& optimizer,
                                       const PoolFiles& pool,
                                       int warmup_updates, int updates,
                                       double max_seconds,
                                       const std::string& out) {
  std::string model_text;
  google::protobuf::TextFormat::Printer printer;
  printer.SetSingleLineMode(true);
  printer.PrintToString(model.model, &model_text);
  return {absl::StrCat("--model=", model_text),
          absl::StrCat("--image_size=", model.image_size),
          absl::StrCat("--batch=", model.batch_per_rank),
          absl::StrCat("--warmup_updates=", warmup_updates),
          absl::StrCat("--updates=", updates),
          absl::StrCat("--max_seconds=", FormatFloat(max_seconds)),
          absl::StrCat("--learning_rate=", FormatFloat(optimizer.sgd().learning_rate())),
          absl::StrCat("--momentum=", FormatFloat(optimizer.sgd().momentum())),
          absl::StrCat("--pool_images=", pool.images),
          absl::StrCat("--pool_labels=", pool.labels),
          absl::StrCat("--out=", out)};
}

int UpdatesFor(double seconds, double update_seconds, int min_updates,
               int max_updates) {
  if (!(update_seconds > 0)) return max_updates;
  const double wanted = std::ceil(seconds / update_seconds);
  return static_cast<int>(std::clamp<double>(wanted, min_updates, max_updates));
}

std::string VariantTag(TrainerVariant how) {
  switch (how) {
    case TrainerVariant::kAsConfigured: return "";
    case TrainerVariant::kBucketsOverlapped: return "_buckets_overlap";
    case TrainerVariant::kBucketsNotOverlapped: return "_buckets_no_overlap";
    case TrainerVariant::kOverMpi: return "_mpi";
    case TrainerVariant::kAccumulation2: return "_accumulation_2";
    case TrainerVariant::kAccumulation4: return "_accumulation_4";
    case TrainerVariant::kOrderedSum: return "_ordered_sum";
    case TrainerVariant::kOrderedSumWholeShares: return "_ordered_sum_whole_shares";
    case TrainerVariant::kChecksOff: return "_checks_off";
    case TrainerVariant::kChecksOffOverMpi: return "_mpi_checks_off";
    case TrainerVariant::kPerRankBatchNorm: return "_per_rank_batch_norm";
    case TrainerVariant::kSyncBatchNorm: return "_sync_batch_norm";
    case TrainerVariant::kPerRankBatchNormAccumulation2:
      return "_per_rank_batch_norm_accumulation_2";
    case TrainerVariant::kSyncBatchNormAccumulation2: return "_sync_batch_norm_accumulation_2";
    case TrainerVariant::kPerRankBatchNormAccumulation4:
      return "_per_rank_batch_norm_accumulation_4";
    case TrainerVariant::kSyncBatchNormAccumulation4: return "_sync_batch_norm_accumulation_4";
  }
  return "";
}

std::string BatchNormOf(TrainerVariant how) {
  switch (how) {
    case TrainerVariant::kPerRankBatchNorm:
    case TrainerVariant::kPerRankBatchNormAccumulation2:
    case TrainerVariant::kPerRankBatchNormAccumulation4:
      return "per_rank";
    case TrainerVariant::kSyncBatchNorm:
    case TrainerVariant::kSyncBatchNormAccumulation2:
    case TrainerVariant::kSyncBatchNormAccumulation4:
      return "sync";
    default:
      return "";
  }
}

bool TakesBatchNorm(const BenchmarkModel& model) {
  return model.model.architecture() == "cnn" && model.model.conv_channels_size() > 0;
}

int ExpectedExitCode(TrainerVariant how) { return BatchNormOf(how) == "per_rank" ? 3 : 0; }

int OrderedSumChunkSlots(int batch_per_rank) { return std::max(1, batch_per_rank / 2); }

int AccumulationStepsOf(TrainerVariant how) {
  switch (how) {
    case TrainerVariant::kAccumulation2:
    case TrainerVariant::kPerRankBatchNormAccumulation2:
    case TrainerVariant::kSyncBatchNormAccumulation2:
      return 2;
    case TrainerVariant::kAccumulation4:
    case TrainerVariant::kPerRankBatchNormAccumulation4:
    case TrainerVariant::kSyncBatchNormAccumulation4:
      return 4;
    default: return 1;
  }
}

std::string VariantLabel(TrainerVariant how, int64_t bucket_cap_bytes) {
  if (how == TrainerVariant::kAsConfigured) return "";
  if (how == TrainerVariant::kOverMpi) return " over MPI";
  if (how == TrainerVariant::kChecksOff) return ", the every-update checks off";
  if (how == TrainerVariant::kChecksOffOverMpi) {
    return " over MPI, the every-update checks off";
  }
  if (how == TrainerVariant::kOrderedSum) {
    return " (ordered_sum: chunks of half a rank's batch, summed along the ordered mode's tree)";
  }
  if (how == TrainerVariant::kOrderedSumWholeShares) {
    return " (ordered_sum: one chunk a rank, its whole batch)";
  }
  if (const std::string norm = BatchNormOf(how); !norm.empty()) {
    return absl::StrCat(", batch_norm \"", norm, "\", ", AccumulationStepsOf(how),
                        " micro-batch(es) per update");
  }
  if (const int steps = AccumulationStepsOf(how); steps > 1) {
    return absl::StrCat(", ", steps, " micro-batches per update (accumulation_steps ",
                        steps, ", the same global batch)");
  }
  return absl::StrCat(" (allreduce_sum, buckets of <= ", bucket_cap_bytes, " bytes, ",
                      how == TrainerVariant::kBucketsOverlapped ? "overlapped with"
                                                                : "after",
                      " backward)");
}

TrainingConfig WithTrainerVariant(TrainingConfig config, TrainerVariant how,
                                  int64_t bucket_cap_bytes) {
  if (how == TrainerVariant::kAsConfigured) return config;
  if (const std::string norm = BatchNormOf(how); !norm.empty()) {
    config.mutable_model()->set_batch_norm(norm);
    if (AccumulationStepsOf(how) > 1) config.set_accumulation_steps(AccumulationStepsOf(how));
    if (norm == "per_rank") config.mutable_parity()->set_stop_on_failure(false);
    return config;
  }
  if (const int steps = AccumulationStepsOf(how); steps > 1) {
    config.set_accumulation_steps(steps);
    return config;
  }
  if (how == TrainerVariant::kChecksOff || how == TrainerVariant::kChecksOffOverMpi) {
    config.mutable_parity()->set_every_update(false);
    if (how == TrainerVariant::kChecksOff) return config;
    how = TrainerVariant::kOverMpi;
  }
  if (how == TrainerVariant::kOverMpi) {
    config.mutable_reducer()->set_name("mpi_allreduce");
    config.mutable_reducer()->clear_options();
    config.mutable_run()->set_launcher("mpirun");
    return config;
  }
  if (how == TrainerVariant::kOrderedSum || how == TrainerVariant::kOrderedSumWholeShares) {
    const int batch_per_rank = config.global_batch() / std::max(1, config.world_size());
    OrderedSumOptions options;
    options.set_chunk_slots(how == TrainerVariant::kOrderedSum
                                ? OrderedSumChunkSlots(batch_per_rank)
                                : batch_per_rank);
    config.mutable_reducer()->set_name("ordered_sum");
    config.mutable_reducer()->mutable_options()->PackFrom(options);
    return config;
  }
  AllreduceSumOptions options;
  options.set_bucket_cap_bytes(bucket_cap_bytes);
  options.set_overlap_backward(how == TrainerVariant::kBucketsOverlapped);
  config.mutable_reducer()->set_name("allreduce_sum");
  config.mutable_reducer()->mutable_options()->PackFrom(options);
  return config;
}

std::string RouteTag(ModelRoute route) {
  switch (route) {
    case ModelRoute::kBuiltIn: return "";
    case ModelRoute::kTorchScript: return "_torchscript";
    case ModelRoute::kPythonModule: return "_python_module";
  }
  return "";
}

std::string RouteLabel(ModelRoute route) {
  switch (route) {
    case ModelRoute::kBuiltIn: return "";
    case ModelRoute::kTorchScript: return ", the model as TorchScript (torchscript)";
    case ModelRoute::kPythonModule: return ", the model as a Python nn.Module (python_module)";
  }
  return "";
}

std::string BenchmarkModelKwargs(const BenchmarkModel& model) {
  return absl::StrCat("{\"architecture\": \"", model.model.architecture(),
                      "\", \"conv_channels\": [", absl::StrJoin(model.model.conv_channels(), ", "),
                      "], \"hidden_units\": [", absl::StrJoin(model.model.hidden_units(), ", "),
                      "], \"image_size\": ", model.image_size, "}");
}

std::vector<std::string> ScriptModelArguments(const std::string& script,
                                              const BenchmarkModel& model, uint64_t seed,
                                              const std::string& out) {
  std::vector<std::string> args = ScriptAndLayers(script, model);
  args.insert(args.end(), {"--updates=1", absl::StrCat("--seed=", seed),
                           absl::StrCat("--script-to=", out)});
  return args;
}

TrainingConfig WithModelRoute(TrainingConfig config, const BenchmarkModel& model,
                              ModelRoute route, const std::string& file) {
  if (route == ModelRoute::kBuiltIn) return config;
  ModelConfig* m = config.mutable_model();
  m->Clear();
  if (route == ModelRoute::kTorchScript) {
    m->set_name("torchscript");
    TorchScriptModelOptions options;
    options.set_path(file);
    m->mutable_options()->PackFrom(options);
    return config;
  }
  m->set_name("python_module");
  PythonModuleOptions options;
  options.set_path(file);
  options.set_factory("benchmark_model");
  options.set_kwargs_json(BenchmarkModelKwargs(model));
  m->mutable_options()->PackFrom(options);
  return config;
}

}  // namespace receipt_parity

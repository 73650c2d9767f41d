#include "config/config_loader.h"

#include <cmath>
#include <filesystem>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/text_format.h"
#include "checkpoint/fault_injection.h"
#include "data/data_config.h"
#include "data/label_map.h"
#include "io/atomic_file.h"
#include "model/model_forms.h"
#include "config/config_paths.h"
#include "config/device_check.h"
#include "config/plugin_kinds.h"
#include "reducers/allreduce_sum_reducer.h"

namespace receipt_parity {
namespace {

using google::protobuf::TextFormat;

absl::Status ValidateOrderedChunks(const TrainingConfig& c, int chunk);

// Steps 3-7 of the header. `is_file`: `locator` names a config file, and
// LoadedConfig::data gets the data's paths resolved against its folder
// (config/config_paths.h); else they are used as they are.
absl::StatusOr<LoadedConfig> Validate(
    TrainingConfig config, std::shared_ptr<const ConfigLocator> locator,
    bool is_file) {
  ApplyDefaults(&config);
  if (absl::Status s = ValidateConfig(config); !s.ok()) return locator->Locate(s);
  absl::StatusOr<RunPluginSelections> plugins = SelectRunPlugins(config);
  if (!plugins.ok()) return locator->Locate(plugins.status());
  if (absl::Status s = ValidateOrderedChunks(config, plugins->reducer_chunk_slots); !s.ok()) {
    return locator->Locate(s);
  }
  absl::StatusOr<RunModel> model =
      SelectRunModel(config.model(), ModelSpecOf(config, is_file ? locator->path() : ""));
  if (!model.ok()) return locator->Locate(model.status());
  absl::StatusOr<RunOptimizer> optimizer = SelectRunOptimizer(config.optimizer());
  if (!optimizer.ok()) return locator->Locate(optimizer.status());
  if (absl::Status s = ValidateDataFitsInMemory(config.data()); !s.ok()) {
    return locator->Locate(s);
  }
  const int local_ranks = LocalRankCount(config);
  if (absl::Status s = CheckRanksFitThisMachine(config, local_ranks); !s.ok()) {
    return locator->Locate(s);
  }
  if (absl::Status s = CheckDevicesAvailable(config, local_ranks); !s.ok()) {
    return locator->Locate(s);
  }
  if (config.precision() == "bf16") {
    if (absl::Status s = CheckRunsUnderAutocast(*model); !s.ok()) return locator->Locate(s);
  }
  LoadedConfig loaded;
  loaded.model = *std::move(model);
  loaded.optimizer = *std::move(optimizer);
  loaded.data = is_file ? ResolveDataPaths(locator->path(), config.data())
                        : config.data();
  loaded.config = std::move(config);
  loaded.fingerprint = ConfigFingerprint(loaded.config);
  loaded.locator = std::move(locator);
  loaded.plugins = std::move(*plugins);
  return loaded;
}

// What to do about plugin options of a type nobody defines: which
// libraries were looked in.
std::string UnknownTypeHint(const std::vector<LoadedPluginLibrary>& libraries) {
  if (libraries.empty()) {
    return "no plugin_library is listed in the config: name the shared "
           "library that defines this options type there";
  }
  return absl::StrCat("neither this binary nor the plugin libraries loaded (",
                      absl::StrJoin(libraries, ", ",
                                    [](std::string* out, const LoadedPluginLibrary& l) {
                                      out->append(l.resolved_path);
                                    }),
                      ") define this options type: is its library listed?");
}

// Steps 2-7.
absl::StatusOr<LoadedConfig> Parse(const std::string& text, const std::string& name,
                                   const std::vector<LoadedPluginLibrary>& libraries,
                                   const std::vector<ConfigOverride>& overrides) {
  TrainingConfig config;
  auto tree = std::make_unique<ConfigLocator::ParseInfoTree>();
  ParseErrors errors(name);
  TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(tree.get());
  if (!parser.ParseFromString(text, &config)) {
    std::string joined = errors.Joined();
    if (absl::StrContains(joined, "Could not find type")) {
      absl::StrAppend(&joined, "; ", UnknownTypeHint(libraries));
    }
    return absl::InvalidArgumentError(joined);
  }
  if (absl::Status s = ApplyConfigOverrides(overrides, &config); !s.ok()) return s;
  absl::StatusOr<LoadedConfig> loaded =
      Validate(std::move(config), std::make_shared<ConfigLocator>(name, std::move(tree), overrides),
               /*is_file=*/true);
  if (loaded.ok()) loaded->overrides = overrides;
  return loaded;
}

absl::Status Invalid(const std::string& field, const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", message));
}

absl::Status ValidateBatches(const TrainingConfig& c) {
  if (c.world_size() < 1) {
    return Invalid("world_size", absl::StrCat("must be >= 1, got ", c.world_size()));
  }
  if (c.world_size() > kMaxWorldSize) {
    return Invalid("world_size", absl::StrCat("must be <= ", kMaxWorldSize,
                                              " (the most ranks a run may start), got ",
                                              c.world_size()));
  }
  if (c.global_batch() < 1) {
    return Invalid("global_batch",
                   absl::StrCat("must be >= 1, got ", c.global_batch()));
  }
  if (c.local_batch_sizes_size() == 0) {
    if (c.global_batch() % c.world_size() != 0) {
      return Invalid("global_batch",
                     absl::StrCat(c.global_batch(), " slots do not split evenly over ",
                                  c.world_size(),
                                  " ranks; set local_batch_sizes for an uneven split"));
    }
    return absl::OkStatus();
  }
  if (c.local_batch_sizes_size() != c.world_size()) {
    return Invalid("local_batch_sizes",
                   absl::StrCat("has ", c.local_batch_sizes_size(),
                                " entries for world_size ", c.world_size()));
  }
  int64_t sum = 0;  // at most kMaxWorldSize int32 values: no overflow
  for (int i = 0; i < c.local_batch_sizes_size(); ++i) {
    if (c.local_batch_sizes(i) < 0) {
      return Invalid(absl::StrCat("local_batch_sizes[", i, "]"),
                     absl::StrCat("must be >= 0, got ", c.local_batch_sizes(i)));
    }
    sum += c.local_batch_sizes(i);
  }
  if (sum != c.global_batch()) {
    return Invalid("local_batch_sizes",
                   absl::StrCat("add up to ", sum, ", not global_batch ",
                                c.global_batch()));
  }
  return absl::OkStatus();
}

// Every rank's local batch cuts into accumulation_steps equal micro-batches.
absl::Status ValidateAccumulation(const TrainingConfig& c) {
  const int steps = c.accumulation_steps();
  if (steps < 1) {
    return Invalid("accumulation_steps", absl::StrCat("must be >= 1, got ", steps));
  }
  const std::vector<int> local = LocalBatchSizes(c);
  for (size_t r = 0; r < local.size(); ++r) {
    if (local[r] % steps != 0) {
      return Invalid("accumulation_steps",
                     absl::StrCat(steps, " micro-batches do not cut rank ", r,
                                  "'s local batch of ", local[r],
                                  " into equal parts; choose a divisor of every "
                                  "local batch (or local_batch_sizes that it divides)"));
    }
  }
  return absl::OkStatus();
}

// The ordered mode (a reducer with chunk_slots C > 0, e.g. ordered_sum):
// every chunk of C slots is computed on one rank, so C divides the global
// batch and every rank's local batch; and there is no rank gradient for
// clip_grad_norm scope "local" to clip.
absl::Status ValidateOrderedChunks(const TrainingConfig& c, int chunk) {
  if (chunk <= 0) return absl::OkStatus();
  const std::string reducer = absl::StrCat("reducer ", c.reducer().name(), "'s chunk_slots ",
                                           chunk);
  if (c.global_batch() % chunk != 0) {
    return Invalid("global_batch",
                   absl::StrCat(c.global_batch(), " slots do not cut into whole chunks of ",
                                chunk, " (", reducer, "); choose a global batch that ", chunk,
                                " divides, or other chunk_slots"));
  }
  const int chunks = c.global_batch() / chunk;
  const std::vector<int> local = LocalBatchSizes(c);
  for (size_t r = 0; r < local.size(); ++r) {
    if (local[r] % chunk == 0) continue;
    if (c.local_batch_sizes_size() > 0) {
      return Invalid(absl::StrCat("local_batch_sizes[", r, "]"),
                     absl::StrCat(local[r], " slots are not a whole number of chunks (",
                                  reducer, "): every chunk is computed on one rank, so "
                                  "give every rank a multiple of ", chunk, " slots"));
    }
    return Invalid("world_size",
                   absl::StrCat(c.world_size(), " ranks cannot share the ", chunks,
                                " chunks of global_batch ", c.global_batch(), " (", reducer,
                                ") evenly: every chunk is computed on one rank, so the "
                                "world size must divide the chunk count ", chunks,
                                ", or local_batch_sizes must give every rank a multiple of ",
                                chunk, " slots"));
  }
  if (c.has_clip_grad_norm() && c.clip_grad_norm().scope() == "local") {
    return Invalid("clip_grad_norm.scope",
                   absl::StrCat("\"local\" clips each rank's own gradient before the "
                                "reduction, and ", c.reducer().name(),
                                " sums chunks, not rank gradients: use \"global\""));
  }
  return absl::OkStatus();
}

// A hyperparameter must be finite: nan and inf compare false with every
// bound, so each check below is written to refuse them too.
absl::Status CheckPositive(const std::string& field, double value) {
  if (!(std::isfinite(value) && value > 0)) {
    return Invalid(field, absl::StrCat("must be > 0 and finite, got ", value));
  }
  return absl::OkStatus();
}

absl::Status CheckNonNegative(const std::string& field, double value,
                              const std::string& note = "") {
  if (!(std::isfinite(value) && value >= 0)) {
    return Invalid(field, absl::StrCat("must be finite and >= 0", note, ", got ", value));
  }
  return absl::OkStatus();
}

absl::Status CheckUnitInterval(const std::string& field, double value,
                               const std::string& note = "") {
  if (!(std::isfinite(value) && value >= 0 && value < 1)) {
    return Invalid(field, absl::StrCat("must be in [0, 1)", note, ", got ", value));
  }
  return absl::OkStatus();
}

absl::Status ValidateSgd(const SgdConfig& sgd) {
  if (absl::Status s = CheckPositive("optimizer.sgd.learning_rate", sgd.learning_rate());
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckUnitInterval("optimizer.sgd.momentum", sgd.momentum());
      !s.ok()) {
    return s;
  }
  return CheckNonNegative("optimizer.sgd.weight_decay", sgd.weight_decay());
}

// 0 (unset) beta1, beta2 and eps mean 0.9, 0.999 and 1e-8
// (config/run_optimizer.cc).
absl::Status ValidateAdamW(const AdamWConfig& adamw) {
  const absl::Status checks[] = {
      CheckPositive("optimizer.adamw.learning_rate", adamw.learning_rate()),
      CheckUnitInterval("optimizer.adamw.beta1", adamw.beta1(), " (0 means 0.9)"),
      CheckUnitInterval("optimizer.adamw.beta2", adamw.beta2(), " (0 means 0.999)"),
      CheckNonNegative("optimizer.adamw.eps", adamw.eps(), " (0 means 1e-8)"),
      CheckNonNegative("optimizer.adamw.weight_decay", adamw.weight_decay()),
  };
  for (const absl::Status& status : checks) {
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

// The config form's own checks; the plugin form's options are checked by
// the plugin when it is selected (config/run_optimizer.h).
absl::Status ValidateOptimizer(const OptimizerConfig& o) {
  if (absl::Status s = CheckOptimizerForm(o); !s.ok()) return s;
  switch (o.kind_case()) {
    case OptimizerConfig::kSgd:
      return ValidateSgd(o.sgd());
    case OptimizerConfig::kAdamw:
      return ValidateAdamW(o.adamw());
    case OptimizerConfig::KIND_NOT_SET:
      break;
  }
  return absl::OkStatus();
}

absl::Status ValidatePlatform(const TrainingConfig& c) {
  if (c.precision() != "fp32" && c.precision() != "bf16") {
    return Invalid("precision", absl::StrCat("unknown '", c.precision(),
                                             "'; known: fp32, bf16 (bfloat16 autocast with "
                                             "fp32 weights, gradients and reduction)"));
  }
  if (c.device() != "cpu" && c.device() != "cuda") {
    return Invalid("device", absl::StrCat("unknown '", c.device(),
                                          "'; known: cpu, cuda"));
  }
  if (c.backend() != "gloo" && c.backend() != "nccl" && c.backend() != "mpi") {
    return Invalid("backend", absl::StrCat("unknown '", c.backend(),
                                           "'; known: gloo, nccl, mpi"));
  }
  if (c.backend() == "nccl" && c.device() != "cuda") {
    return Invalid("backend",
                   "nccl reduces CUDA tensors only: set device: \"cuda\", or "
                   "use backend: \"gloo\" on the CPU");
  }
  if (c.backend() == "mpi" && c.device() != "cpu") {
    return Invalid("backend",
                   "mpi reduces CPU tensors only (OpenMPI here): set device: \"cpu\", "
                   "or use backend: \"gloo\" or \"nccl\" on GPUs");
  }
  if (c.reducer().name() == kMpiAllreduceName && c.backend() != "mpi") {
    return Invalid("backend",
                   absl::StrCat("reducer mpi_allreduce is allreduce_sum over backend "
                                "\"mpi\", but backend is '", c.backend(),
                                "': set backend \"mpi\" (or leave it unset), or choose "
                                "reducer allreduce_sum"));
  }
  return absl::OkStatus();
}

absl::Status ValidateClipping(const TrainingConfig& c) {
  if (!c.has_clip_grad_norm()) return absl::OkStatus();
  const ClipGradNormConfig& clip = c.clip_grad_norm();
  if (absl::Status s = CheckPositive("clip_grad_norm.max_norm", clip.max_norm()); !s.ok()) {
    return s;
  }
  if (clip.scope() != "global" && clip.scope() != "local") {
    return Invalid("clip_grad_norm.scope",
                   absl::StrCat("must be \"global\" or \"local\", got \"", clip.scope(), "\""));
  }
  return absl::OkStatus();
}

absl::Status ValidateCheckpoint(const CheckpointConfig& checkpoint) {
  if (checkpoint.every_updates() < 0) {
    return Invalid("checkpoint.every_updates", "must be >= 0");
  }
  if (checkpoint.keep_last() < 0) {
    return Invalid("checkpoint.keep_last",
                   absl::StrCat("must be >= 0, got ", checkpoint.keep_last()));
  }
  if (checkpoint.keep_last() == 0 && checkpoint.every_updates() > 0) {
    return Invalid("checkpoint.keep_last",
                   absl::StrCat("0 keeps no generation, but every_updates ",
                                checkpoint.every_updates(),
                                " saves them; set keep_last >= 1 (unset: 2)"));
  }
  return absl::OkStatus();
}

// A flipped bit is armed by any of its three fields; all three must then
// be set, the bit one of a float32's 32, the rank one of the world's (the
// update is checked against the run's length where that is known,
// trainer/training_run.cc).
absl::Status ValidateCorruption(const FaultInjection& fault, int world_size) {
  const bool armed =
      fault.has_corrupt_rank() || fault.has_corrupt_update() || fault.has_corrupt_bit();
  if (!armed) return absl::OkStatus();
  for (const auto& [field, set] : {std::make_pair("corrupt_rank", fault.has_corrupt_rank()),
                                   std::make_pair("corrupt_update", fault.has_corrupt_update()),
                                   std::make_pair("corrupt_bit", fault.has_corrupt_bit())}) {
    if (!set) {
      return Invalid("run.fault", absl::StrCat(field, " is not set: a flipped bit needs "
                                                      "corrupt_rank, corrupt_update and "
                                                      "corrupt_bit"));
    }
  }
  if (fault.corrupt_bit() < 0 || fault.corrupt_bit() > 31) {
    return Invalid("run.fault.corrupt_bit",
                   absl::StrCat("must be a bit of a float32, 0 to 31; got ", fault.corrupt_bit()));
  }
  if (fault.corrupt_rank() < 0 || fault.corrupt_rank() >= world_size) {
    return Invalid("run.fault.corrupt_rank",
                   absl::StrCat("rank ", fault.corrupt_rank(), " does not exist with world_size ",
                                world_size));
  }
  if (fault.corrupt_update() < 0) {
    return Invalid("run.fault.corrupt_update",
                   absl::StrCat("must be >= 0, got ", fault.corrupt_update()));
  }
  return absl::OkStatus();
}

// An injected failure is armed by its kill_point.
absl::Status ValidateFault(const FaultInjection& fault, int world_size) {
  if (absl::Status s = ValidateCorruption(fault, world_size); !s.ok()) return s;
  if (fault.kill_point().empty()) return absl::OkStatus();
  if (fault.kill_generation() < 1) {
    return Invalid("run.fault.kill_generation",
                   absl::StrCat("must be >= 1, got ", fault.kill_generation()));
  }
  if (absl::StatusOr<KillPoint> point = ParseKillPoint(fault.kill_point());
      !point.ok()) {
    return Invalid("run.fault.kill_point", std::string(point.status().message()));
  }
  if (fault.kill_rank() < 0 || fault.kill_rank() >= world_size) {
    return Invalid("run.fault.kill_rank",
                   absl::StrCat("rank ", fault.kill_rank(),
                                " does not exist with world_size ", world_size));
  }
  return absl::OkStatus();
}

absl::Status ValidateRunOptions(const RunOptions& run, int world_size) {
  if (run.log_every_updates() < 1) {
    return Invalid("run.log_every_updates",
                   absl::StrCat("must be >= 1, got ", run.log_every_updates()));
  }
  if (run.collective_timeout_seconds() < 1) {
    return Invalid("run.collective_timeout_seconds", "must be >= 1");
  }
  if (run.intra_op_threads() < 1) {
    return Invalid("run.intra_op_threads", "must be >= 1");
  }
  if (run.max_updates() < 0) return Invalid("run.max_updates", "must be >= 0");
  if (run.preemption_grace_seconds() < 1) {
    return Invalid("run.preemption_grace_seconds",
                   absl::StrCat("must be >= 1, got ", run.preemption_grace_seconds()));
  }
  if (!(run.heartbeat_timeout_seconds() > 0 && run.heartbeat_timeout_seconds() <= 3600)) {
    return Invalid("run.heartbeat_timeout_seconds",
                   absl::StrCat("must be in (0, 3600], got ", run.heartbeat_timeout_seconds()));
  }
  if (run.max_replacements() < 0 || run.max_replacements() > 1000) {
    return Invalid("run.max_replacements",
                   absl::StrCat("must be in [0, 1000], got ", run.max_replacements()));
  }
  if (run.master_addr().empty()) {
    return Invalid("run.master_addr", "must not be empty (unset: 127.0.0.1)");
  }
  if (run.launcher() != "local" && run.launcher() != "mpirun") {
    return Invalid("run.launcher",
                   absl::StrCat("unknown '", run.launcher(), "'; known: local, mpirun"));
  }
  return ValidateFault(run.fault(), world_size);
}

}  // namespace

absl::StatusOr<LoadedConfig> LoadTrainingConfig(const std::string& path,
                                                const std::vector<ConfigOverride>& overrides) {
  absl::StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  // Step 1: plugin libraries first.
  absl::StatusOr<std::vector<LoadedPluginLibrary>> libraries =
      LoadConfigPluginLibraries(path, *text, overrides);
  if (!libraries.ok()) return libraries.status();
  // Steps 2-7.
  absl::StatusOr<LoadedConfig> loaded = Parse(*text, path, *libraries, overrides);
  if (loaded.ok()) loaded->plugin_libraries = *std::move(libraries);
  return loaded;
}

absl::StatusOr<LoadedConfig> ValidateTrainingConfig(TrainingConfig config,
                                                    const std::string& name) {
  return Validate(std::move(config), std::make_shared<ConfigLocator>(name, nullptr),
                  /*is_file=*/false);
}

void ApplyDefaults(TrainingConfig* c) {
  if (!c->has_precision()) c->set_precision("fp32");
  // mpi_allreduce, the old name of allreduce_sum over MPI, brings its
  // transport (reducers/allreduce_sum_reducer.h). Configs written before
  // backend "mpi" existed say backend "gloo" beside it, which then meant
  // what "mpi" means now: Gloo for everything but the gradients.
  const bool old_mpi_name = c->reducer().name() == kMpiAllreduceName;
  if (!c->has_backend() || (old_mpi_name && c->backend() == "gloo")) {
    c->set_backend(old_mpi_name ? "mpi" : "gloo");
  }
  if (!c->has_device()) c->set_device("cpu");
  if (!c->has_world_size()) c->set_world_size(1);
  if (!c->has_epochs()) c->set_epochs(1);
  if (!c->has_accumulation_steps()) c->set_accumulation_steps(1);
  ApplyDataDefaults(c->mutable_data());
  for (const PluginKind& kind : PluginKinds()) {
    PluginSelection* selection = kind.mutable_selection(c);
    if (!selection->has_name()) selection->set_name(kind.default_name);
  }
  if (c->has_clip_grad_norm() && !c->clip_grad_norm().has_scope()) {
    c->mutable_clip_grad_norm()->set_scope("global");
  }
  ParityConfig* parity = c->mutable_parity();
  if (!parity->has_rtol()) parity->set_rtol(1e-6);
  if (!parity->has_atol()) parity->set_atol(1e-7);
  if (!parity->has_stop_on_failure()) parity->set_stop_on_failure(true);
  if (!parity->has_every_update()) parity->set_every_update(true);
  if (!parity->has_replay()) parity->set_replay(true);
  if (!c->checkpoint().has_keep_last()) c->mutable_checkpoint()->set_keep_last(2);
  RunOptions* run = c->mutable_run();
  if (!run->has_log_every_updates()) run->set_log_every_updates(10);
  if (!run->has_collective_timeout_seconds()) run->set_collective_timeout_seconds(60);
  if (!run->has_intra_op_threads()) run->set_intra_op_threads(1);
  if (!run->has_master_addr()) run->set_master_addr("127.0.0.1");
  if (!run->has_launcher()) run->set_launcher("local");
  if (!run->has_preemption_grace_seconds()) run->set_preemption_grace_seconds(20);
  if (!run->has_heartbeat_timeout_seconds()) run->set_heartbeat_timeout_seconds(5);
  if (!run->has_survivors_go_on()) run->set_survivors_go_on(true);
  if (!run->has_replace_lost_ranks()) run->set_replace_lost_ranks(true);
  if (!run->has_max_replacements()) run->set_max_replacements(4);
  if (!run->fault().has_kill_generation()) run->mutable_fault()->set_kill_generation(1);
}

absl::Status ValidateConfig(const TrainingConfig& c) {
  if (absl::Status s = ValidatePlatform(c); !s.ok()) return s;
  if (absl::Status s = ValidateBatches(c); !s.ok()) return s;
  if (absl::Status s = ValidateAccumulation(c); !s.ok()) return s;
  if (c.epochs() < 1) return Invalid("epochs", "must be >= 1");
  if (absl::Status s = CheckModelForm(c.model()); !s.ok()) return s;
  if (absl::Status s = ValidateOptimizer(c.optimizer()); !s.ok()) return s;
  if (absl::Status s = ValidateDataConfig(c.data()); !s.ok()) return s;
  if (!IsPluginForm(c.model())) {
    // The plugin form is checked with the plugins (Validate).
    if (absl::Status s = ValidateModelSettings(ModelSettingsOf(c)); !s.ok()) return s;
  }
  for (const auto& [field, value] : {std::make_pair("parity.rtol", c.parity().rtol()),
                                     std::make_pair("parity.atol", c.parity().atol())}) {
    if (absl::Status s = CheckNonNegative(field, value, " (rtol 0 and atol 0: exact equality)");
        !s.ok()) {
      return s;
    }
  }
  if (c.parity().has_batch_dependent_layers() &&
      c.parity().batch_dependent_layers() != "report" &&
      c.parity().batch_dependent_layers() != "refuse") {
    return Invalid("parity.batch_dependent_layers",
                   absl::StrCat("must be \"report\" or \"refuse\", got \"",
                                c.parity().batch_dependent_layers(), "\""));
  }
  for (int32_t update : c.parity().check_updates()) {
    if (update < 0) {
      return Invalid("parity.check_updates",
                     absl::StrCat(update, " is not an update (the run's updates count from 0)"));
    }
  }
  if (absl::Status s = ValidateClipping(c); !s.ok()) return s;
  if (absl::Status s = ValidateCheckpoint(c.checkpoint()); !s.ok()) return s;
  return ValidateRunOptions(c.run(), c.world_size());
}

ModelSettings ModelSettingsOf(const TrainingConfig& c) {
  const int64_t side = ResolvedImageSize(c.data());
  return ModelSettings{c.model(), {1, side, side}, kNumLabels, c.seeds().model_init()};
}

ClassifierSpec ModelSpecOf(const TrainingConfig& config, const std::string& config_file) {
  const ModelSettings settings = ModelSettingsOf(config);
  ClassifierSpec spec{settings.input_shape, settings.num_classes, settings.init_seed,
                      nullptr};
  if (!config_file.empty()) {
    const std::string absolute = std::filesystem::absolute(config_file).string();
    spec.resolve_path = [absolute](const std::string& written) {
      return ResolveConfigPath(absolute, written);
    };
  }
  return spec;
}

std::vector<int> LocalBatchSizes(const TrainingConfig& c) {
  if (c.local_batch_sizes_size() > 0) {
    return {c.local_batch_sizes().begin(), c.local_batch_sizes().end()};
  }
  return std::vector<int>(c.world_size(), c.global_batch() / c.world_size());
}

absl::StatusOr<LoadedConfig> WithWorldSize(const LoadedConfig& loaded, int world_size) {
  TrainingConfig config = loaded.config;
  config.set_world_size(world_size);
  config.clear_local_batch_sizes();
  for (absl::Status status :
       {ValidateBatches(config), ValidateAccumulation(config),
        ValidateOrderedChunks(config, loaded.plugins.reducer_chunk_slots)}) {
    if (!status.ok()) {
      return loaded.locator->Locate(absl::InvalidArgumentError(absl::StrCat(
          status.message(), " (on the launcher's ", world_size, " workers)")));
    }
  }
  return WithTrainingConfig(loaded, std::move(config));
}

}  // namespace receipt_parity

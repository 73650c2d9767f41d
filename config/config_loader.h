// The one place a training config is checked: loading a TrainingConfig text
// file gives a validated run (LoadedConfig) or the first error.
//
// Steps, in order:
//  1. a first parse that only reads `plugin_library` (plugin options of
//     types not known yet are skipped), and loads those shared libraries
//     (config/config_plugin_libraries.h), so their options types are in
//     the descriptor pool and their factories in the registries;
//  2. the real parse: syntax errors come back as
//     "FILE:LINE:COLUMN: message" (1-based);
//  3. defaults for the fields left unset, once (ApplyDefaults; the data's
//     own defaults are data/data_config.h's);
//  4. every check of the fields (ValidateConfig): the trainer's, the data
//     settings' (data/data_config.h) and the model settings'
//     (model/model_forms.h: one form of `model`; model/model_config.h for
//     the architecture form);
//  5. every plugin selection (config/run_plugins.h): the name is
//     registered, the options are the plugin's own type, and the plugin is
//     created once from them; the model plugin too (config/run_model.h),
//     checked for this config's inputs and labels (a TorchScript file is
//     loaded and run on one batch);
//  6. the data fits in memory (ValidateDataFitsInMemory,
//     data/data_config.h), before anything is allocated;
//  7. the ranks it starts on this machine fit in its memory
//     (CheckRanksFitThisMachine), and the devices it asks for are here
//     (CheckDevicesAvailable,
//     config/device_check.h): `device: "cuda"` or `backend: "nccl"` loads
//     the CUDA support library and needs a visible GPU (one per local rank
//     for NCCL); a CPU config loads nothing.
// Errors of steps 4 to 7 name FILE:LINE:COLUMN (where the field is
// written in the file) and the field path, e.g.
// "configs/x.pbtxt:7:1: precision: unknown 'fp16'; known: fp32, bf16"; a
// field left unset is named where the message holding it is written (FILE
// alone for a top-level one).
// Paths: every input file the config names (plugin_library,
// data.manifest_path, a model plugin's file) is relative to the config's folder, or absolute
// (config/config_paths.h); `config` keeps them as written and LoadedConfig
// carries them resolved. A manifest is not opened here: a missing one is
// reported when the run loads its receipts, as
// "FILE:LINE:COLUMN: data.manifest_path: cannot read receipt manifest:
// RESOLVED: no such file" (data/receipt_dataset.h).
// Nothing is read but the config and its plugin libraries (no receipt is
// loaded or generated), nothing is written. Every error is InvalidArgument
// (NotFound for a missing file or plugin) and binaries exit with code 2.
#ifndef RECEIPT_PARITY_CONFIG_CONFIG_LOADER_H_
#define RECEIPT_PARITY_CONFIG_CONFIG_LOADER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "data/data_config.pb.h"
#include "model/model_config.h"
#include "config/config.pb.h"
#include "config/config_locator.h"
#include "config/config_overrides.h"
#include "config/config_plugin_libraries.h"
#include "config/run_model.h"
#include "config/run_optimizer.h"
#include "config/run_plugins.h"

namespace receipt_parity {

// A validated run: what every binary that trains, checks or audits a config
// starts from. Copyable (copies share the locator and the plugins' options).
struct LoadedConfig {
  // Defaults applied; every field checked; paths as written in the file (what
  // the fingerprint hashes and the records show).
  TrainingConfig config;
  // ConfigFingerprint(config): what names the run in its folder, its
  // artifacts and its checkpoints.
  std::string fingerprint;
  // The data settings the run loads its receipts from: config.data() with
  // data.manifest_path resolved against the config's folder
  // (config/config_paths.h); as config.data() for a config built in code.
  DataConfig data;
  // Where each field of `config` is written.
  std::shared_ptr<const ConfigLocator> locator;
  // The plugin of every kind, checked; a run creates its own from them.
  RunPluginSelections plugins;
  // The classifier the run builds: its model plugin and spec
  // (ModelSpecOf), checked; model.Build() makes one.
  RunModel model;
  // The optimizer the run steps with (config/run_optimizer.h), checked.
  RunOptimizer optimizer;
  // Each `plugin_library`, in config order: as written, resolved, its SHA-1
  // (ranks compare them at start: the paths may differ by host) and the
  // plugins it added. Empty for a config built in code.
  std::vector<LoadedPluginLibrary> plugin_libraries;
  // The --set overrides `config` has applied, in order; run_manifest.json
  // records them and the effective config.
  std::vector<ConfigOverride> overrides;
};

// Steps 1-7 above, `overrides` (train --set, config/config_overrides.h)
// applied between steps 2 and 3: an override is checked as the file is,
// its errors named "--set PATH=VALUE: ...", and the fingerprint is the
// effective config's. Plugin lookups in step 5 use whatever is registered
// in this binary plus the loaded libraries. An override of
// `plugin_library` (a build system naming where its libraries are) is
// applied in step 1 too: the libraries loaded are the effective list's.
absl::StatusOr<LoadedConfig> LoadTrainingConfig(
    const std::string& path, const std::vector<ConfigOverride>& overrides = {});

// Steps 3-7 for a config built in code (e.g. the benchmark's generated
// configs, before they are written for the trainer): errors read
// "NAME: field: message". Uses the plugin libraries loaded so far. Its
// paths are used as they are (a relative one is relative to the working
// directory): there is no config folder.
absl::StatusOr<LoadedConfig> ValidateTrainingConfig(TrainingConfig config,
                                                    const std::string& name);

// `loaded` with `config` in place of its config, its fingerprint
// recomputed; the data, locator, plugins, model and libraries kept (a
// multi-worker run's one-update reference). REQUIRES: `config` passes the
// checks loaded.config passed (it differs in what they do not read, such
// as run.max_updates or the world size).
LoadedConfig WithTrainingConfig(const LoadedConfig& loaded, TrainingConfig config);

// `loaded` on `world_size` workers instead of its config's: world_size set,
// local_batch_sizes cleared (global_batch split evenly), accumulation_steps
// kept (the elastic case: a launcher restarted with another number of
// workers, for a run whose updates ignore the world size). InvalidArgument
// naming the field and where it is written when global_batch does not
// split evenly over `world_size` ranks, or a local batch does not cut into
// accumulation_steps micro-batches.
absl::StatusOr<LoadedConfig> WithWorldSize(const LoadedConfig& loaded, int world_size);

// Fills the fields left unset with their documented defaults (fields marked
// `optional` in config/config.proto; a written value, zero included, is
// kept and checked): precision "fp32", backend "gloo" ("mpi" for reducer
// mpi_allreduce, whose written "gloo" also reads as "mpi"), device "cpu",
// world_size 1,
// epochs 1, the data's defaults (ApplyDataDefaults), every plugin kind's
// default (config/plugin_kinds.h: masked_tail / global_count /
// allreduce_sum / by_receipt_id), parity rtol 1e-6 atol 1e-7,
// checkpoint.keep_last 2, run.log_every_updates 10,
// run.collective_timeout_seconds 60, run.intra_op_threads 1,
// run.master_addr "127.0.0.1", run.fault.kill_generation 1.
void ApplyDefaults(TrainingConfig* config);

// The most ranks a config may ask for (world_size), on one host or many;
// more is refused at load with the figure.
inline constexpr int kMaxWorldSize = 4096;

// Every field check, with field-path-prefixed errors ("world_size: ...",
// "data.image_size: ...", "model.conv_channels: ..."); no locations, no
// plugin lookups. REQUIRES: ApplyDefaults(config) was applied.
absl::Status ValidateConfig(const TrainingConfig& config);

// The classifier `config` asks for: its model on [1, S, S] inputs (S the
// data's image size), one class per label (data/label_map.h),
// seeds.model_init. Its `config` is the architecture form only when the
// config writes that form (model/model_forms.h).
ModelSettings ModelSettingsOf(const TrainingConfig& config);

// The same as a model plugin's spec; relative paths in the model's options
// resolve against the folder of `config_file` (config/config_paths.h),
// made absolute now; "" (a config built in code): used as written.
ClassifierSpec ModelSpecOf(const TrainingConfig& config, const std::string& config_file);

// Slots per rank per update: local_batch_sizes, or global_batch / world_size
// on every rank. REQUIRES: ValidateConfig(config).ok().
std::vector<int> LocalBatchSizes(const TrainingConfig& config);

// Hex SHA-1 of the deterministic serialization of `config` without the
// fields that do not change what is trained: `run` (output folder, logging,
// fault injection, limits), `checkpoint` (how often and how many to keep),
// `plugin_library` (paths differ by host), `device` and `backend` (a CPU
// reference over Gloo serves a GPU run over NCCL; backend hashes as "gloo",
// so fingerprints from before `device` existed still match).
// data.manifest_path enters as written in the file (LoadedConfig::config
// keeps it so), not resolved: a config moved with its data, or checked out
// at another path on another host, hashes the same; what the receipts are
// is checked by their own hash (run_manifest.h DataHash).
std::string ConfigFingerprint(const TrainingConfig& config);

// `config` as ConfigFingerprint sees it: those fields cleared, backend
// "gloo" when set, and a built-in model written in the plugin form
// (model { name: "cnn" options { ... } }) in the architecture form
// (ArchitectureFormOf, model/model_forms.h), so both forms hash the same. Two configs train the same model exactly when these are
// equal (run folders compare them field by field to say what differs).
TrainingConfig FingerprintedConfig(const TrainingConfig& config);

// The optimizer `config` names: "sgd" or "adamw" for the config form,
// its `name` for the plugin form (both forms of one optimizer name it
// alike: its state is the same named tensors).
std::string OptimizerNameOf(const OptimizerConfig& config);

// `config` without its recipe: the optimizer's settings (its name kept:
// another optimizer keeps other state), `lr_schedule` and
// `clip_grad_norm`. What a continuation with --allow_recipe_change may
// change (artifacts/run_folder.h); everything else still names the run.
TrainingConfig RecipeFreeConfig(const TrainingConfig& config);

// The one-worker reference run of `config`: world_size 1, no uneven split,
// no checkpointing, no fault injection; same data, model, optimizer, seeds,
// global batch and loss weighting.
TrainingConfig ReferenceConfig(const TrainingConfig& config);

// The --set overrides (PATH=VALUE, config/config_overrides.h) that give
// `config` (defaults applied) its ReferenceConfig's fingerprint:
// "world_size=1", then "accumulation_steps=1" and "local_batch_sizes=[]"
// where `config` sets them otherwise. What a user passes to train a
// config's reference by hand.
std::vector<std::string> ReferenceOverrides(const TrainingConfig& config);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CONFIG_CONFIG_LOADER_H_

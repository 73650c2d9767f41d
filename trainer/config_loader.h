// Loads, completes and validates a TrainingConfig text file.
//
// Steps, in order:
//  1. a first parse that only reads `plugin_library` (plugin options of
//     types not known yet are skipped), and loads those shared libraries,
//     so their options types are in the descriptor pool and their
//     factories in the registries;
//  2. the real parse: syntax errors come back as
//     "FILE:LINE:COLUMN: message" (1-based);
//  3. defaults for fields left at zero (see ApplyDefaults);
//  4. validation: every error names FILE:LINE:COLUMN (where the field is
//     written in the file) and the field path, e.g.
//     "configs/x.pbtxt:7:3: precision: only fp32 is supported for now, got
//     'bf16'".
// Nothing is written anywhere. Every error is InvalidArgument (NotFound for
// a missing file) and binaries exit with code 2 on it.
#ifndef RECEIPT_PARITY_TRAINER_CONFIG_LOADER_H_
#define RECEIPT_PARITY_TRAINER_CONFIG_LOADER_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/text_format.h"
#include "trainer/config.pb.h"

namespace receipt_parity {

// Where each field of a loaded config was written.
class ConfigLocator {
 public:
  using ParseInfoTree = google::protobuf::TextFormat::ParseInfoTree;
  ConfigLocator(std::string path, std::unique_ptr<ParseInfoTree> parse_info);

  const std::string& path() const { return path_; }

  // "FILE:LINE:COLUMN" for a field path like "data.validation_fraction" or
  // "local_batch_sizes[1]"; "FILE" alone when the field is not written in
  // the file (it has its default).
  std::string Where(const std::string& field_path) const;

  // A status whose message starts with "<field path>: " gets
  // "<Where(field path)>: " in front; others get "FILE: ". OK stays OK.
  absl::Status Locate(const absl::Status& status) const;

 private:
  std::string path_;
  std::unique_ptr<ParseInfoTree> parse_info_;
};

struct LoadedConfig {
  TrainingConfig config;
  std::shared_ptr<const ConfigLocator> locator;
};

// Steps 1-4 above. Plugin lookups in step 4 use whatever is registered in
// this binary plus the loaded libraries.
absl::StatusOr<LoadedConfig> LoadTrainingConfig(const std::string& path);

// Parses config text (steps 2-4, no plugin libraries): for tests and for
// configs passed between processes. `name` stands for the file in messages.
absl::StatusOr<LoadedConfig> ParseTrainingConfig(const std::string& text,
                                                 const std::string& name);

// Fills zero-valued fields with their documented defaults: precision
// "fp32", backend "gloo", world_size 1, epochs 1, data.image_size 32,
// data.views_per_identity 1, plugins masked_tail / global_count /
// allreduce_sum / by_receipt_id, parity rtol 1e-6 atol 1e-7,
// checkpoint.keep_last 2, run.log_every_updates 10,
// run.collective_timeout_seconds 60, run.intra_op_threads 1,
// run.master_addr "127.0.0.1".
void ApplyDefaults(TrainingConfig* config);

// Field-path-prefixed errors ("world_size: ..."); no locations.
absl::Status ValidateConfig(const TrainingConfig& config);

// Slots per rank per update: local_batch_sizes, or global_batch / world_size
// on every rank. REQUIRES: ValidateConfig(config).ok().
std::vector<int> LocalBatchSizes(const TrainingConfig& config);

// Hex SHA-1 of the deterministic serialization of `config` without the
// fields that do not change what is trained: `run` (output folder, logging,
// fault injection, limits), `checkpoint` (how often and how many to keep)
// and `plugin_library` (paths differ by host).
std::string ConfigFingerprint(const TrainingConfig& config);

// The one-worker reference run of `config`: world_size 1, no uneven split,
// no checkpointing, no fault injection; same data, model, optimizer, seeds,
// global batch and loss weighting.
TrainingConfig ReferenceConfig(const TrainingConfig& config);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_TRAINER_CONFIG_LOADER_H_

// The sampler audit tool: what a sampler policy does to every epoch.
//
//   bazel run //samplers:audit -- --num_ids=47 --world_size=3 --seed=0
//       --epochs=2 --policy=masked_tail --out=/tmp/sampler_audit.json
//   bazel run //samplers:audit -- --config=configs/NAME.pbtxt --out=FILE.json
//
// With --config, the training config gives everything: its training
// receipts (their real ids), world size, local batches, sampler seed,
// epochs and sampler policy with its options.
//
// Writes the SamplerAudit JSON (samplers/audit.proto) to --out and a short
// summary to stdout; logs go to stderr. Exit 0 on success, 2 for bad flags
// or an unknown policy, 1 when the audit or the write fails.

#include <cstdint>
#include <filesystem>
#include <iostream>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "io/checksum.h"
#include "io/atomic_file.h"
#include "artifacts/artifact_stamp.h"
#include "cli/command_line.h"
#include "data/receipt_dataset.h"
#include "logging/glog.h"
#include "google/protobuf/message.h"
#include "io/json_file.h"
#include "plugins/plugin_registry.h"
#include "runtime/heap_trim.h"
#include "samplers/audit.h"
#include "samplers/distributed_order.h"
#include "samplers/sampler_policy.h"
#include "config/config_loader.h"
#include "config/config_overrides.h"

ABSL_FLAG(int32_t, num_ids, -1, "Examples in the dataset (ids 0..n-1).");
ABSL_FLAG(int32_t, world_size, 1, "Ranks.");
ABSL_FLAG(uint64_t, seed, 0, "DistributedSampler's seed.");
ABSL_FLAG(int32_t, epochs, 2, "Epochs to audit (0 .. epochs-1).");
ABSL_FLAG(std::string, policy, "", "Sampler policy name, e.g. masked_tail.");
ABSL_FLAG(bool, no_shuffle, false,
          "Audit the policy with disable_shuffle (shuffle=False).");
ABSL_FLAG(std::vector<std::string>, local_batch_sizes, {},
          "Slots per rank per update, e.g. 3,1; default 1 on every rank.");
ABSL_FLAG(std::string, out, "", "Where to write the audit JSON.");
ABSL_FLAG(int64_t, slots_file_above, receipt_parity::kAuditSlotsFileAbove,
          "Above this many slots (ids x epochs) the per-slot "
          "record goes to a side file beside --out (its name without .json, "
          "plus .slots; samplers/audit_slots_file.h) and the JSON keeps the "
          "summary.");
ABSL_FLAG(std::string, config, "",
          "Audit a training config instead: its receipts, world size, local "
          "batches, seed, epochs and sampler.");

namespace receipt_parity {
namespace {

constexpr int kBadInput = 2;

int BadInput(const std::string& message) {
  std::cerr << "audit: " << message << "\n";
  return kBadInput;
}

// --local_batch_sizes, or one slot per rank.
bool LocalBatchSizesFromFlag(int world_size, std::vector<int>* sizes,
                     std::string* error) {
  const std::vector<std::string> text = absl::GetFlag(FLAGS_local_batch_sizes);
  if (text.empty()) {
    sizes->assign(world_size, 1);
    return true;
  }
  for (const std::string& entry : text) {
    int value = 0;
    if (!absl::SimpleAtoi(entry, &value)) {
      *error = "--local_batch_sizes: '" + entry + "' is not an integer";
      return false;
    }
    sizes->push_back(value);
  }
  return true;
}

// Builds the policy from its default options, with shuffling off when asked
// for (the built-in policies' typed disable_shuffle).
absl::StatusOr<std::unique_ptr<SamplerPolicy>> MakePolicy(
    const Factory<SamplerPolicy>& factory, bool no_shuffle) {
  if (!no_shuffle) return factory.Create(*factory.CreateEmptyOptions());
  const auto* unshuffled = dynamic_cast<const UnshuffledOptionsFactory*>(&factory);
  if (unshuffled == nullptr) {
    return absl::InvalidArgumentError(
        "--no_shuffle: policy '" + factory.name() + "' (options " +
        factory.CreateEmptyOptions()->GetDescriptor()->full_name() +
        ") has no disable_shuffle option");
  }
  return factory.Create(*unshuffled->UnshuffledOptions());
}

// Writes `audit` to `out` and its summary to stdout (`side_file`: the
// large audit's slots, already written, for the log). Returns the exit code.
int WriteAuditAndSummary(const SamplerAudit& audit, const std::string& out,
                         const std::string& side_file = "") {
  // Not an artifact of a run: an empty stamp, so the file has the keys a
  // run's sampler_audit.json has ("config_fingerprint": "", "attempt": 0).
  absl::Status written = WriteArtifact(out, ArtifactStamp(), audit);
  if (!written.ok()) {
    LOG(ERROR) << "cannot write the audit: " << written;
    return 1;
  }
  LOG(INFO) << "wrote " << out << (side_file.empty() ? "" : " and " + side_file);
  std::cout << AuditSummary(audit) << std::flush;
  return 0;
}

// Audits `policy` over `receipt_ids` (dataset index -> receipt id), writes
// the JSON to `out` and the summary to stdout. Returns the exit code.
int AuditAndWrite(const SamplerPolicy& policy, const std::string& policy_name,
                  const std::vector<std::string>& receipt_ids, int world_size,
                  uint64_t seed, int epochs,
                  const std::vector<int>& local_batch_sizes, int micro_batches,
                  const std::string& out) {
  absl::StatusOr<SamplerAudit> audit =
      AuditSampler(policy, policy_name, receipt_ids, world_size, seed, epochs,
                   local_batch_sizes, micro_batches);
  if (!audit.ok()) {
    if (absl::IsInvalidArgument(audit.status())) {
      return BadInput(std::string(audit.status().message()));
    }
    LOG(ERROR) << "audit failed: " << audit.status();
    return 1;
  }
  return WriteAuditAndSummary(*audit, out);
}

// OUT without ".json", plus ".slots".
std::string SlotsPathFor(const std::string& out) {
  const std::string stem =
      absl::EndsWith(out, ".json") ? out.substr(0, out.size() - 5) : out;
  return stem + ".slots";
}

// The large audit: the slots to OUT's side file as they come, the summary
// to OUT (`receipt_ids`: the dataset's, or nullptr for "0".."n-1").
// Refused (exit 2) before anything is allocated when this machine lacks the
// memory it needs. Returns the exit code.
int StreamAuditAndWrite(const SamplerPolicy& policy, const std::string& policy_name,
                        int64_t num_ids, int world_size, uint64_t seed, int epochs,
                        const std::vector<int>& local_batch_sizes, int micro_batches,
                        const std::string& out,
                        const std::vector<std::string>* receipt_ids = nullptr) {
  const int64_t needed = StreamAuditPeakBytes(num_ids);
  if (std::optional<int64_t> available = AvailableMemoryBytes();
      available.has_value() && needed > *available) {
    return BadInput(absl::StrFormat(
        "--num_ids=%d: the audit needs about %.1f GB of memory (%d bytes per id); this "
        "machine has %.1f GB available",
        num_ids, needed / 1e9, StreamAuditPeakBytes(1), *available / 1e9));
  }
  const std::string slots_path = SlotsPathFor(out);
  absl::StatusOr<SamplerAudit> audit =
      StreamSamplerAuditToFile(policy, policy_name, num_ids, world_size, seed, epochs,
                               local_batch_sizes, micro_batches, slots_path, receipt_ids);
  if (absl::IsInvalidArgument(audit.status())) {
    return BadInput(std::string(audit.status().message()));
  }
  if (!audit.ok()) {
    LOG(ERROR) << "cannot write the audit's slots: " << audit.status();
    return 1;
  }
  return WriteAuditAndSummary(*audit, out, slots_path);
}

// --config: everything comes from the training config, checked whole (its
// plugins included) before its receipts are loaded.
int AuditConfig(const std::string& path, const std::vector<ConfigOverride>& overrides,
                const std::string& out) {
  absl::StatusOr<LoadedConfig> loaded = LoadTrainingConfig(path, overrides);
  if (!loaded.ok()) return BadInput(std::string(loaded.status().message()));
  const TrainingConfig& config = loaded->config;
  absl::StatusOr<ReceiptSplit> data = LoadReceipts(loaded->data);
  if (!data.ok()) {
    return BadInput(std::string(loaded->locator->Locate(data.status()).message()));
  }
  absl::StatusOr<std::unique_ptr<SamplerPolicy>> policy = loaded->plugins.sampler.Create();
  if (!policy.ok()) {
    return BadInput(std::string(loaded->locator->Locate(policy.status()).message()));
  }
  std::vector<std::string> receipt_ids;
  for (const ReceiptExample& example : data->train) {
    receipt_ids.push_back(example.receipt_id);
  }
  const int64_t num_ids = static_cast<int64_t>(receipt_ids.size());
  if (num_ids * config.epochs() > absl::GetFlag(FLAGS_slots_file_above)) {
    return StreamAuditAndWrite(**policy, loaded->plugins.sampler.name(), num_ids,
                               config.world_size(), config.seeds().sampler(), config.epochs(),
                               LocalBatchSizes(config), config.accumulation_steps(), out,
                               &receipt_ids);
  }
  return AuditAndWrite(**policy, loaded->plugins.sampler.name(), receipt_ids,
                       config.world_size(), config.seeds().sampler(),
                       config.epochs(), LocalBatchSizes(config),
                       config.accumulation_steps(), out);
}

int Main(int argc, char** argv) {
  // --set is repeatable and its values may hold commas: taken out before
  // absl parses the rest (cli/command_line.h).
  std::vector<char*> positional;
  absl::StatusOr<std::vector<std::string>> sets =
      ParseCommandLineTaking("set", argc, argv, &positional);
  if (!sets.ok()) return BadInput(std::string(sets.status().message()));
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = true;
  ChangeToCallersDirectory();
  if (positional.size() > 1) {
    return BadInput(std::string("unexpected argument '") + positional[1] + "'");
  }
  if (const std::string config = absl::GetFlag(FLAGS_config); !config.empty()) {
    if (absl::GetFlag(FLAGS_num_ids) >= 0 || !absl::GetFlag(FLAGS_policy).empty()) {
      return BadInput(
          "--config takes the ids, world size, seed, epochs and policy from "
          "the training config; drop --num_ids and --policy");
    }
    if (absl::GetFlag(FLAGS_out).empty()) {
      return BadInput("--out: give the JSON file to write");
    }
    if (absl::Status s = CheckRegistries(); !s.ok()) {
      LOG(ERROR) << s;
      return 1;
    }
    absl::StatusOr<std::vector<ConfigOverride>> overrides = ParseConfigOverrides(*sets);
    if (!overrides.ok()) return BadInput(std::string(overrides.status().message()));
    return AuditConfig(config, *overrides, absl::GetFlag(FLAGS_out));
  }
  if (!sets->empty()) {
    return BadInput("--set overrides a training config's fields: give --config too");
  }
  const int num_ids = absl::GetFlag(FLAGS_num_ids);
  const int world_size = absl::GetFlag(FLAGS_world_size);
  const int epochs = absl::GetFlag(FLAGS_epochs);
  const std::string policy_name = absl::GetFlag(FLAGS_policy);
  const std::string out = absl::GetFlag(FLAGS_out);
  if (num_ids < 0) {
    return BadInput("--num_ids=" + std::to_string(num_ids) +
                    ": give the number of examples (>= 0)");
  }
  if (world_size < 1) {
    return BadInput("--world_size=" + std::to_string(world_size) +
                    ": must be >= 1");
  }
  if (epochs < 1) {
    return BadInput("--epochs=" + std::to_string(epochs) + ": must be >= 1");
  }
  if (out.empty()) return BadInput("--out: give the JSON file to write");
  std::vector<int> local_batch_sizes;
  std::string error;
  if (!LocalBatchSizesFromFlag(world_size, &local_batch_sizes, &error)) {
    return BadInput(error);
  }

  absl::Status registries = CheckRegistries();
  if (!registries.ok()) {
    LOG(ERROR) << registries;
    return 1;
  }
  absl::StatusOr<const Factory<SamplerPolicy>*> factory =
      FindFactory<SamplerPolicy>(policy_name);
  if (!factory.ok()) {
    return BadInput("--policy: " + std::string(factory.status().message()));
  }
  absl::StatusOr<std::unique_ptr<SamplerPolicy>> policy =
      MakePolicy(**factory, absl::GetFlag(FLAGS_no_shuffle));
  if (!policy.ok()) return BadInput(std::string(policy.status().message()));

  if (static_cast<int64_t>(num_ids) * epochs > absl::GetFlag(FLAGS_slots_file_above)) {
    return StreamAuditAndWrite(**policy, policy_name, num_ids, world_size,
                               absl::GetFlag(FLAGS_seed), epochs, local_batch_sizes,
                               /*micro_batches=*/1, out);
  }
  return AuditAndWrite(**policy, policy_name, IndexReceiptIds(num_ids),
                       world_size, absl::GetFlag(FLAGS_seed), epochs,
                       local_batch_sizes, /*micro_batches=*/1, out);
}

}  // namespace
}  // namespace receipt_parity

int main(int argc, char** argv) { return receipt_parity::Main(argc, argv); }

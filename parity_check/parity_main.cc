// bazel run //parity_check:parity -- --config=CONFIG --split=3,1 --out=DIR
//     [--partition_matched] [--rtol=1e-6] [--atol=1e-7]
//
// The ONE-PROCESS, SIMULATED parity check (it says so in its output and in
// parity.json): one fixed batch of sum(split) training examples (the head
// of the config's epoch-0 order for one worker), the one-worker reference
// gradient, one model copy per simulated rank from the same initial
// parameters, the configured loss weighting per rank, and the configured
// reducer over a real Gloo process group whose ranks are threads of this
// process. The real multi-process check is `//trainer:train` on a config
// with world_size > 1.
//
// Exit codes: 0 parity holds; 2 bad input; 3 parity fails; 1 other errors.

#include <filesystem>
#include <iostream>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/command_line.h"
#include "data/receipt_dataset.h"
#include "logging/glog.h"
#include "artifacts/artifact_stamp.h"
#include "io/json_file.h"
#include "config/layer_policy.h"
#include "model/classifier.h"
#include "model/keyed_dropout.h"
#include "parity/simulated_parity.h"
#include "plugins/plugin_registry.h"
#include "samplers/sampler_policy.h"
#include "config/config_loader.h"
#include "config/config_overrides.h"
#include "data/receipt_tensors.h"

ABSL_FLAG(std::string, config, "", "Training config (text proto).");
ABSL_FLAG(std::string, split, "3,1", "Examples per simulated rank, e.g. 3,1 or 2,1,1.");
ABSL_FLAG(std::string, out, "", "Output folder for parity.json.");
ABSL_FLAG(bool, partition_matched, false,
          "Reference sums the same shard gradients in rank order: two ranks "
          "must then be bitwise equal.");
ABSL_FLAG(double, rtol, -1, "Relative tolerance; default: the config's parity.rtol (1e-6).");
ABSL_FLAG(double, atol, -1, "Absolute tolerance; default: the config's parity.atol (1e-7).");

namespace receipt_parity {
namespace {

int Fail(const absl::Status& status) { return ReportFailure(status); }

absl::StatusOr<std::vector<int>> ParseSplit(const std::string& text) {
  std::vector<int> split;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int n = 0;
    if (!absl::SimpleAtoi(part, &n) || n < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--split=", text, ": each entry must be a count >= 0, got '", part, "'"));
    }
    split.push_back(n);
  }
  int total = 0;
  for (int n : split) total += n;
  if (total == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--split=", text, ": needs at least one example"));
  }
  return split;
}

// The registries are sound and the required flags are there.
absl::Status CheckStart() {
  if (absl::Status s = CheckRegistries(); !s.ok()) return s;
  if (absl::GetFlag(FLAGS_config).empty() || absl::GetFlag(FLAGS_out).empty()) {
    return absl::InvalidArgumentError("--config and --out are required");
  }
  return absl::OkStatus();
}

// The fixed batch: the head of the one-worker epoch-0 order of `data`.
absl::StatusOr<ExampleTensors> FixedBatch(const LoadedConfig& loaded,
                                          const ReceiptSplit& data,
                                          const SamplerPolicy& sampler,
                                          int64_t batch) {
  if (batch > static_cast<int64_t>(data.train.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--split adds up to ", batch, " examples; the config has only ",
        data.train.size(), " training examples"));
  }
  OrderRequest request;
  request.num_examples = static_cast<int64_t>(data.train.size());
  request.world_size = 1;
  request.seed = loaded.config.seeds().sampler();
  absl::StatusOr<EpochPlan> plan = BuildEpochPlan(sampler, request, {1});
  if (!plan.ok()) return plan.status();
  std::vector<Slot> first_slots;
  for (int64_t k = 0; k < batch; ++k) first_slots.push_back(plan->RankSlot(0, k));
  return SelectSlots(ToTensors(data.train, data.image_size), first_slots);
}

// The request: the config's model, weighting and reducer; tolerances from
// the flags, else the config's.
SimulatedParityRequest MakeRequest(const LoadedConfig& loaded,
                                   const ReceiptSplit& data,
                                   const ExampleTensors& batch,
                                   const std::vector<int>& split,
                                   const LossWeighting& weighting) {
  const TrainingConfig& config = loaded.config;
  SimulatedParityRequest parity;
  const RunModel model = loaded.model;
  parity.make_model = [model] { return model.Build(); };
  parity.inputs = batch.images;
  parity.labels = batch.labels;
  // The check is of a run's first update, update 0.
  parity.update_keys = UpdateKeys(batch.keys, 0);
  parity.split = split;
  parity.class_counts = data.train_class_counts;
  parity.weighting = &weighting;
  parity.weighting_name = loaded.plugins.weighting.name();
  const SelectedPlugin<GradientReducer> reducer = loaded.plugins.reducer;
  parity.make_reducer = [reducer] { return reducer.Create(); };
  parity.reducer_name = reducer.name();
  parity.partition_matched = absl::GetFlag(FLAGS_partition_matched);
  parity.rtol = absl::GetFlag(FLAGS_rtol) >= 0 ? absl::GetFlag(FLAGS_rtol)
                                               : config.parity().rtol();
  parity.atol = absl::GetFlag(FLAGS_atol) >= 0 ? absl::GetFlag(FLAGS_atol)
                                               : config.parity().atol();
  parity.collective_timeout =
      absl::Seconds(config.run().collective_timeout_seconds());
  return parity;
}

// What the simulated check trains, against the config's own update: it
// trains one fp32 update of the split's examples in one micro-batch per
// rank, which is the config's update only when they agree.
std::string WhatItTrains(const TrainingConfig& config, const SimulatedParityRequest& parity) {
  int examples = 0;
  for (int n : parity.split) examples += n;
  const bool same = examples == config.global_batch() && config.accumulation_steps() == 1 &&
                    config.precision() != "bf16";
  return absl::StrCat(
      "trains one fp32 update of ", examples, " examples (split ",
      absl::StrJoin(parity.split, "+"), ", one micro-batch a rank)",
      same ? ", the config's own update"
           : absl::StrCat(", not the config's own (global batch ", config.global_batch(), ", ",
                          config.accumulation_steps(), " micro-batch(es), ",
                          config.precision().empty() ? "fp32" : config.precision(),
                          "): train's first-update verdict and replay judge that one"));
}

void PrintSummary(const TrainingConfig& config, const SimulatedParityRequest& parity,
                  const ParityReport& report, const std::string& out) {
  std::cout << "SIMULATED parity check (ranks are threads of one process "
               "sharing a real Gloo group; not a multi-process run); it "
            << WhatItTrains(config, parity) << "\n"
            << "split " << absl::StrJoin(parity.split, "+") << ", "
            << parity.weighting_name << " + " << parity.reducer_name
            << (parity.partition_matched ? ", partition-matched" : "")
            << ": max abs diff " << report.max_abs_diff() << ", max rel diff "
            << report.max_rel_diff() << " (tolerance used: rtol " << report.rtol() << ", atol "
            << report.atol() << "; " << report.tolerance_reason() << ")"
            << (parity.partition_matched
                    ? absl::StrCat(", bitwise_equal ",
                                   report.bitwise_equal() ? "true" : "false")
                    : "")
            << " -> " << (report.pass() ? "PASS" : "FAIL") << "\n";
  for (const std::string& failure : report.failures()) {
    std::cout << "  " << failure << "\n";
  }
  std::cout << "wrote " << out << "/parity.json" << std::endl;
}

// The layer audit of the config's model, for split.size() ranks.
absl::StatusOr<LayerAudit> AuditSimulatedModel(const LoadedConfig& loaded,
                                               const std::vector<int>& split) {
  absl::StatusOr<std::shared_ptr<Classifier>> model = loaded.model.Build();
  if (!model.ok()) return loaded.locator->Locate(model.status());
  return AuditRunModel(loaded, **model, static_cast<int>(split.size()));
}

// Loads the data, runs the check, writes parity.json.
absl::StatusOr<ParityReport> CheckParity(const LoadedConfig& loaded,
                                         const std::vector<int>& split) {
  // parity.batch_dependent_layers: a refused model stops here.
  absl::StatusOr<LayerAudit> audit = AuditSimulatedModel(loaded, split);
  if (!audit.ok()) return audit.status();
  absl::StatusOr<ReceiptSplit> data = LoadReceipts(loaded.data);
  if (!data.ok()) return loaded.locator->Locate(data.status());
  absl::StatusOr<RunPlugins> plugins = loaded.plugins.Create();
  if (!plugins.ok()) return loaded.locator->Locate(plugins.status());
  int64_t batch_size = 0;
  for (int n : split) batch_size += n;
  absl::StatusOr<ExampleTensors> batch =
      FixedBatch(loaded, *data, *plugins->sampler, batch_size);
  if (!batch.ok()) return batch.status();
  const SimulatedParityRequest parity =
      MakeRequest(loaded, *data, *batch, split, *plugins->weighting);
  absl::StatusOr<ParityReport> report = RunSimulatedParity(parity);
  if (!report.ok()) return report.status();
  ExplainParity(*audit, &*report);
  // The one check this binary makes names its config like a run's
  // artifacts do; it is never resumed, so it is attempt 1.
  const std::string out = absl::GetFlag(FLAGS_out);
  std::filesystem::create_directories(out);
  if (absl::Status s = WriteArtifact(out + "/parity.json",
                                     MakeArtifactStamp(loaded.fingerprint, 1), *report);
      !s.ok()) {
    return s;
  }
  PrintSummary(loaded.config, parity, *report, out);
  return report;
}

int Main(const std::vector<std::string>& sets) {
  ChangeToCallersDirectory();
  if (absl::Status s = CheckStart(); !s.ok()) return Fail(s);
  absl::StatusOr<std::vector<int>> split = ParseSplit(absl::GetFlag(FLAGS_split));
  if (!split.ok()) return Fail(split.status());
  // Every check of the config, its plugins included, before any data.
  absl::StatusOr<std::vector<ConfigOverride>> overrides = ParseConfigOverrides(sets);
  if (!overrides.ok()) return Fail(overrides.status());
  absl::StatusOr<LoadedConfig> loaded =
      LoadTrainingConfig(absl::GetFlag(FLAGS_config), *overrides);
  if (!loaded.ok()) return Fail(loaded.status());
  at::set_num_threads(loaded->config.run().intra_op_threads());
  absl::StatusOr<ParityReport> report = CheckParity(*loaded, *split);
  if (!report.ok()) return Fail(report.status());
  return report->pass() ? 0 : kExitCheckFailed;
}

}  // namespace
}  // namespace receipt_parity

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Simulated one-process parity check: --config=CONFIG --split=3,1 --out=DIR "
      "[--set FIELD_PATH=VALUE ...] (the config's fields overridden as train's --set does)");
  // --set is repeatable and its values may hold commas: taken out before
  // absl parses the rest (cli/command_line.h).
  absl::StatusOr<std::vector<std::string>> sets =
      receipt_parity::ParseCommandLineTaking("set", argc, argv);
  if (!sets.ok()) return receipt_parity::ReportFailure(sets.status());
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = true;
  return receipt_parity::Main(*sets);
}

// bazel run //trainer:parity -- --config=CONFIG --split=3,1 --out=DIR
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
#include "data/label_map.h"
#include "data/receipt_dataset.h"
#include "glog/logging.h"
#include "io/json_file.h"
#include "parity/simulated_parity.h"
#include "plugins/plugin_registry.h"
#include "plugins/plugin_selection.h"
#include "samplers/sampler_policy.h"
#include "trainer/config_loader.h"
#include "trainer/receipt_tensors.h"

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

int Main() {
  ChangeToCallersDirectory();
  if (absl::Status s = CheckRegistries(); !s.ok()) return Fail(s);
  if (absl::GetFlag(FLAGS_config).empty() || absl::GetFlag(FLAGS_out).empty()) {
    return Fail(absl::InvalidArgumentError("--config and --out are required"));
  }
  absl::StatusOr<std::vector<int>> split = ParseSplit(absl::GetFlag(FLAGS_split));
  if (!split.ok()) return Fail(split.status());
  absl::StatusOr<LoadedConfig> loaded = LoadTrainingConfig(absl::GetFlag(FLAGS_config));
  if (!loaded.ok()) return Fail(loaded.status());
  const TrainingConfig& config = loaded->config;
  at::set_num_threads(config.run().intra_op_threads());

  absl::StatusOr<ReceiptSplit> data = LoadReceipts(config.data());
  if (!data.ok()) return Fail(loaded->locator->Locate(data.status()));
  int64_t batch = 0;
  for (int n : *split) batch += n;
  if (batch > static_cast<int64_t>(data->train.size())) {
    return Fail(absl::InvalidArgumentError(absl::StrCat(
        "--split adds up to ", batch, " examples; the config has only ",
        data->train.size(), " training examples")));
  }
  // The batch: the head of the one-worker epoch-0 order.
  auto sampler = CreateSelectedPlugin<SamplerPolicy>(config.sampler(), "sampler");
  if (!sampler.ok()) return Fail(loaded->locator->Locate(sampler.status()));
  OrderRequest request;
  request.num_examples = static_cast<int64_t>(data->train.size());
  request.world_size = 1;
  request.seed = config.seeds().sampler();
  absl::StatusOr<EpochPlan> plan = BuildEpochPlan(**sampler, request, {1});
  if (!plan.ok()) return Fail(plan.status());
  const std::vector<Slot>& order = plan->rank_slots(0);
  const ExampleTensors all = ToTensors(data->train, data->image_size);
  const ExampleTensors fixed = SelectSlots(
      all, absl::MakeConstSpan(order.data(), static_cast<size_t>(batch)));

  auto weighting =
      CreateSelectedPlugin<LossWeighting>(config.loss_weighting(), "loss_weighting");
  if (!weighting.ok()) return Fail(loaded->locator->Locate(weighting.status()));
  // Fail early on a bad reducer selection, with its config location.
  if (auto probe = CreateSelectedPlugin<GradientReducer>(config.reducer(), "reducer");
      !probe.ok()) {
    return Fail(loaded->locator->Locate(probe.status()));
  }

  SimulatedParityRequest parity;
  const ModelConfig model_config = config.model();
  const int side = data->image_size;
  const uint64_t init_seed = config.seeds().model_init();
  parity.make_model = [=] {
    return BuildClassifier(model_config, {1, side, side}, kNumLabels, init_seed);
  };
  parity.inputs = fixed.images;
  parity.labels = fixed.labels;
  parity.split = *split;
  parity.class_counts = data->train_class_counts;
  parity.weighting = weighting->get();
  parity.weighting_name = config.loss_weighting().name();
  const PluginSelection reducer_selection = config.reducer();
  parity.make_reducer = [reducer_selection] {
    return CreateSelectedPlugin<GradientReducer>(reducer_selection, "reducer");
  };
  parity.reducer_name = config.reducer().name();
  parity.partition_matched = absl::GetFlag(FLAGS_partition_matched);
  parity.rtol = absl::GetFlag(FLAGS_rtol) >= 0 ? absl::GetFlag(FLAGS_rtol)
                                               : config.parity().rtol();
  parity.atol = absl::GetFlag(FLAGS_atol) >= 0 ? absl::GetFlag(FLAGS_atol)
                                               : config.parity().atol();
  parity.collective_timeout =
      absl::Seconds(config.run().collective_timeout_seconds());

  absl::StatusOr<ParityReport> report = RunSimulatedParity(parity);
  if (!report.ok()) return Fail(report.status());
  const std::string out = absl::GetFlag(FLAGS_out);
  std::filesystem::create_directories(out);
  if (absl::Status s = WriteJsonFile(out + "/parity.json", *report); !s.ok()) {
    return Fail(s);
  }
  std::cout << "SIMULATED parity check (ranks are threads of one process "
               "sharing a real Gloo group; not a multi-process run)\n"
            << "split " << absl::StrJoin(*split, "+") << ", "
            << parity.weighting_name << " + " << parity.reducer_name
            << (parity.partition_matched ? ", partition-matched" : "")
            << ": max abs diff " << report->max_abs_diff() << ", max rel diff "
            << report->max_rel_diff() << " (rtol " << parity.rtol << ", atol "
            << parity.atol << ")"
            << (parity.partition_matched
                    ? absl::StrCat(", bitwise_equal ",
                                   report->bitwise_equal() ? "true" : "false")
                    : "")
            << " -> " << (report->pass() ? "PASS" : "FAIL") << "\n";
  for (const std::string& failure : report->failures()) {
    std::cout << "  " << failure << "\n";
  }
  std::cout << "wrote " << out << "/parity.json" << std::endl;
  return report->pass() ? 0 : kExitCheckFailed;
}

}  // namespace
}  // namespace receipt_parity

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Simulated one-process parity check: --config=CONFIG --split=3,1 --out=DIR");
  absl::ParseCommandLine(argc, argv);
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = true;
  return receipt_parity::Main();
}

// conformance: runs one plugin kind's conformance suite on one plugin and
// prints a line per check. Exit 0 when every check passes, 3 when one fails
// (with --expect_failure=TEXT the other way round: 0 only when a failing
// check's text holds TEXT), 2 for bad flags, an unknown plugin or options
// it refuses, 1 when the suite itself cannot run.
//
//   conformance --kind=reducer --plugin=team_sum --plugin_library=libteam_sum.so
//   conformance --kind=model --torchscript=receipt_model.pt --input_shape=1,16,16
//
// Kinds: reducer, sampler_policy, loss_weighting, metric_dedup, model; each
// suite's checks are in its header (conformance/<kind>_conformance.h). The
// Bazel macros of conformance/conformance_test.bzl run it as a test.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/command_line.h"
#include "conformance/loss_weighting_conformance.h"
#include "conformance/metric_dedup_conformance.h"
#include "conformance/model_conformance.h"
#include "conformance/reducer_conformance.h"
#include "conformance/sampler_policy_conformance.h"
#include "google/protobuf/text_format.h"
#include "logging/glog.h"
#include "model/model_options.pb.h"
#include "plugins/plugin_library.h"
#include "plugins/plugin_registry.h"

ABSL_FLAG(std::string, kind, "",
          "reducer, sampler_policy, loss_weighting, metric_dedup or model.");
ABSL_FLAG(std::string, plugin, "", "The plugin's registered name.");
ABSL_FLAG(std::string, options, "",
          "The plugin's options, as the body of a config's `options { ... }`, e.g. "
          "'[type.googleapis.com/receipt_parity.TeamSumOptions] { bucket_cap_bytes: 4096 }'.");
ABSL_FLAG(std::vector<std::string>, plugin_library, {},
          "Shared-library plugins to load first (comma-separated paths).");
ABSL_FLAG(std::string, torchscript, "",
          "kind=model: a TorchScript file, run by the torchscript plugin.");
ABSL_FLAG(bool, bitwise_allreduce_sum, false,
          "kind=reducer: the plugin claims bitwise allreduce_sum's result; check it.");
ABSL_FLAG(int, timeout_seconds, 5, "kind=reducer: the process group's timeout.");
ABSL_FLAG(std::string, input_shape, "1,16,16", "kind=model: one receipt's shape.");
ABSL_FLAG(int, num_classes, 4, "kind=model: logits per receipt.");
ABSL_FLAG(std::vector<std::string>, allowed_findings, {},
          "kind=model: layer audit finding kinds the model may have.");
ABSL_FLAG(std::string, expect_failure, "",
          "Pass only when a failing check's text holds this text.");
ABSL_FLAG(std::string, work_folder, "",
          "Where the ranks write their results (default: under $TEST_TMPDIR or /tmp).");
ABSL_FLAG(std::string, rank_scenario, "", "Internal: run as one rank of this scenario.");
ABSL_FLAG(std::string, result_folder, "", "Internal: where that rank writes its result.");

namespace receipt_parity {
namespace {

constexpr char kKinds[] = "reducer, sampler_policy, loss_weighting, metric_dedup, model";

absl::StatusOr<PluginSelection> Selection() {
  PluginSelection selection;
  if (!absl::GetFlag(FLAGS_torchscript).empty()) {
    if (!absl::GetFlag(FLAGS_plugin).empty() || absl::GetFlag(FLAGS_kind) != "model") {
      return absl::InvalidArgumentError("--torchscript goes with --kind=model and no --plugin");
    }
    TorchScriptModelOptions options;
    options.set_path(absl::GetFlag(FLAGS_torchscript));
    selection.set_name("torchscript");
    selection.mutable_options()->PackFrom(options);
    return selection;
  }
  if (absl::GetFlag(FLAGS_plugin).empty()) {
    return absl::InvalidArgumentError("--plugin: name the plugin to check");
  }
  std::string text = absl::StrCat("name: \"", absl::GetFlag(FLAGS_plugin), "\"");
  if (!absl::GetFlag(FLAGS_options).empty()) {
    absl::StrAppend(&text, " options { ", absl::GetFlag(FLAGS_options), " }");
  }
  if (!google::protobuf::TextFormat::ParseFromString(text, &selection)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--options: not a plugin's options in text format (protobuf's error is above): ",
        absl::GetFlag(FLAGS_options)));
  }
  return selection;
}

absl::StatusOr<std::vector<int64_t>> InputShape() {
  std::vector<int64_t> shape;
  for (absl::string_view part : absl::StrSplit(absl::GetFlag(FLAGS_input_shape), ',')) {
    int64_t size = 0;
    if (!absl::SimpleAtoi(part, &size) || size < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--input_shape: '", absl::GetFlag(FLAGS_input_shape), "' is not sizes >= 1, e.g. 1,16,16"));
    }
    shape.push_back(size);
  }
  return shape;
}

std::string WorkFolder() {
  if (!absl::GetFlag(FLAGS_work_folder).empty()) return absl::GetFlag(FLAGS_work_folder);
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string pattern = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/conformance-XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) return absl::StrCat(tmp != nullptr ? tmp : "/tmp");
  return pattern;
}

// This binary's own command line, as a rank of `scenario`.
RankCommand RankCommandOf(int argc, char** argv) {
  std::vector<std::string> own = {"/proc/self/exe"};
  for (int i = 1; i < argc; ++i) own.push_back(argv[i]);
  return [own](const std::string& scenario, const std::string& folder) {
    std::vector<std::string> command = own;
    command.push_back("--rank_scenario=" + scenario);
    command.push_back("--result_folder=" + folder);
    return command;
  };
}

absl::Status LoadLibraries() {
  for (const std::string& path : absl::GetFlag(FLAGS_plugin_library)) {
    absl::StatusOr<std::vector<std::string>> loaded = LoadPluginLibrary(path);
    if (!loaded.ok()) return loaded.status();
  }
  return CheckRegistries();
}

// The suite of --kind, or as one rank of --rank_scenario.
absl::StatusOr<SuiteReport> RunSuite(const PluginSelection& selection, RankCommand command,
                                     bool* was_rank) {
  const std::string kind = absl::GetFlag(FLAGS_kind);
  const std::string scenario = absl::GetFlag(FLAGS_rank_scenario);
  const std::string folder = absl::GetFlag(FLAGS_result_folder);
  *was_rank = !scenario.empty();
  if (kind == "reducer") {
    ReducerSuiteOptions options;
    options.selection = selection;
    options.bitwise_allreduce_sum = absl::GetFlag(FLAGS_bitwise_allreduce_sum);
    options.timeout = std::chrono::seconds(absl::GetFlag(FLAGS_timeout_seconds));
    options.rank_command = command;
    if (*was_rank) {
      if (absl::Status s = RunReducerRank(options, scenario, folder); !s.ok()) return s;
      return SuiteReport();
    }
    options.work_folder = WorkFolder();
    return RunReducerSuite(options);
  }
  if (kind == "sampler_policy") {
    SamplerSuiteOptions options;
    options.selection = selection;
    options.rank_command = command;
    if (*was_rank) {
      if (absl::Status s = RunSamplerPolicyRank(options, folder); !s.ok()) return s;
      return SuiteReport();
    }
    options.work_folder = WorkFolder();
    return RunSamplerPolicySuite(options);
  }
  if (kind == "loss_weighting") return RunLossWeightingSuite(selection);
  if (kind == "metric_dedup") return RunMetricDedupSuite(selection);
  if (kind == "model") {
    ModelSuiteOptions options;
    options.selection = selection;
    absl::StatusOr<std::vector<int64_t>> shape = InputShape();
    if (!shape.ok()) return shape.status();
    options.input_shape = *shape;
    options.num_classes = absl::GetFlag(FLAGS_num_classes);
    options.allowed_findings = absl::GetFlag(FLAGS_allowed_findings);
    return RunModelSuite(options);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--kind: '", kind, "' is not one of ", kKinds));
}

int Main(int argc, char** argv) {
  ChangeToCallersDirectory();
  if (absl::Status s = LoadLibraries(); !s.ok()) return ReportFailure(s);
  absl::StatusOr<PluginSelection> selection = Selection();
  if (!selection.ok()) return ReportFailure(selection.status());
  bool was_rank = false;
  absl::StatusOr<SuiteReport> report = RunSuite(*selection, RankCommandOf(argc, argv), &was_rank);
  if (!report.ok()) return ReportFailure(report.status());
  if (was_rank) return 0;
  const std::string text = report->Text(absl::GetFlag(FLAGS_kind), selection->name());
  std::cout << text << std::flush;
  const std::string expected = absl::GetFlag(FLAGS_expect_failure);
  if (expected.empty()) return report->ok() ? 0 : kExitCheckFailed;
  if (!report->ok() && text.find(expected) != std::string::npos) {
    std::cout << "expected: a check fails with '" << expected << "'\n";
    return 0;
  }
  std::cout << "expected a failing check holding '" << expected << "'; "
            << (report->ok() ? "every check passed" : "the failures say otherwise") << "\n";
  return kExitCheckFailed;
}

}  // namespace
}  // namespace receipt_parity

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  google::InitGoogleLogging(argv[0]);
  return receipt_parity::Main(argc, argv);
}

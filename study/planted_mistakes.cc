#include "study/planted_mistakes.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "cli/command_line.h"
#include "runtime/subprocess.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;

struct Mistake {
  const char* key;
  const char* text;
  const char* config;
  // The override that adds synchronized batch norm to this config's model.
  const char* sync_batch_norm;
};

constexpr char kBuiltInSyncBatchNorm[] = "model.batch_norm=sync";

// The Python module's own synchronized batch norm, through its kwargs.
constexpr char kPythonSyncBatchNorm[] =
    "model={ name: \"python_module\" options { "
    "[type.googleapis.com/receipt_parity.PythonModuleOptions] { "
    "path: \"functional_dropout.py\" factory: \"FunctionalDropoutNet\" "
    "kwargs_json: '{\"sync_batch_norm\": true}' } } }";

constexpr Mistake kMistakes[] = {
    {"ddp_tail_averaging", "DDP averaging at the epoch's tail", "ddp_tail_averaging.pbtxt",
     kBuiltInSyncBatchNorm},
    {"per_rank_clipping", "per-rank clipping", "per_rank_clipping.pbtxt",
     kBuiltInSyncBatchNorm},
    {"functional_dropout", "a Python module with torch.nn.functional.dropout",
     "functional_dropout.pbtxt", kPythonSyncBatchNorm},
    {"drifting_rate", "a learning rate drifting 1 % an update from update 2",
     "drifting_rate.pbtxt", kBuiltInSyncBatchNorm},
    {"rank_local_bias", "a bias updated with the rank-local gradient",
     "rank_local_bias.pbtxt", kBuiltInSyncBatchNorm},
};

std::string Describe(const PlantedRun& run) {
  std::string config = run.config;
  for (const std::string& set : run.overrides) absl::StrAppend(&config, " --set '", set, "'");
  return absl::StrCat("planted mistake '", run.mistake_text, "' in ", run.setting_text, " (",
                      config, ")");
}

absl::Status TrainOne(const PlantedRun& run, const std::string& train,
                      const std::string& planted_dir, const std::string& out_dir,
                      const std::string& log) {
  const std::string run_out = (fs::path(out_dir) / PlantedRunDir(run)).string();
  std::vector<std::string> argv = {train, "--config=" + (fs::path(planted_dir) / run.config).string(),
                                   "--out=" + run_out};
  for (const std::string& set : run.overrides) argv.push_back("--set=" + set);
  absl::StatusOr<ProcessExit> exit = RunProcess({argv, log});
  if (!exit.ok()) return exit.status();
  const std::string parity = (fs::path(run_out) / "parity.json").string();
  if (exit->exit_code() == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        Describe(run), " passed: no verdict caught it; see ", parity));
  }
  if (exit->exit_code() != kExitCheckFailed) {
    return absl::AbortedError(absl::StrCat(
        Describe(run), ": ", train, " ", exit->Describe(), ", not with status ",
        kExitCheckFailed, " (parity failed); last lines of ", log, ":\n", LastLines(log, 20)));
  }
  if (!fs::is_regular_file(parity)) {
    return absl::NotFoundError(
        absl::StrCat(Describe(run), " exited 3 without writing ", parity));
  }
  return absl::OkStatus();
}

bool AnyFails(const google::protobuf::RepeatedPtrField<TensorParity>& tensors) {
  for (const TensorParity& t : tensors) {
    if (!t.pass()) return true;
  }
  return false;
}

}  // namespace

std::vector<PlantedRun> PlantedRuns() {
  std::vector<PlantedRun> runs;
  for (const Mistake& m : kMistakes) {
    runs.push_back({m.key, "fp32", m.text, "fp32", m.config, {}});
    runs.push_back({m.key, "bf16", m.text, "bf16", m.config, {"precision=bf16"}});
    runs.push_back({m.key, "sync_batch_norm", m.text, "synchronized batch norm", m.config,
                    {m.sync_batch_norm}});
  }
  return runs;
}

std::vector<std::string> PlantedConfigs(const std::string& planted_dir) {
  std::vector<std::string> configs;
  for (const Mistake& m : kMistakes) {
    configs.push_back((fs::path(planted_dir) / m.config).string());
  }
  return configs;
}

std::string PlantedRunDir(const PlantedRun& run) {
  return absl::StrCat(run.mistake, "/", run.setting);
}

absl::Status TrainPlantedMistakes(const std::string& train, const std::string& planted_dir,
                                  const std::string& out_dir, const std::string& log) {
  for (const PlantedRun& run : PlantedRuns()) {
    if (absl::Status s = TrainOne(run, train, planted_dir, out_dir, log); !s.ok()) return s;
  }
  return absl::OkStatus();
}

std::vector<std::string> VerdictsThatCaught(const ParityReport& parity) {
  std::vector<std::string> verdicts;
  if (AnyFails(parity.gradients()) || AnyFails(parity.parameters_after_step()) ||
      !parity.ranks_agree()) {
    verdicts.push_back("first update");
  }
  const EveryUpdateVerdict& every = parity.every_update();
  if (every.updates() > 0 && !every.pass()) {
    verdicts.push_back(absl::StrCat("every update (", every.first_failure().check(), ")"));
  }
  if (parity.replay().replayed_updates() > 0 && !parity.replay().pass()) {
    verdicts.push_back("replay");
  }
  if (parity.whole_run().updates_size() > 0 && !parity.whole_run().pass()) {
    verdicts.push_back("whole run");
  }
  return verdicts;
}

}  // namespace receipt_parity

#include "study/study_stages.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "cli/command_line.h"
#include "io/atomic_file.h"
#include "runtime/mpirun_launcher.h"
#include "runtime/subprocess.h"
#include "study/planted_mistakes.h"
#include "study/study_layout.h"
#include "study/trade_report_builder.h"
#include "study/trade_report_stage.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;
namespace layout = study_layout;

constexpr char kOneWorkerConfig[] = "one_worker.pbtxt";
constexpr char kTwoWorkerConfig[] = "two_worker_masked_tail.pbtxt";
constexpr char kTwoWorkerMpiConfig[] = "two_worker_mpi.pbtxt";
constexpr char kTwoWorkerMpiStage[] = "two_worker_mpi";
constexpr char kTwoWorkerBf16Config[] = "two_worker_bf16.pbtxt";
constexpr char kTwoWorkerAllRecipesConfig[] = "two_worker_all_recipes.pbtxt";
constexpr char kWorldSizeChangeConfig[] = "world_size_change.pbtxt";
constexpr char kWorldSizeChangeOnThreeConfig[] = "world_size_change_on_three.pbtxt";
constexpr char kWorldSizeChangeOnOneConfig[] = "world_size_change_on_one.pbtxt";
constexpr char kDuplicatePadConfig[] = "world_size_change_duplicate_pad.pbtxt";
constexpr char kDuplicatePadOnThreeConfig[] = "world_size_change_duplicate_pad_on_three.pbtxt";
// The update at which the world-size-change stage preempts its runs: in
// the middle of an epoch (15 updates each), so the rest of the epoch is
// dealt to the new number of workers.
constexpr int kPreemptAtUpdate = 25;
constexpr int kAuditIds = 47;
constexpr int kAuditRanks = 3;
constexpr int kAuditEpochs = 2;

using ExitMeanings = std::vector<std::pair<int, std::string>>;

// The exit codes of //trainer:train, :parity and :fault_drill (their mains).
ExitMeanings TrainExitMeanings() {
  return {
      {1, "a run failed: a rank died or a peer timed out"},
      {2, "bad input: flags, config or data"},
      {3, "parity with the one-worker reference failed (the first update or the whole "
          "run; see the run's parity.json)"},
  };
}

ExitMeanings ParityExitMeanings() {
  return {
      {1, "the check could not run"},
      {2, "bad input: flags or config"},
      {3, "parity fails"},
  };
}

ExitMeanings FaultDrillExitMeanings() {
  return {
      {1, "a run failed unexpectedly"},
      {2, "bad input: flags or config"},
      {3, "recovery not verified"},
  };
}

std::string Path(const std::string& dir, const std::string& relative) {
  return (fs::path(dir) / relative).string();
}

std::string LogPath(const StudyOptions& options, const std::string& stage) {
  return Path(options.out_dir, absl::StrCat(layout::kLogsDir, "/", stage, ".log"));
}

absl::Status RequireFile(const std::string& path) {
  if (!fs::is_regular_file(path)) {
    return absl::NotFoundError(
        absl::StrCat("expected artifact ", path, " was not written"));
  }
  return absl::OkStatus();
}

absl::Status CopyFile(const std::string& from, const std::string& to) {
  if (absl::Status s = RequireFile(from); !s.ok()) return s;
  std::error_code error;
  fs::create_directories(fs::path(to).parent_path(), error);
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, error);
  if (error) {
    return absl::InternalError(absl::StrCat("copying ", from, " to ", to, ": ",
                                            error.message()));
  }
  return absl::OkStatus();
}

absl::Status CopyTree(const std::string& from, const std::string& to) {
  std::error_code error;
  fs::create_directories(to, error);
  if (!error) {
    fs::copy(from, to,
             fs::copy_options::recursive | fs::copy_options::overwrite_existing,
             error);
  }
  if (error) {
    return absl::InternalError(absl::StrCat("copying ", from, "/ to ", to,
                                            "/: ", error.message()));
  }
  return absl::OkStatus();
}

// Copies each of `names` from folder `from` into folder `to`.
absl::Status CopyFiles(const std::string& from, const std::string& to,
                       const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    if (absl::Status s = CopyFile(Path(from, name), Path(to, name)); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

// A failed `status`, with "see <report>" added when the program left that
// report behind (it says why, e.g. which parameters differed).
absl::Status PointAt(absl::Status status, const std::string& report) {
  if (status.ok() || !fs::exists(report)) return status;
  return absl::Status(status.code(),
                      absl::StrCat(status.message(), "\nsee ", report));
}

absl::Status RunOneWorker(const StudyPrograms& programs,
                          const StudyOptions& options) {
  const std::string run_out = Path(options.out_dir, layout::kOneWorkerDir);
  if (absl::Status s = RunProcessToSuccess(
          {{programs.train,
            "--config=" + Path(programs.configs_dir, kOneWorkerConfig),
            "--out=" + run_out},
           LogPath(options, "one_worker")},
          TrainExitMeanings());
      !s.ok()) {
    return s;
  }
  // The reference of DESIGN's list is this run's.
  return CopyTree(Path(options.out_dir, layout::kOneWorkerRunDir),
                  Path(options.out_dir, layout::kReferenceDir));
}

absl::Status RunSimulatedParity(const StudyPrograms& programs,
                                const StudyOptions& options) {
  const std::string out = Path(options.out_dir, layout::kSimulatedParityDir);
  if (absl::Status s = PointAt(
          RunProcessToSuccess(
              {{programs.parity,
                "--config=" + Path(programs.configs_dir, kTwoWorkerConfig),
                "--split=3,1", "--out=" + out},
               LogPath(options, "parity_simulated")},
              ParityExitMeanings()),
          Path(out, layout::kParity));
      !s.ok()) {
    return s;
  }
  return RequireFile(Path(out, layout::kParity));
}

absl::Status RunSamplerAudits(const StudyPrograms& programs,
                              const StudyOptions& options) {
  const std::pair<const char*, const char*> audits[] = {
      {"duplicate_pad", layout::kSamplerAuditDuplicatePad},
      {"masked_tail", layout::kSamplerAuditMaskedTail},
  };
  for (const auto& [policy, file] : audits) {
    if (absl::Status s = RunProcessToSuccess(
            {{programs.sampler_audit, absl::StrCat("--num_ids=", kAuditIds),
              absl::StrCat("--world_size=", kAuditRanks),
              absl::StrCat("--seed=", options.audit_seed),
              absl::StrCat("--epochs=", kAuditEpochs),
              absl::StrCat("--policy=", policy),
              "--out=" + Path(options.out_dir, file)},
             LogPath(options, "sampler_audit")});
        !s.ok()) {
      return s;
    }
  }
  return CopyFile(Path(options.out_dir, layout::kSamplerAuditDuplicatePad),
                  Path(options.out_dir, layout::kSamplerAudit));
}

// A further run's own artifacts, which the trade report reads from its
// folder.
absl::Status RequireRunArtifacts(const std::string& run_out) {
  for (const char* artifact :
       {layout::kRunSummary, layout::kValidation, layout::kParity}) {
    if (absl::Status s = RequireFile(Path(run_out, artifact)); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// //trainer:train with `config` (a file in the configs folder) into
// `run_out`, its output in `log`; a failure points at the run's parity.json
// when it left one.
absl::Status TrainMultiWorker(const StudyPrograms& programs,
                              const std::string& config,
                              const std::string& run_out,
                              const std::string& log) {
  return PointAt(
      RunProcessToSuccess({{programs.train,
                            "--config=" + Path(programs.configs_dir, config),
                            "--out=" + run_out},
                           log},
                          TrainExitMeanings()),
      Path(run_out, layout::kParity));
}

absl::Status RunTwoWorker(const StudyPrograms& programs,
                          const StudyOptions& options) {
  const std::string run_out = Path(options.out_dir, layout::kTwoWorkerDir);
  // The trainer reuses a reference of the same config instead of making
  // its own, so parity.json is against the reference of DESIGN's list.
  if (absl::Status s =
          CopyTree(Path(options.out_dir, layout::kReferenceDir),
                   Path(run_out, layout::kReferenceDir));
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          TrainMultiWorker(programs, kTwoWorkerConfig, run_out,
                           LogPath(options, "two_worker"));
      !s.ok()) {
    return s;
  }
  return CopyFiles(run_out, options.out_dir,
                   {layout::kFirstStep, layout::kParity, layout::kValidation});
}

// Where OpenMPI's mpirun is not installed the stage only says so in its
// log. The run makes its own one-update reference: the study's is of
// another reducer, so of another config fingerprint, which the trainer
// refuses as a reference.
absl::Status RunTwoWorkerMpi(const StudyPrograms& programs,
                             const StudyOptions& options) {
  const std::string log = LogPath(options, kTwoWorkerMpiStage);
  if (!MpirunInstalled()) {
    std::error_code error;
    fs::create_directories(fs::path(log).parent_path(), error);
    return WriteFileAtomically(
        log, absl::StrCat("not run: ", kMpirunNotInstalled, " (", MpirunProgram(),
                          ", $MPIRUN or in PATH)\n"));
  }
  const std::string run_out = Path(options.out_dir, layout::kTwoWorkerMpiDir);
  if (absl::Status s =
          TrainMultiWorker(programs, kTwoWorkerMpiConfig, run_out, log);
      !s.ok()) {
    return s;
  }
  return RequireRunArtifacts(run_out);
}

// The stage's line: what it runs, or that it will not run.
std::string TwoWorkerMpiDescription() {
  const std::string run = absl::StrCat(
      "the two-worker run over OpenMPI (configs/", kTwoWorkerMpiConfig, ")");
  return MpirunInstalled()
             ? run
             : absl::StrCat(run, ": not run, ", kMpirunNotInstalled);
}

// The two-worker run with bf16 forward passes. It makes its own one-update
// bf16 reference (the study's is fp32, another fingerprint), whose update
// against fp64 derives the run's parity tolerance.
absl::Status RunTwoWorkerBf16(const StudyPrograms& programs,
                              const StudyOptions& options) {
  const std::string run_out = Path(options.out_dir, layout::kTwoWorkerBf16Dir);
  if (absl::Status s =
          TrainMultiWorker(programs, kTwoWorkerBf16Config, run_out,
                           LogPath(options, "two_worker_bf16"));
      !s.ok()) {
    return s;
  }
  return RequireRunArtifacts(run_out);
}

// The two-worker run with every recipe and layer at once, against the
// reference of its own config (made in its folder, trained through the run
// for the whole-run verdict beside its drift twin).
absl::Status RunTwoWorkerAllRecipes(const StudyPrograms& programs,
                                    const StudyOptions& options) {
  const std::string run_out = Path(options.out_dir, layout::kTwoWorkerAllRecipesDir);
  if (absl::Status s = TrainMultiWorker(programs, kTwoWorkerAllRecipesConfig, run_out,
                                        LogPath(options, "two_worker_all_recipes"));
      !s.ok()) {
    return s;
  }
  if (absl::Status s = RequireRunArtifacts(run_out); !s.ok()) return s;
  return RequireFile(Path(run_out, layout::kRunState));
}

// //trainer:train of `config` into `run_out`, preempted by a SIGTERM to
// rank 0 when it has done kPreemptAtUpdate updates: it stops there, saves
// a generation and exits 4.
absl::Status TrainUntilPreempted(const StudyPrograms& programs, const std::string& config,
                                 const std::string& run_out, const std::string& log) {
  absl::StatusOr<ProcessExit> exit = RunProcess(
      {{programs.train, "--config=" + Path(programs.configs_dir, config), "--out=" + run_out,
        "--kill_rank=0", "--kill_phase=forward_backward",
        absl::StrCat("--kill_update=", kPreemptAtUpdate), "--kill_signal=SIGTERM"},
       log});
  if (!exit.ok()) return exit.status();
  if (exit->exit_code() != kExitPreempted) {
    return absl::AbortedError(absl::StrCat(
        programs.train, " --config=", config, " preempted at update ", kPreemptAtUpdate, " ",
        exit->Describe(), ", not with status ", kExitPreempted, " (preempted); last lines of ",
        log, ":\n", LastLines(log, 20)));
  }
  return absl::OkStatus();
}

// A copy of the preempted run `preempted`, continued with `config` in
// `run_out` (another number of workers).
absl::Status ContinueCopy(const StudyPrograms& programs, const std::string& preempted,
                          const std::string& config, const std::string& run_out,
                          const std::string& log) {
  if (absl::Status s = CopyTree(preempted, run_out); !s.ok()) return s;
  if (absl::Status s = TrainMultiWorker(programs, config, run_out, log); !s.ok()) return s;
  for (const char* artifact : {layout::kRunSummary, layout::kResumeRecord,
                               layout::kWorldSizeChangeReport}) {
    if (absl::Status s = RequireFile(Path(run_out, artifact)); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// The world-size-change stage (issue 28): world_size_change.pbtxt on two
// workers uninterrupted; the same run preempted at update 25 and continued
// from that generation on three workers and, from a copy, on one; and
// world_size_change_duplicate_pad.pbtxt (an order that depends on the world
// size) preempted the same way and continued on three.
absl::Status RunWorldSizeChange(const StudyPrograms& programs, const StudyOptions& options) {
  const std::string dir = Path(options.out_dir, layout::kWorldSizeChangeDir);
  const std::string log = LogPath(options, "world_size_change");
  auto at = [&](const char* name) { return Path(dir, name); };
  if (absl::Status s = TrainMultiWorker(programs, kWorldSizeChangeConfig,
                                        at(layout::kUninterruptedDir), log);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = RequireFile(Path(at(layout::kUninterruptedDir), layout::kRunSummary));
      !s.ok()) {
    return s;
  }
  if (absl::Status s = TrainUntilPreempted(programs, kWorldSizeChangeConfig,
                                           at(layout::kPreemptedDir), log);
      !s.ok()) {
    return s;
  }
  for (const auto& [config, name] :
       {std::pair{kWorldSizeChangeOnThreeConfig, layout::kOnThreeDir},
        std::pair{kWorldSizeChangeOnOneConfig, layout::kOnOneDir}}) {
    if (absl::Status s = ContinueCopy(programs, at(layout::kPreemptedDir), config, at(name), log);
        !s.ok()) {
      return s;
    }
  }
  const std::string duplicate_pad = at(layout::kDuplicatePadOnThreeDir);
  if (absl::Status s = TrainUntilPreempted(programs, kDuplicatePadConfig, duplicate_pad, log);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          TrainMultiWorker(programs, kDuplicatePadOnThreeConfig, duplicate_pad, log);
      !s.ok()) {
    return s;
  }
  return RequireFile(Path(duplicate_pad, layout::kWorldSizeChangeReport));
}

absl::Status RunPlantedMistakes(const StudyPrograms& programs, const StudyOptions& options) {
  return TrainPlantedMistakes(programs.train, programs.planted_dir,
                              Path(options.out_dir, layout::kPlantedMistakesDir),
                              LogPath(options, "planted_mistakes"));
}

absl::Status RunFaultDrill(const StudyPrograms& programs,
                           const StudyOptions& options) {
  const std::string out = Path(options.out_dir, layout::kFaultDrillDir);
  if (absl::Status s = PointAt(
          RunProcessToSuccess(
              {{programs.fault_drill,
                "--config=" + Path(programs.configs_dir, kTwoWorkerConfig),
                "--out=" + out},
               LogPath(options, "fault_drill")},
              FaultDrillExitMeanings()),
          Path(out, layout::kFailureTrace));
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CopyFiles(out, options.out_dir,
                                 {layout::kFailureTrace, layout::kRecovery});
      !s.ok()) {
    return s;
  }
  // The checkpoints of the run that was killed and resumed.
  const std::string checkpoints =
      Path(out, layout::kFaultDrillCheckpointsDir);
  if (!fs::is_directory(checkpoints)) {
    return absl::NotFoundError(
        absl::StrCat("the fault drill left no folder ", checkpoints));
  }
  return CopyTree(checkpoints, Path(options.out_dir, layout::kCheckpointsDir));
}

}  // namespace

absl::Status PrepareStudyFolder(const std::string& out_dir) {
  std::error_code error;
  const std::string marker = Path(out_dir, layout::kMarker);
  if (fs::exists(out_dir, error)) {
    if (!fs::is_directory(out_dir, error)) {
      return absl::FailedPreconditionError(
          absl::StrCat(out_dir, " exists and is not a folder"));
    }
    const bool empty = fs::is_empty(out_dir, error);
    if (!empty && !fs::exists(marker, error)) {
      return absl::FailedPreconditionError(absl::StrCat(
          out_dir, " is not empty and was not made by a study; remove it "
                   "or choose another --out"));
    }
    std::vector<fs::path> entries;
    for (const fs::directory_entry& entry :
         fs::directory_iterator(out_dir, error)) {
      entries.push_back(entry.path());
    }
    for (const fs::path& entry : entries) {
      if (error) break;
      fs::remove_all(entry, error);
    }
  } else {
    fs::create_directories(out_dir, error);
  }
  if (error) {
    return absl::InternalError(
        absl::StrCat("preparing ", out_dir, ": ", error.message()));
  }
  return WriteFileAtomically(
      marker, "This folder was made by //trainer:study; a new study empties it.\n");
}

std::vector<std::string> StudyConfigs(const StudyPrograms& programs) {
  std::vector<std::string> configs = {Path(programs.configs_dir, kOneWorkerConfig),
          Path(programs.configs_dir, kTwoWorkerConfig),
          Path(programs.configs_dir, kTwoWorkerMpiConfig),
          Path(programs.configs_dir, kTwoWorkerBf16Config),
          Path(programs.configs_dir, kTwoWorkerAllRecipesConfig),
          Path(programs.configs_dir, kWorldSizeChangeConfig),
          Path(programs.configs_dir, kWorldSizeChangeOnThreeConfig),
          Path(programs.configs_dir, kWorldSizeChangeOnOneConfig),
          Path(programs.configs_dir, kDuplicatePadConfig),
          Path(programs.configs_dir, kDuplicatePadOnThreeConfig)};
  for (std::string& planted : PlantedConfigs(programs.planted_dir)) {
    configs.push_back(std::move(planted));
  }
  return configs;
}

std::vector<Stage> StudyStages(const StudyPrograms& programs,
                               const StudyOptions& options) {
  return {
      {"one_worker", "one-worker reference (configs/one_worker.pbtxt)",
       [=] { return RunOneWorker(programs, options); }},
      {"parity_simulated",
       "one-process gradient parity check, 3+1 split, against one worker",
       [=] { return RunSimulatedParity(programs, options); }},
      {"sampler_audit",
       absl::StrCat("sampler audit, ", kAuditIds, " ids on ", kAuditRanks,
                    " ranks, duplicate_pad and masked_tail"),
       [=] { return RunSamplerAudits(programs, options); }},
      {"two_worker",
       "two-worker run with deduplicated validation "
       "(configs/two_worker_masked_tail.pbtxt)",
       [=] { return RunTwoWorker(programs, options); }},
      {kTwoWorkerMpiStage, TwoWorkerMpiDescription(),
       [=] { return RunTwoWorkerMpi(programs, options); }},
      {"two_worker_bf16",
       "the two-worker run with bf16 forward passes "
       "(configs/two_worker_bf16.pbtxt)",
       [=] { return RunTwoWorkerBf16(programs, options); }},
      {"two_worker_all_recipes",
       "the two-worker run with every recipe and layer at once, judged over the whole run "
       "(configs/two_worker_all_recipes.pbtxt)",
       [=] { return RunTwoWorkerAllRecipes(programs, options); }},
      {"world_size_change",
       absl::StrCat("the run preempted at update ", kPreemptAtUpdate,
                    " on two workers, continued on three and on one "
                    "(configs/world_size_change*.pbtxt)"),
       [=] { return RunWorldSizeChange(programs, options); }},
      {"planted_mistakes",
       "five planted mistakes in fp32, bf16 and with synchronized batch norm, each of which "
       "must fail parity (plugins/planted/)",
       [=] { return RunPlantedMistakes(programs, options); }},
      {"fault_drill", "fault drill: kill a rank mid-save, restart, compare",
       [=] { return RunFaultDrill(programs, options); }},
      {"trade_report", "trade report: trade_report.json, .md and .svg",
       [=] { return WriteTradeReport(options.out_dir).status(); }},
  };
}

}  // namespace receipt_parity

#include "study/trade_report_stage.h"

#include <filesystem>
#include <optional>

#include "absl/strings/str_cat.h"
#include "io/atomic_file.h"
#include "artifacts/artifact_stamp.h"
#include "artifacts/run_folder_state.pb.h"
#include "io/json_file.h"
#include "study/planted_mistakes.h"
#include "study/study_layout.h"
#include "study/trade_report_markdown.h"
#include "study/trade_report_svg.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;
namespace layout = study_layout;

std::string Join(const std::string& dir, const std::string& relative) {
  return (fs::path(dir) / relative).string();
}

// A stamped artifact of a stage's run (artifacts/artifact_stamp.h).
template <typename Message>
absl::StatusOr<Sourced<Message>> ReadSourced(const std::string& study_dir,
                                             const std::string& relative) {
  Sourced<Message> sourced;
  sourced.source = relative;
  if (absl::Status s = ReadArtifact(Join(study_dir, relative), &sourced.message);
      !s.ok()) {
    return s;
  }
  return sourced;
}

absl::Status ReadRun(const std::string& study_dir, const std::string& run_dir,
                     RunArtifacts* run) {
  run->source = run_dir;
  if (absl::Status s = ReadArtifact(
          Join(study_dir, absl::StrCat(run_dir, "/", layout::kRunSummary)),
          &run->summary, &run->stamp);
      !s.ok()) {
    return s;
  }
  return ReadArtifact(
      Join(study_dir, absl::StrCat(run_dir, "/", layout::kValidation)),
      &run->validation);
}

// The run in `run_dir` and its parity.json, when the study made that
// folder; `*artifacts` is left empty otherwise.
absl::Status ReadRunWithParity(const std::string& study_dir,
                               const std::string& run_dir,
                               std::optional<RunWithParityArtifacts>* artifacts) {
  if (!fs::is_directory(Join(study_dir, run_dir))) return absl::OkStatus();
  RunWithParityArtifacts read;
  if (absl::Status s = ReadRun(study_dir, run_dir, &read.run); !s.ok()) return s;
  absl::StatusOr<Sourced<ParityReport>> parity = ReadSourced<ParityReport>(
      study_dir, absl::StrCat(run_dir, "/", layout::kParity));
  if (!parity.ok()) return parity.status();
  read.parity = *std::move(parity);
  *artifacts = std::move(read);
  return absl::OkStatus();
}

// The run with every recipe, and the config its run_state.json holds.
absl::Status ReadAllRecipesRun(const std::string& study_dir,
                               std::optional<AllRecipesRunArtifacts>* artifacts) {
  std::optional<RunWithParityArtifacts> run;
  if (absl::Status s = ReadRunWithParity(study_dir, layout::kTwoWorkerAllRecipesDir, &run);
      !s.ok() || !run.has_value()) {
    return s;
  }
  RunFolderState state;
  if (absl::Status s = ReadJsonFile(
          Join(study_dir, absl::StrCat(layout::kTwoWorkerAllRecipesDir, "/", layout::kRunState)),
          &state);
      !s.ok()) {
    return s;
  }
  *artifacts = AllRecipesRunArtifacts{*std::move(run), state.config()};
  return absl::OkStatus();
}

// One continuation's folder `relative` (under the study's).
absl::Status ReadContinuation(const std::string& study_dir, const std::string& relative,
                              ContinuationArtifacts* run) {
  run->source = relative;
  const std::string dir = Join(study_dir, relative);
  if (absl::Status s = ReadArtifact(Join(dir, layout::kRunSummary), &run->summary); !s.ok()) {
    return s;
  }
  if (absl::Status s = ReadArtifact(Join(dir, layout::kResumeRecord), &run->resume); !s.ok()) {
    return s;
  }
  return ReadArtifact(Join(dir, layout::kWorldSizeChangeReport), &run->change);
}

// The world-size-change stage's runs, when the study made their folder.
absl::Status ReadWorldSizeChange(const std::string& study_dir,
                                 std::optional<WorldSizeChangeArtifacts>* artifacts) {
  if (!fs::is_directory(Join(study_dir, layout::kWorldSizeChangeDir))) return absl::OkStatus();
  auto under = [](const char* name) {
    return absl::StrCat(layout::kWorldSizeChangeDir, "/", name);
  };
  WorldSizeChangeArtifacts read;
  read.source = under(layout::kUninterruptedDir);
  if (absl::Status s = ReadArtifact(
          Join(Join(study_dir, read.source), layout::kRunSummary), &read.uninterrupted);
      !s.ok()) {
    return s;
  }
  for (const char* name : {layout::kOnThreeDir, layout::kOnOneDir}) {
    ContinuationArtifacts run;
    if (absl::Status s = ReadContinuation(study_dir, under(name), &run); !s.ok()) return s;
    read.continuations.push_back(std::move(run));
  }
  if (absl::Status s = ReadContinuation(study_dir, under(layout::kDuplicatePadOnThreeDir),
                                        &read.duplicate_pad);
      !s.ok()) {
    return s;
  }
  *artifacts = std::move(read);
  return absl::OkStatus();
}

// The planted_mistakes stage's runs' parity.json, when the study made its
// folder.
absl::Status ReadPlantedMistakes(const std::string& study_dir,
                                 std::optional<std::vector<PlantedRunArtifacts>>* artifacts) {
  if (!fs::is_directory(Join(study_dir, layout::kPlantedMistakesDir))) return absl::OkStatus();
  std::vector<PlantedRunArtifacts> runs;
  for (PlantedRun& run : PlantedRuns()) {
    absl::StatusOr<Sourced<ParityReport>> parity = ReadSourced<ParityReport>(
        study_dir, absl::StrCat(layout::kPlantedMistakesDir, "/", PlantedRunDir(run), "/",
                                layout::kParity));
    if (!parity.ok()) return parity.status();
    runs.push_back({std::move(run), *std::move(parity)});
  }
  *artifacts = std::move(runs);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TradeReportInputs> LoadTradeReportInputs(
    const std::string& study_dir) {
  TradeReportInputs inputs;
  if (absl::Status s =
          ReadRun(study_dir, layout::kOneWorkerRunDir, &inputs.one_worker);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ReadRun(study_dir, layout::kTwoWorkerDir, &inputs.two_workers);
      !s.ok()) {
    return s;
  }
  absl::StatusOr<Sourced<ParityReport>> parity = ReadSourced<ParityReport>(
      study_dir, absl::StrCat(layout::kTwoWorkerDir, "/", layout::kParity));
  if (!parity.ok()) return parity.status();
  inputs.parity = *std::move(parity);
  absl::StatusOr<Sourced<ParityReport>> simulated = ReadSourced<ParityReport>(
      study_dir,
      absl::StrCat(layout::kSimulatedParityDir, "/", layout::kParity));
  if (!simulated.ok()) return simulated.status();
  inputs.simulated_parity = *std::move(simulated);
  for (const char* audit_file :
       {layout::kSamplerAuditDuplicatePad, layout::kSamplerAuditMaskedTail}) {
    absl::StatusOr<Sourced<SamplerAudit>> audit =
        ReadSourced<SamplerAudit>(study_dir, audit_file);
    if (!audit.ok()) return audit.status();
    inputs.sampler_audits.push_back(*std::move(audit));
  }
  if (fs::exists(Join(study_dir, layout::kRecovery))) {
    // The drill's report: not a run's artifact, so not stamped.
    Sourced<RecoveryReport> recovery{layout::kRecovery, {}};
    if (absl::Status s =
            ReadJsonFile(Join(study_dir, layout::kRecovery), &recovery.message);
        !s.ok()) {
      return s;
    }
    inputs.recovery = std::move(recovery);
  }
  if (inputs.two_workers.summary.has_checkpoint()) {
    inputs.checkpoint_cost = Sourced<CheckpointCost>{
        absl::StrCat(layout::kTwoWorkerDir, "/", layout::kRunSummary,
                     " checkpoint"),
        inputs.two_workers.summary.checkpoint()};
  }
  if (absl::Status s = ReadRunWithParity(study_dir, layout::kTwoWorkerMpiDir,
                                         &inputs.two_workers_mpi);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ReadRunWithParity(study_dir, layout::kTwoWorkerBf16Dir,
                                         &inputs.two_workers_bf16);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ReadAllRecipesRun(study_dir, &inputs.two_workers_all_recipes); !s.ok()) {
    return s;
  }
  if (absl::Status s = ReadWorldSizeChange(study_dir, &inputs.world_size_change); !s.ok()) {
    return s;
  }
  if (absl::Status s = ReadPlantedMistakes(study_dir, &inputs.planted_mistakes); !s.ok()) {
    return s;
  }
  inputs.picture = layout::kTradeReportPicture;
  inputs.world_size_change_picture = layout::kWorldSizeChangePicture;
  return inputs;
}

absl::StatusOr<TradeReport> WriteTradeReport(const std::string& study_dir) {
  absl::StatusOr<TradeReportInputs> inputs = LoadTradeReportInputs(study_dir);
  if (!inputs.ok()) return inputs.status();
  absl::StatusOr<TradeReport> report = BuildTradeReport(*inputs);
  if (!report.ok()) return report.status();
  if (absl::Status s =
          WriteJsonFile(Join(study_dir, layout::kTradeReportJson), *report);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          WriteFileAtomically(Join(study_dir, layout::kTradeReportMarkdown),
                              TradeReportMarkdown(*report));
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          WriteFileAtomically(Join(study_dir, layout::kTradeReportPicture),
                              TradeReportSvg(*report));
      !s.ok()) {
    return s;
  }
  if (report->world_size_change().status() == kMeasured) {
    if (absl::Status s =
            WriteFileAtomically(Join(study_dir, layout::kWorldSizeChangePicture),
                                WorldSizeChangeSvg(report->world_size_change()));
        !s.ok()) {
      return s;
    }
  }
  return report;
}

}  // namespace receipt_parity

// The trade report (study/trade_report.proto) from the artifacts of a
// study's stages, already parsed. Pure: no files, no clocks.
#ifndef RECEIPT_PARITY_STUDY_TRADE_REPORT_BUILDER_H_
#define RECEIPT_PARITY_STUDY_TRADE_REPORT_BUILDER_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "metrics/validation_report.pb.h"
#include "parity/parity_report.pb.h"
#include "samplers/audit.pb.h"
#include "study/planted_mistakes.h"
#include "study/trade_report.pb.h"
#include "artifacts/artifact_stamp.pb.h"
#include "artifacts/resume_record.pb.h"
#include "artifacts/world_size_change.pb.h"
#include "artifacts/run_summary.pb.h"
#include "config/config.pb.h"
#include "drill/drill_report.pb.h"

namespace receipt_parity {

inline constexpr int kTradeReportFormatVersion = 1;

inline constexpr char kMeasured[] = "measured";
inline constexpr char kNotMeasured[] = "not measured";
inline constexpr char kPass[] = "pass";
inline constexpr char kFail[] = "FAIL";

// A parsed artifact and where it came from (a path relative to the study's
// folder, carried into the report's `source` fields and error messages).
template <typename Message>
struct Sourced {
  std::string source;
  Message message;
};

// One training run: its run_summary.json and validation.json.
struct RunArtifacts {
  std::string source;
  RunSummary summary;
  // run_summary.json's stamp: which run wrote it.
  ArtifactStamp stamp;
  ValidationReport validation;
};

// A further multi-worker run of a study, with its own reference: its run
// and its parity.json.
struct RunWithParityArtifacts {
  RunArtifacts run;
  Sourced<ParityReport> parity;
};
// The two-worker run over OpenMPI.
using MpiRunArtifacts = RunWithParityArtifacts;
// The two-worker run with bf16 forward passes.
using PrecisionRunArtifacts = RunWithParityArtifacts;

// Why a study has no bf16 run: its folder is not there (a study made before
// the stage existed, or one whose stage did not run).
inline constexpr char kNoBf16Run[] = "the study has no two_worker_bf16 run";

// The two-worker run with every recipe: its run, its parity.json, and the
// config its run_state.json holds.
struct AllRecipesRunArtifacts {
  RunWithParityArtifacts run;
  TrainingConfig config;
};

// Why a study has no all-recipes run (as kNoBf16Run).
inline constexpr char kNoAllRecipesRun[] = "the study has no two_worker_all_recipes run";

// Why a study has no two-worker run over MPI: its stage runs only where
// OpenMPI's mpirun is installed.
inline constexpr char kMpirunNotInstalled[] = "OpenMPI's mpirun is not installed";

// Why a study has no world-size-change runs (as kNoBf16Run).
inline constexpr char kNoWorldSizeChange[] = "the study has no world_size_change runs";

// A run of the world-size-change stage continued on another number of
// workers: its folder, run_summary.json, resume.json and
// world_size_change.json.
struct ContinuationArtifacts {
  std::string source;
  RunSummary summary;
  ResumeRecord resume;
  WorldSizeChangeReport change;
};

// The world-size-change stage's runs (study/study_stages.h).
struct WorldSizeChangeArtifacts {
  // The uninterrupted run's folder and run_summary.json.
  std::string source;
  RunSummary uninterrupted;
  // The same run continued on other numbers of workers.
  std::vector<ContinuationArtifacts> continuations;
  // Its duplicate_pad twin continued on another number of workers.
  ContinuationArtifacts duplicate_pad;
};

// One run of the planted_mistakes stage and its parity.json.
struct PlantedRunArtifacts {
  PlantedRun run;
  Sourced<ParityReport> parity;
};

// Why a study has no planted mistakes (as kNoBf16Run).
inline constexpr char kNoPlantedMistakes[] = "the study has no planted_mistakes runs";

struct TradeReportInputs {
  RunArtifacts one_worker;
  RunArtifacts two_workers;
  // parity.json of the real two-worker run, and of the one-process check.
  Sourced<ParityReport> parity;
  Sourced<ParityReport> simulated_parity;
  std::vector<Sourced<SamplerAudit>> sampler_audits;
  // The fault drill's recovery.json, or nullopt when there is none.
  std::optional<Sourced<RecoveryReport>> recovery;
  // The two-worker run's RunSummary.checkpoint, or nullopt when the run
  // saved no generation.
  std::optional<Sourced<CheckpointCost>> checkpoint_cost;
  // The two-worker run over MPI, or nullopt when the study did not run it.
  std::optional<MpiRunArtifacts> two_workers_mpi;
  // The two-worker run in bf16, or nullopt when the study did not run it.
  std::optional<PrecisionRunArtifacts> two_workers_bf16;
  // The two-worker run with every recipe, or nullopt when the study did
  // not run it.
  std::optional<AllRecipesRunArtifacts> two_workers_all_recipes;
  // The world-size-change stage's runs, or nullopt when the study did not
  // run it.
  std::optional<WorldSizeChangeArtifacts> world_size_change;
  // The planted_mistakes stage's runs, or nullopt when the study did not
  // run it.
  std::optional<std::vector<PlantedRunArtifacts>> planted_mistakes;
  // File name of its picture, recorded in the report.
  std::string world_size_change_picture = "world_size_change.svg";
  // File name of the picture, recorded in the report.
  std::string picture = "trade_report.svg";
};

// Builds the report. Figures are carried over unchanged where an artifact
// has them (examples/s, sync share, per-class metrics, parity differences)
// and summed or averaged as trade_report.proto documents otherwise.
// Missing recovery, checkpoint, MPI or bf16 figures give status "not
// measured" with a note (for MPI, kMpirunNotInstalled; for bf16,
// kNoBf16Run), never an error. A planted run that passed is recorded as
// not caught (the stage has already failed the study).
// Errors: InvalidArgument naming the source when an input contradicts what
// it must be: one_worker with world_size != 1, two_workers, the MPI run or
// the bf16 run with world_size < 2, a bf16 run whose parity.json is not of
// precision bf16 (no derived tolerance), an all-recipes run whose
// parity.json has no whole-run verdict, a run whose timing does not hold
// one entry per rank, a run with no updates, a world-size-change
// continuation whose resume.json says the world size did not change.
absl::StatusOr<TradeReport> BuildTradeReport(const TradeReportInputs& inputs);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_STUDY_TRADE_REPORT_BUILDER_H_

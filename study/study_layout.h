// Where a study puts things inside its --out folder (paths relative to it).
// The top-level names are DESIGN.md's artifact list; the folders hold each
// stage's own output as its program wrote it.
#ifndef RECEIPT_PARITY_STUDY_STUDY_LAYOUT_H_
#define RECEIPT_PARITY_STUDY_STUDY_LAYOUT_H_

namespace receipt_parity {
namespace study_layout {

// Stage folders.
inline constexpr char kOneWorkerDir[] = "one_worker";
// Where //trainer:train puts a world_size 1 run inside its --out.
inline constexpr char kOneWorkerRunDir[] = "one_worker/reference";
inline constexpr char kSimulatedParityDir[] = "parity_simulated";
inline constexpr char kTwoWorkerDir[] = "two_worker";
// The same two-worker run over OpenMPI; made only where mpirun is installed.
inline constexpr char kTwoWorkerMpiDir[] = "two_worker_mpi";
// The two-worker run with bf16 forward passes (configs/two_worker_bf16).
inline constexpr char kTwoWorkerBf16Dir[] = "two_worker_bf16";
// The two-worker run with every recipe and layer at once.
inline constexpr char kTwoWorkerAllRecipesDir[] = "two_worker_all_recipes";
// What a run folder says of its config (artifacts/run_folder.h).
inline constexpr char kRunState[] = "run_state.json";
// The world-size-change stage's runs (study/study_stages.h), under
// kWorldSizeChangeDir.
inline constexpr char kWorldSizeChangeDir[] = "world_size_change";
inline constexpr char kUninterruptedDir[] = "uninterrupted";
inline constexpr char kPreemptedDir[] = "preempted";
inline constexpr char kOnThreeDir[] = "on_three";
inline constexpr char kOnOneDir[] = "on_one";
inline constexpr char kDuplicatePadOnThreeDir[] = "duplicate_pad_on_three";
inline constexpr char kWorldSizeChangeReport[] = "world_size_change.json";
inline constexpr char kResumeRecord[] = "resume.json";
inline constexpr char kWorldSizeChangePicture[] = "world_size_change.svg";
// The planted mistakes' runs (study/planted_mistakes.h), each in
// <mistake>/<setting> under it.
inline constexpr char kPlantedMistakesDir[] = "planted_mistakes";
inline constexpr char kFaultDrillDir[] = "fault_drill";
// The checkpoints of the drill's killed-and-resumed run, inside its folder.
inline constexpr char kFaultDrillCheckpointsDir[] = "interrupted/checkpoints";
// Each stage's program output (stdout and stderr), <stage>.log.
inline constexpr char kLogsDir[] = "logs";

// DESIGN.md's artifacts, at the top level.
inline constexpr char kReferenceDir[] = "reference";
inline constexpr char kFirstStep[] = "first_step.json";
inline constexpr char kParity[] = "parity.json";
inline constexpr char kSamplerAudit[] = "sampler_audit.json";
inline constexpr char kValidation[] = "validation.json";
inline constexpr char kCheckpointsDir[] = "checkpoints";
inline constexpr char kFailureTrace[] = "failure_trace.log";
inline constexpr char kRecovery[] = "recovery.json";
inline constexpr char kTradeReportJson[] = "trade_report.json";
inline constexpr char kTradeReportMarkdown[] = "trade_report.md";
inline constexpr char kTradeReportPicture[] = "trade_report.svg";

// Both sampler audits (47 ids, 3 ranks); sampler_audit.json is a copy of
// the duplicate_pad one, the policy whose duplicate the audit exists to
// show.
inline constexpr char kSamplerAuditDuplicatePad[] =
    "sampler_audit_duplicate_pad.json";
inline constexpr char kSamplerAuditMaskedTail[] =
    "sampler_audit_masked_tail.json";

// Files inside a run folder.
inline constexpr char kRunSummary[] = "run_summary.json";
inline constexpr char kRunManifest[] = "run_manifest.json";

// Present in a folder the study made: only such a folder is emptied when a
// study starts.
inline constexpr char kMarker[] = ".receipt_parity_study";

}  // namespace study_layout
}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_STUDY_STUDY_LAYOUT_H_

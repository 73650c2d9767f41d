// What //study:study does below its flags (study/study_main.cc): find the
// programs it runs in its runfiles, then run the study from an empty
// folder to the trade report's headline.
#ifndef RECEIPT_PARITY_STUDY_STUDY_DRIVER_H_
#define RECEIPT_PARITY_STUDY_STUDY_DRIVER_H_

#include <ostream>

#include "absl/status/statusor.h"
#include "cli/runfiles_locator.h"
#include "study/study_stages.h"

namespace receipt_parity {

// The study's programs and configs in `runfiles` (the binary's `data`):
// trainer/train, parity_check/parity, drill/fault_drill, audit/audit, configs/,
// plugins/planted/.
// Paths only: a missing program fails its stage, naming the path. Errors:
// LocateFolder's NotFound when the runfiles have no tree holding
// plugins/planted/.
absl::StatusOr<StudyPrograms> StudyProgramsIn(const RunfilesLocator& runfiles);

// Prepares `options.out_dir` (PrepareStudyFolder), runs every stage with one
// progress line each on `out`, then prints where the trade report is and
// its headline. Errors go to `err` as one line. Returns the exit code:
// 0 done; kExitBadInput (cli/command_line.h) when the folder cannot be
// used; kExitRunFailed when a stage fails or the report cannot be read.
// REQUIRES: options.out_dir is absolute, without a trailing '/'.
int RunStudy(const StudyPrograms& programs, const StudyOptions& options,
             std::ostream& out, std::ostream& err);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_STUDY_STUDY_DRIVER_H_

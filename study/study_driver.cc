#include "study/study_driver.h"

#include <filesystem>

#include "cli/command_line.h"
#include "io/json_file.h"
#include "study/stage_runner.h"
#include "study/study_layout.h"
#include "study/trade_report.pb.h"
#include "study/trade_report_markdown.h"

namespace receipt_parity {

namespace fs = std::filesystem;

absl::StatusOr<StudyPrograms> StudyProgramsIn(const RunfilesLocator& runfiles) {
  StudyPrograms programs;
  programs.train = runfiles.Locate("trainer/train");
  programs.parity = runfiles.Locate("parity_check/parity");
  programs.fault_drill = runfiles.Locate("drill/fault_drill");
  programs.sampler_audit = runfiles.Locate("audit/audit");
  programs.configs_dir =
      fs::path(runfiles.Locate("configs/one_worker.pbtxt")).parent_path().string();
  // The configs and the library they name relative to themselves lie side
  // by side only in the runfiles tree.
  absl::StatusOr<std::string> planted = runfiles.LocateFolder("plugins/planted");
  if (!planted.ok()) return planted.status();
  programs.planted_dir = *std::move(planted);
  return programs;
}

int RunStudy(const StudyPrograms& programs, const StudyOptions& options,
             std::ostream& out, std::ostream& err) {
  if (absl::Status s = PrepareStudyFolder(options.out_dir); !s.ok()) {
    err << "study: " << s.message() << std::endl;
    return kExitBadInput;
  }
  const fs::path dir(options.out_dir);
  out << "study: writing into " << options.out_dir
      << "/ (each program's output in "
      << (dir / study_layout::kLogsDir).string() << "/)" << std::endl;
  if (absl::Status s = RunStages(StudyStages(programs, options), &out);
      !s.ok()) {
    err << "study FAILED: " << s.message() << std::endl;
    return kExitRunFailed;
  }
  TradeReport report;
  if (absl::Status s =
          ReadJsonFile((dir / study_layout::kTradeReportJson).string(), &report);
      !s.ok()) {
    err << "study: " << s.message() << std::endl;
    return kExitRunFailed;
  }
  out << "\ntrade report: " << (dir / study_layout::kTradeReportMarkdown).string()
      << "\n  picture:    " << (dir / study_layout::kTradeReportPicture).string()
      << "\n  figures:    " << (dir / study_layout::kTradeReportJson).string()
      << "\n\n"
      << TradeReportHeadline(report) << std::flush;
  return 0;
}

}  // namespace receipt_parity

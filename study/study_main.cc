// The study (issue 7), as //trainer:study:
//
//   bazel run //trainer:study -- --out=out/study
//
// Runs the real binaries, each a child process found in this binary's
// runfiles: the one-worker reference, the one-process 3+1 parity check, the
// sampler audits (47 ids, 3 ranks, duplicate_pad and masked_tail), the
// two-worker run with deduplicated validation, the fault drill; then writes
// the trade report. One progress line per stage start and end; a failing
// stage stops the study with exit 1 and a message naming it. --out is
// relative to the user's directory (BUILD_WORKING_DIRECTORY under `bazel
// run`); a folder a previous study made is emptied first, any other
// non-empty folder is refused (exit 2).
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/statusor.h"
#include "glog/logging.h"
#include "io/json_file.h"
#include "study/runfiles_locator.h"
#include "study/stage_runner.h"
#include "study/study_layout.h"
#include "study/study_stages.h"
#include "study/trade_report.pb.h"
#include "study/trade_report_markdown.h"
#include "trainer/config_loader.h"

ABSL_FLAG(std::string, out, "out/study",
          "The study folder, relative to the directory `bazel run` was "
          "started from.");
ABSL_FLAG(uint64_t, audit_seed, 0,
          "DistributedSampler's seed for the sampler audits.");

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;

constexpr int kExitStageFailed = 1;
constexpr int kExitBadInput = 2;

absl::StatusOr<StudyPrograms> FindPrograms(const char* argv0) {
  absl::StatusOr<RunfilesLocator> runfiles = RunfilesLocator::Create(argv0);
  if (!runfiles.ok()) return runfiles.status();
  StudyPrograms programs;
  programs.train = runfiles->Locate("trainer/train");
  programs.parity = runfiles->Locate("trainer/parity");
  programs.fault_drill = runfiles->Locate("trainer/fault_drill");
  programs.sampler_audit = runfiles->Locate("samplers/audit");
  programs.configs_dir =
      fs::path(runfiles->Locate("configs/one_worker.pbtxt")).parent_path().string();
  return programs;
}

// Every config the stages will pass gets the trainer's checks now, so that a
// bad one stops the study before any stage has trained.
absl::Status CheckConfigs(const StudyPrograms& programs) {
  for (const std::string& config : StudyConfigs(programs)) {
    if (absl::StatusOr<LoadedConfig> loaded = LoadTrainingConfig(config); !loaded.ok()) {
      return loaded.status();
    }
  }
  return absl::OkStatus();
}

int Main(const char* argv0) {
  absl::StatusOr<StudyPrograms> programs = FindPrograms(argv0);
  if (!programs.ok()) {
    std::cerr << "study: " << programs.status().message() << std::endl;
    return kExitBadInput;
  }
  if (absl::Status s = CheckConfigs(*programs); !s.ok()) {
    std::cerr << "study: " << s.message() << std::endl;
    return kExitBadInput;
  }
  StudyOptions options;
  options.out_dir = UserPath(absl::GetFlag(FLAGS_out));
  if (options.out_dir.size() > 1 && options.out_dir.back() == '/') {
    options.out_dir.pop_back();
  }
  options.audit_seed = absl::GetFlag(FLAGS_audit_seed);
  if (absl::Status s = PrepareStudyFolder(options.out_dir); !s.ok()) {
    std::cerr << "study: " << s.message() << std::endl;
    return kExitBadInput;
  }
  std::cout << "study: writing into " << options.out_dir
            << "/ (each program's output in "
            << (fs::path(options.out_dir) / study_layout::kLogsDir).string()
            << "/)" << std::endl;
  if (absl::Status s = RunStages(StudyStages(*programs, options), &std::cout);
      !s.ok()) {
    std::cerr << "study FAILED: " << s.message() << std::endl;
    return kExitStageFailed;
  }
  const fs::path out(options.out_dir);
  TradeReport report;
  if (absl::Status s =
          ReadJsonFile((out / study_layout::kTradeReportJson).string(), &report);
      !s.ok()) {
    std::cerr << "study: " << s.message() << std::endl;
    return kExitStageFailed;
  }
  std::cout << "\ntrade report: "
            << (out / study_layout::kTradeReportMarkdown).string()
            << "\n  picture:    "
            << (out / study_layout::kTradeReportPicture).string()
            << "\n  figures:    "
            << (out / study_layout::kTradeReportJson).string() << "\n\n"
            << TradeReportHeadline(report) << std::flush;
  return 0;
}

}  // namespace
}  // namespace receipt_parity

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Runs the whole study and writes the trade report: --out=DIR");
  absl::ParseCommandLine(argc, argv);
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = true;
  return receipt_parity::Main(argv[0]);
}

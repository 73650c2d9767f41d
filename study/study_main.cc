// The study (issue 7), as //study:study:
//
//   bazel run //study:study -- --out=out/study
//
// Runs the real binaries, each a child process found in this binary's
// runfiles: the one-worker reference, the one-process 3+1 parity check, the
// sampler audits (47 ids, 3 ranks, duplicate_pad and masked_tail), the
// two-worker run with deduplicated validation, the same run over OpenMPI
// (where mpirun is installed), the fault drill; then writes
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
#include "cli/command_line.h"
#include "cli/runfiles_locator.h"
#include "logging/glog.h"
#include "study/study_driver.h"
#include "study/study_stages.h"
#include "config/config_loader.h"

ABSL_FLAG(std::string, out, "out/study",
          "The study folder, relative to the directory `bazel run` was "
          "started from.");
ABSL_FLAG(uint64_t, audit_seed, 0,
          "DistributedSampler's seed for the sampler audits.");

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;

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
  absl::StatusOr<RunfilesLocator> runfiles = RunfilesLocator::Create(argv0);
  if (!runfiles.ok()) {
    std::cerr << "study: " << runfiles.status().message() << std::endl;
    return kExitBadInput;
  }
  absl::StatusOr<StudyPrograms> found = StudyProgramsIn(*runfiles);
  if (!found.ok()) {
    std::cerr << "study: " << found.status().message() << std::endl;
    return kExitBadInput;
  }
  const StudyPrograms& programs = *found;
  if (absl::Status s = CheckConfigs(programs); !s.ok()) {
    std::cerr << "study: " << s.message() << std::endl;
    return kExitBadInput;
  }
  ChangeToCallersDirectory();
  StudyOptions options;
  options.out_dir =
      fs::absolute(absl::GetFlag(FLAGS_out)).lexically_normal().string();
  if (options.out_dir.size() > 1 && options.out_dir.back() == '/') {
    options.out_dir.pop_back();
  }
  options.audit_seed = absl::GetFlag(FLAGS_audit_seed);
  return RunStudy(programs, options, std::cout, std::cerr);
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

#include "cli/command_line.h"

#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "logging/glog.h"

namespace receipt_parity {

void ChangeToCallersDirectory() {
  const char* cwd = std::getenv("BUILD_WORKING_DIRECTORY");
  if (cwd != nullptr && chdir(cwd) != 0) {
    PLOG(WARNING) << "cannot change to " << cwd;
  }
}

int ExitCodeFor(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kAlreadyExists:
      return kExitBadInput;
    default:
      return kExitRunFailed;
  }
}

int ReportFailure(const absl::Status& status) {
  std::cerr << "error: " << status.message() << std::endl;
  return ExitCodeFor(status);
}

}  // namespace receipt_parity

#include "study/runfiles_locator.h"

#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "tools/cpp/runfiles/runfiles.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;
using bazel::tools::cpp::runfiles::Runfiles;

// WORKSPACE's name: the runfiles folder of this repository's files.
constexpr char kWorkspace[] = "receipt_parity";

}  // namespace

absl::StatusOr<RunfilesLocator> RunfilesLocator::Create(const char* argv0) {
  std::string error;
  std::shared_ptr<const Runfiles> runfiles(Runfiles::Create(argv0, &error));
  if (runfiles == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("cannot find the runfiles of ", argv0, ": ", error));
  }
  return RunfilesLocator(std::move(runfiles));
}

std::string RunfilesLocator::Locate(const std::string& path) const {
  return fs::absolute(runfiles_->Rlocation(absl::StrCat(kWorkspace, "/", path)))
      .lexically_normal()
      .string();
}

std::string UserPath(const std::string& path) {
  fs::path p = path;
  if (p.is_relative()) {
    const char* user_dir = std::getenv("BUILD_WORKING_DIRECTORY");
    p = (user_dir != nullptr ? fs::path(user_dir) : fs::current_path()) / p;
  }
  return p.lexically_normal().string();
}

}  // namespace receipt_parity

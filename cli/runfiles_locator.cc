#include "cli/runfiles_locator.h"

#include <stdlib.h>

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
  // Absolute, so that neither Locate's answers nor the exported variables
  // depend on the working directory a caller changes to later.
  const std::string program = fs::absolute(argv0).lexically_normal().string();
  std::string error;
  std::shared_ptr<const Runfiles> runfiles(Runfiles::Create(program, &error));
  if (runfiles == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("cannot find the runfiles of ", argv0, ": ", error));
  }
  for (const auto& [name, value] : runfiles->EnvVars()) {
    setenv(name.c_str(), value.c_str(), /*overwrite=*/1);
  }
  return RunfilesLocator(std::move(runfiles));
}

std::string RunfilesLocator::Locate(const std::string& path) const {
  return fs::absolute(runfiles_->Rlocation(absl::StrCat(kWorkspace, "/", path)))
      .lexically_normal()
      .string();
}

absl::StatusOr<std::string> RunfilesLocator::LocateFolder(const std::string& path) const {
  std::string tree;
  for (const auto& [name, value] : runfiles_->EnvVars()) {
    if (name == "RUNFILES_DIR") tree = value;
  }
  const fs::path folder = fs::absolute(fs::path(tree) / kWorkspace / path).lexically_normal();
  std::error_code error;
  if (tree.empty() || !fs::is_directory(folder, error)) {
    return absl::NotFoundError(absl::StrCat(
        "the runfiles have no folder ", path, " (looked for ", folder.string(),
        "); build with runfile links (the default)"));
  }
  return folder.string();
}

std::string RunfilesLocator::LocateExternal(const std::string& path) const {
  return fs::absolute(runfiles_->Rlocation(path)).lexically_normal().string();
}

}  // namespace receipt_parity

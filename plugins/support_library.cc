#include "plugins/support_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/cpp/runfiles/runfiles.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;

std::string ThisExecutable() {
  std::error_code error;
  const fs::path exe = fs::read_symlink("/proc/self/exe", error);
  return error ? "" : exe.string();
}

std::string InRunfiles(const std::string& exe, absl::string_view runfiles_path) {
  using bazel::tools::cpp::runfiles::Runfiles;
  std::string error;
  std::unique_ptr<Runfiles> runfiles(
      exe.empty() ? Runfiles::Create("", &error) : Runfiles::Create(exe, &error));
  if (runfiles == nullptr) return "";
  return runfiles->Rlocation(std::string(runfiles_path));
}

}  // namespace

std::vector<std::string> SupportLibraryCandidates(absl::string_view environment_variable,
                                                  absl::string_view runfiles_path) {
  std::vector<std::string> candidates;
  if (const char* explicit_path = std::getenv(std::string(environment_variable).c_str());
      explicit_path != nullptr && *explicit_path != '\0') {
    candidates.push_back(explicit_path);
  }
  const std::string exe = ThisExecutable();
  if (!exe.empty()) {
    candidates.push_back(
        (fs::path(exe).parent_path() / fs::path(std::string(runfiles_path)).filename())
            .string());
  }
  if (std::string in_runfiles = InRunfiles(exe, runfiles_path); !in_runfiles.empty()) {
    candidates.push_back(in_runfiles);
  }
  return candidates;
}

absl::Status LoadSupportLibrary(absl::string_view what,
                                const std::vector<std::string>& candidates,
                                const std::function<bool()>& registered) {
  for (const std::string& path : candidates) {
    std::error_code error;
    if (!fs::is_regular_file(path, error)) continue;
    if (dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      const char* why = dlerror();
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot load ", what, " ", path, ": ", why != nullptr ? why : "dlopen failed"));
    }
    if (!registered()) {
      return absl::FailedPreconditionError(absl::StrCat(what, " ", path, " registered nothing"));
    }
    return absl::OkStatus();
  }
  return absl::NotFoundError(
      absl::StrCat(what, " is in none of: ", absl::StrJoin(candidates, ", ")));
}

}  // namespace receipt_parity

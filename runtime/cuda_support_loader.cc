#include "runtime/cuda_support_loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/cpp/runfiles/runfiles.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;

std::unique_ptr<CudaSupport>& RegisteredSupport() {
  static auto* support = new std::unique_ptr<CudaSupport>();
  return *support;
}

std::string ThisExecutable() {
  std::error_code error;
  const fs::path exe = fs::read_symlink("/proc/self/exe", error);
  return error ? "" : exe.string();
}

std::string InRunfiles(const std::string& exe) {
  using bazel::tools::cpp::runfiles::Runfiles;
  std::string error;
  std::unique_ptr<Runfiles> runfiles(
      exe.empty() ? Runfiles::Create("", &error) : Runfiles::Create(exe, &error));
  if (runfiles == nullptr) return "";
  return runfiles->Rlocation(
      absl::StrCat("receipt_parity/runtime/", kCudaSupportLibrary));
}

absl::StatusOr<const CudaSupport*> Load() {
  const std::vector<std::string> candidates = CudaSupportCandidates();
  for (const std::string& path : candidates) {
    std::error_code error;
    if (!fs::is_regular_file(path, error)) continue;
    if (dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      const char* why = dlerror();
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot load the CUDA support library ", path, ": ",
          why != nullptr ? why : "dlopen failed"));
    }
    if (RegisteredSupport() == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the CUDA support library ", path, " registered nothing"));
    }
    return RegisteredSupport().get();
  }
  return absl::NotFoundError(
      absl::StrCat("the CUDA support library ", kCudaSupportLibrary,
                   " is in none of: ", absl::StrJoin(candidates, ", ")));
}

}  // namespace

void RegisterCudaSupport(std::unique_ptr<CudaSupport> support) {
  RegisteredSupport() = std::move(support);
}

std::vector<std::string> CudaSupportCandidates() {
  std::vector<std::string> candidates;
  if (const char* explicit_path = std::getenv("RECEIPT_PARITY_CUDA_SUPPORT");
      explicit_path != nullptr && *explicit_path != '\0') {
    candidates.push_back(explicit_path);
  }
  const std::string exe = ThisExecutable();
  if (!exe.empty()) {
    candidates.push_back(
        (fs::path(exe).parent_path() / kCudaSupportLibrary).string());
  }
  if (std::string runfiles = InRunfiles(exe); !runfiles.empty()) {
    candidates.push_back(runfiles);
  }
  return candidates;
}

absl::StatusOr<const CudaSupport*> LoadCudaSupport() {
  static std::mutex mutex;
  static absl::StatusOr<const CudaSupport*>* loaded = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded == nullptr) {
    loaded = new absl::StatusOr<const CudaSupport*>(Load());
  }
  return *loaded;
}

const CudaSupport* LoadedCudaSupport() { return RegisteredSupport().get(); }

}  // namespace receipt_parity

#include "runtime/cuda_support_loader.h"

#include <memory>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "plugins/support_library.h"

namespace receipt_parity {
namespace {

std::unique_ptr<CudaSupport>& RegisteredSupport() {
  static auto* support = new std::unique_ptr<CudaSupport>();
  return *support;
}

absl::StatusOr<const CudaSupport*> Load() {
  if (absl::Status s = LoadSupportLibrary("the CUDA support library", CudaSupportCandidates(),
                                          [] { return RegisteredSupport() != nullptr; });
      !s.ok()) {
    return s;
  }
  return RegisteredSupport().get();
}

}  // namespace

void RegisterCudaSupport(std::unique_ptr<CudaSupport> support) {
  RegisteredSupport() = std::move(support);
}

std::vector<std::string> CudaSupportCandidates() {
  return SupportLibraryCandidates("RECEIPT_PARITY_CUDA_SUPPORT",
                                  absl::StrCat("receipt_parity/runtime/", kCudaSupportLibrary));
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

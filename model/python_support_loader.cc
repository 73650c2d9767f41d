#include "model/python_support_loader.h"

#include <filesystem>
#include <memory>
#include <mutex>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "plugins/support_library.h"

namespace receipt_parity {
namespace {

std::unique_ptr<PythonSupport>& RegisteredSupport() {
  static auto* support = new std::unique_ptr<PythonSupport>();
  return *support;
}

absl::StatusOr<const PythonSupport*> Load() {
  if (absl::Status s = LoadSupportLibrary("the Python support library",
                                          PythonSupportCandidates(),
                                          [] { return RegisteredSupport() != nullptr; });
      !s.ok()) {
    return s;
  }
  return RegisteredSupport().get();
}

}  // namespace

void RegisterPythonSupport(std::unique_ptr<PythonSupport> support) {
  RegisteredSupport() = std::move(support);
}

std::vector<std::string> PythonSupportCandidates() {
  return SupportLibraryCandidates("RECEIPT_PARITY_PYTHON_SUPPORT",
                                  absl::StrCat("receipt_parity/model/", kPythonSupportLibrary));
}

std::string PythonLayersFolder() {
  for (const std::string& path : SupportLibraryCandidates(
           "RECEIPT_PARITY_PYTHON_LAYERS", "receipt_parity/model/receipt_parity_layers.py")) {
    std::error_code error;
    if (std::filesystem::is_regular_file(path, error)) {
      return std::filesystem::path(path).parent_path().string();
    }
  }
  return "";
}

absl::StatusOr<const PythonSupport*> LoadPythonSupport() {
  static std::mutex mutex;
  static absl::StatusOr<const PythonSupport*>* loaded = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded == nullptr) loaded = new absl::StatusOr<const PythonSupport*>(Load());
  return *loaded;
}

}  // namespace receipt_parity

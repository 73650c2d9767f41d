#include "plugins/plugin_library.h"

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "plugins/plugin_registry.h"

namespace receipt_parity {
namespace {

std::set<std::string> AllRegistered() {
  std::set<std::string> all;
  for (const std::string& kind : RegisteredKinds()) {
    for (const std::string& name : RegisteredNames(kind.c_str())) {
      all.insert(absl::StrCat(kind, "/", name));
    }
  }
  return all;
}

// The plugins each library file added, by its canonical path: dlopen of a
// file already loaded runs no initialiser again, so a second load answers
// from here (a process that checks several configs naming one library).
struct LoadedLibraries {
  absl::Mutex mutex;
  std::map<std::string, std::vector<std::string>> added ABSL_GUARDED_BY(mutex);
};

LoadedLibraries& Loaded() {
  static LoadedLibraries* loaded = new LoadedLibraries;
  return *loaded;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> LoadPluginLibrary(
    const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return absl::NotFoundError(
        absl::StrCat("plugin library ", path, ": no such file"));
  }
  const std::string canonical = std::filesystem::weakly_canonical(path, ec).string();
  LoadedLibraries& loaded = Loaded();
  absl::MutexLock lock(&loaded.mutex);
  if (auto it = loaded.added.find(canonical); it != loaded.added.end()) return it->second;
  const std::set<std::string> before = AllRegistered();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    return absl::FailedPreconditionError(absl::StrCat(
        "plugin library ", path, ": cannot load: ",
        error != nullptr ? error : "unknown dlopen error"));
  }
  if (absl::Status duplicates = CheckRegistries(); !duplicates.ok()) {
    return absl::AlreadyExistsError(
        absl::StrCat("plugin library ", path, ": ", duplicates.message()));
  }
  const std::set<std::string> after = AllRegistered();
  std::vector<std::string> added;
  std::set_difference(after.begin(), after.end(), before.begin(),
                      before.end(), std::back_inserter(added));
  if (added.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "plugin library ", path,
        ": registered no plugin (was it loaded already under another name, or does it "
        "lack a PluginRegistrar?)"));
  }
  loaded.added[canonical] = added;
  return added;
}

}  // namespace receipt_parity

#include "config/plugin_listing.h"

#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "io/atomic_file.h"
#include "plugins/plugin_registry.h"
#include "config/config_plugin_libraries.h"

namespace receipt_parity {
namespace {

// "kind/name" -> the file of the library that added it.
absl::StatusOr<std::map<std::string, std::string>> LoadLibrariesOf(
    const std::string& config_path) {
  std::map<std::string, std::string> origin;
  if (config_path.empty()) return origin;
  absl::StatusOr<std::string> text = ReadFileToString(config_path);
  if (!text.ok()) return text.status();
  absl::StatusOr<std::vector<LoadedPluginLibrary>> libraries =
      LoadConfigPluginLibraries(config_path, *text);
  if (!libraries.ok()) return libraries.status();
  for (const LoadedPluginLibrary& library : *libraries) {
    for (const std::string& plugin : library.plugins) {
      origin[plugin] = library.resolved_path;
    }
  }
  return origin;
}

}  // namespace

absl::StatusOr<std::string> ListPlugins(const std::string& config_path) {
  absl::StatusOr<std::map<std::string, std::string>> origin =
      LoadLibrariesOf(config_path);
  if (!origin.ok()) return origin.status();
  std::string listing;
  for (const std::string& kind : RegisteredKinds()) {
    for (const std::string& name : RegisteredNames(kind.c_str())) {
      const std::string plugin = absl::StrCat(kind, "/", name);
      const auto from = origin->find(plugin);
      absl::StrAppend(&listing, plugin,
                      from == origin->end() ? "" : absl::StrCat("  (from ", from->second, ")"),
                      "\n");
    }
  }
  return listing;
}

}  // namespace receipt_parity

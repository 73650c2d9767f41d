// Step 1 of loading a training config (config/config_loader.h): the shared
// libraries its `plugin_library` fields name, loaded before anything else is
// parsed, so that their options types are in the descriptor pool and their
// factories in the registries (plugins/plugin_library.h).
// Thread safety: not thread-safe (loads libraries into the process).
#ifndef RECEIPT_PARITY_CONFIG_CONFIG_PLUGIN_LIBRARIES_H_
#define RECEIPT_PARITY_CONFIG_CONFIG_PLUGIN_LIBRARIES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "config/config_overrides.h"

namespace receipt_parity {

// One `plugin_library` of a config, loaded.
struct LoadedPluginLibrary {
  // As written in the config.
  std::string path;
  // The file loaded: `path` resolved against the config's folder
  // (config/config_paths.h).
  std::string resolved_path;
  // Hex SHA-1 of the file's bytes: ranks compare it at start (the paths may
  // differ by host) and run_manifest.json records it.
  std::string sha1;
  // "kind/name" of each plugin it registered, sorted.
  std::vector<std::string> plugins;
};

// Reads only the `plugin_library` fields of `text`, the contents of the
// config file `config_path` (plugin options of types not known yet are
// skipped), applies the overrides of `plugin_library` among `overrides`
// (--set plugin_library=[...] replaces the file's list; a relative path is
// still relative to the config's folder), and loads each library, in
// order. Errors:
//   InvalidArgument  "FILE:LINE:COLUMN: message" for a syntax error;
//                    "FILE:LINE:COLUMN: plugin_library: ..." when a library
//                    is missing, does not load, registers nothing or a name
//                    that exists (the reason of plugins/plugin_library.h);
//                    an overridden one is named "--set plugin_library=...";
//                    a malformed override, as config/config_overrides.h.
// A library loaded stays loaded, also when a later one fails; loading the
// same library twice in one process fails (it registers nothing new).
absl::StatusOr<std::vector<LoadedPluginLibrary>> LoadConfigPluginLibraries(
    const std::string& config_path, const std::string& text,
    const std::vector<ConfigOverride>& overrides = {});

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CONFIG_CONFIG_PLUGIN_LIBRARIES_H_

// Shared-library plugins: a team builds its plugin as a `.so` (a cc_binary
// with linkshared = 1 whose static initialisers register factories, see
// examples/plugins/) and names it in the config's `plugin_library`; the
// trainer loads it at start, before any plugin is looked up.
//
// The library must not carry its own copy of the registry: it depends on
// the header-only //plugins:plugin_api and resolves the registry from the
// host binary, which exports its symbols (-rdynamic).
#ifndef RECEIPT_PARITY_PLUGINS_PLUGIN_LIBRARY_H_
#define RECEIPT_PARITY_PLUGINS_PLUGIN_LIBRARY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace receipt_parity {

// Loads `path` (dlopen, RTLD_NOW | RTLD_GLOBAL) and returns the
// "kind/name" of each plugin it registered. Errors (the path named in each):
//   NotFound           the file does not exist;
//   FailedPrecondition dlopen failed (dlerror's text is included);
//   AlreadyExists      it registered a name that already existed;
//   InvalidArgument    it registered nothing.
// A library that was loaded stays loaded, also on error. Loading the same
// file again (the same canonical path) returns what its first load
// registered, so several configs of one process may name one library.
// Thread safety: safe to call from several threads.
absl::StatusOr<std::vector<std::string>> LoadPluginLibrary(
    const std::string& path);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_PLUGINS_PLUGIN_LIBRARY_H_

// What `train --list_plugins` prints: every plugin this binary can select.
// Thread safety: not thread-safe (may load plugin libraries).
#ifndef RECEIPT_PARITY_CONFIG_PLUGIN_LISTING_H_
#define RECEIPT_PARITY_CONFIG_PLUGIN_LISTING_H_

#include <string>

#include "absl/status/statusor.h"

namespace receipt_parity {

// One line per registered plugin, "kind/name", kinds and names sorted.
// With a config (`config_path` not empty) its plugin libraries are loaded
// first (config/config_plugin_libraries.h; nothing else of the config is
// checked, so a config whose plugin name is wrong still lists what exists),
// and each plugin a library added is marked with the file it came from:
//   reducer/my_sum  (from /abs/path/libmy_sum_reducer.so)
// Errors: the config cannot be read, or a plugin library fails to load
// (with the config's line).
absl::StatusOr<std::string> ListPlugins(const std::string& config_path);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CONFIG_PLUGIN_LISTING_H_

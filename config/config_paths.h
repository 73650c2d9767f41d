// The one rule for the input files a training config names, whatever the
// field: a relative path is relative to the folder of the config file (never
// to the working directory or a search path); an absolute path stays as
// written. The fields it covers:
//   plugin_library      each shared library (config/config_plugin_libraries.h);
//   data.manifest_path  the receipt manifest (the image paths inside it are
//                       relative to the manifest's own folder,
//                       data/receipt_manifest.h);
// and every input file a later field names (a TorchScript module, say).
// Not covered: run.output_dir, a folder the run writes, which is relative
// to the working directory, as --out is.
//
// The config itself keeps its paths as written: its fingerprint hashes what
// the file says, so a config and its data moved together, or checked out at
// another path on another host, hash the same. The resolved paths live in
// LoadedConfig (config/config_loader.h), and the run opens only those.
// Thread safety: pure functions (they read the working directory).
#ifndef RECEIPT_PARITY_CONFIG_CONFIG_PATHS_H_
#define RECEIPT_PARITY_CONFIG_CONFIG_PATHS_H_

#include <string>

#include "data/data_config.pb.h"

namespace receipt_parity {

// `written` unchanged when it is absolute; else the folder of `config_file`
// joined with it, made absolute (against the working directory, when
// `config_file` is relative) and lexically normal ("a/./b/../c" is "a/c";
// links are not followed). REQUIRES: `written` is not empty.
std::string ResolveConfigPath(const std::string& config_file,
                              const std::string& written);

// `data` with manifest_path resolved by ResolveConfigPath; a synthetic
// source (or an empty manifest_path, which the checks refuse) unchanged.
DataConfig ResolveDataPaths(const std::string& config_file, DataConfig data);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CONFIG_CONFIG_PATHS_H_

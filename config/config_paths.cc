#include "config/config_paths.h"

#include <filesystem>
#include <utility>

namespace receipt_parity {

namespace fs = std::filesystem;

std::string ResolveConfigPath(const std::string& config_file,
                              const std::string& written) {
  const fs::path path(written);
  if (path.is_absolute()) return written;
  const fs::path folder = fs::path(config_file).parent_path();
  return fs::absolute(folder / path).lexically_normal().string();
}

DataConfig ResolveDataPaths(const std::string& config_file, DataConfig data) {
  if (data.source_case() == DataConfig::kManifestPath &&
      !data.manifest_path().empty()) {
    data.set_manifest_path(ResolveConfigPath(config_file, data.manifest_path()));
  }
  return data;
}

}  // namespace receipt_parity

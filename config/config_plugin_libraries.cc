#include "config/config_plugin_libraries.h"

#include <algorithm>
#include <memory>
#include <utility>

#include <c10/util/hash.h>

#include "absl/strings/str_cat.h"
#include "google/protobuf/empty.pb.h"
#include "google/protobuf/text_format.h"
#include "io/atomic_file.h"
#include "plugins/plugin_library.h"
#include "config/config.pb.h"
#include "config/config_locator.h"
#include "config/config_paths.h"

namespace receipt_parity {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::TextFormat;

// Plugin options of types this binary does not know yet (they live in a
// plugin library not loaded yet) parse as an empty message.
class LenientAnyFinder : public TextFormat::Finder {
 public:
  const Descriptor* FindAnyType(const google::protobuf::Message& message,
                                const std::string& prefix,
                                const std::string& name) const override {
    const Descriptor* known = TextFormat::Finder::FindAnyType(message, prefix, name);
    return known != nullptr ? known : google::protobuf::Empty::descriptor();
  }
};

// The config's plugin_library fields, `overrides` of plugin_library applied,
// and where each is written (an overridden one: at its --set).
absl::StatusOr<std::pair<TrainingConfig, ConfigLocator>> ParseLeniently(
    const std::string& config_path, const std::string& text,
    const std::vector<ConfigOverride>& overrides) {
  TrainingConfig config;
  LenientAnyFinder lenient;
  ParseErrors errors(config_path);
  TextFormat::Parser parser;
  parser.SetFinder(&lenient);
  parser.AllowUnknownField(true);
  parser.RecordErrorsTo(&errors);
  auto tree = std::make_unique<ConfigLocator::ParseInfoTree>();
  parser.WriteLocationsTo(tree.get());
  if (!parser.ParseFromString(text, &config)) {
    return absl::InvalidArgumentError(errors.Joined());
  }
  std::vector<ConfigOverride> libraries;
  for (const ConfigOverride& o : overrides) {
    if (o.field_path == "plugin_library") libraries.push_back(o);
  }
  if (absl::Status s = ApplyConfigOverrides(libraries, &config); !s.ok()) return s;
  return std::make_pair(std::move(config),
                        ConfigLocator(config_path, std::move(tree), std::move(libraries)));
}

absl::StatusOr<LoadedPluginLibrary> LoadOne(const std::string& config_path,
                                            const std::string& written) {
  LoadedPluginLibrary library;
  library.path = written;
  // A relative path names a file beside the config, never one in the
  // working directory or on the loader's search path.
  library.resolved_path = ResolveConfigPath(config_path, written);
  absl::StatusOr<std::vector<std::string>> added =
      LoadPluginLibrary(library.resolved_path);
  if (!added.ok()) return added.status();
  absl::StatusOr<std::string> bytes = ReadFileToString(library.resolved_path);
  if (!bytes.ok()) return bytes.status();
  library.sha1 = c10::sha1(*bytes).str();
  library.plugins = *std::move(added);
  std::sort(library.plugins.begin(), library.plugins.end());
  return library;
}

}  // namespace

absl::StatusOr<std::vector<LoadedPluginLibrary>> LoadConfigPluginLibraries(
    const std::string& config_path, const std::string& text,
    const std::vector<ConfigOverride>& overrides) {
  auto parsed = ParseLeniently(config_path, text, overrides);
  if (!parsed.ok()) return parsed.status();
  const auto& [config, locator] = *parsed;
  std::vector<LoadedPluginLibrary> libraries;
  for (int i = 0; i < config.plugin_library_size(); ++i) {
    absl::StatusOr<LoadedPluginLibrary> library =
        LoadOne(config_path, config.plugin_library(i));
    if (!library.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(locator.Where(absl::StrCat("plugin_library[", i, "]")),
                       ": plugin_library: ", library.status().message()));
    }
    libraries.push_back(*std::move(library));
  }
  return libraries;
}

}  // namespace receipt_parity

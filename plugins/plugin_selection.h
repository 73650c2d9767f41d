// Builds the plugin a config selects: `PluginSelection { name, options }`.
#ifndef RECEIPT_PARITY_PLUGINS_PLUGIN_SELECTION_H_
#define RECEIPT_PARITY_PLUGINS_PLUGIN_SELECTION_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "plugins/plugin_registry.h"
#include "trainer/config.pb.h"

namespace receipt_parity {

// Unpacks the selection's options into the factory's own options type
// (defaults when `options` is absent) and creates the plugin. `field` is the
// config field that holds the selection ("reducer"); every error names it:
//   NotFound        "reducer.name: no reducer plugin named 'x'; registered: ..."
//   InvalidArgument "reducer.options: ... takes options of type T, got U"
template <typename Product>
absl::StatusOr<std::unique_ptr<Product>> CreateSelectedPlugin(
    const PluginSelection& selection, const std::string& field) {
  absl::StatusOr<const Factory<Product>*> factory =
      FindFactory<Product>(selection.name());
  if (!factory.ok()) {
    return absl::Status(factory.status().code(),
                        absl::StrCat(field, ".name: ",
                                     factory.status().message()));
  }
  std::unique_ptr<google::protobuf::Message> options =
      (*factory)->CreateEmptyOptions();
  if (selection.has_options()) {
    if (!selection.options().UnpackTo(options.get())) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".options: plugin '", selection.name(),
          "' takes options of type ", options->GetDescriptor()->full_name(),
          ", got ", selection.options().type_url()));
    }
  }
  absl::StatusOr<std::unique_ptr<Product>> plugin = (*factory)->Create(*options);
  if (!plugin.ok()) {
    return absl::Status(plugin.status().code(),
                        absl::StrCat(field, ".options: ",
                                     plugin.status().message()));
  }
  return plugin;
}

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_PLUGINS_PLUGIN_SELECTION_H_

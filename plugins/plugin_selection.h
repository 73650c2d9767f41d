// Builds the plugin a config selects: `PluginSelection { name, options }`
// (plugins/plugin_selection.proto).
//
// Two steps, so that a selection is checked once, before anything runs, and
// its plugin made wherever it is used:
//   SelectedPlugin<P>::Select  looks the factory up, unpacks the options into
//                              the factory's own options type and creates the
//                              plugin once (every check the factory makes on
//                              its options runs here);
//   SelectedPlugin<P>::Create  makes a new plugin from those checked options.
// CreateSelectedPlugin does both for a one-off plugin.
//
// Every error names the field that holds the selection ("reducer"):
//   NotFound        "reducer.name: no reducer plugin named 'x'; registered: ..."
//   InvalidArgument "reducer.options: ... takes options of type T, got U"
//   (the factory's)  "reducer.options: <what the factory said>"
//
// Thread safety: a SelectedPlugin is immutable after Select; Create may be
// called concurrently (factories are thread-safe, plugin_factory.h).
#ifndef RECEIPT_PARITY_PLUGINS_PLUGIN_SELECTION_H_
#define RECEIPT_PARITY_PLUGINS_PLUGIN_SELECTION_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "plugins/plugin_registry.h"
#include "plugins/plugin_selection.pb.h"

namespace receipt_parity {

// A selection resolved against the registry. Copies share the options.
template <typename Product>
class SelectedPlugin {
 public:
  // Empty: Create() fails. Use Select().
  SelectedPlugin() = default;

  static absl::StatusOr<SelectedPlugin> Select(const PluginSelection& selection,
                                               const std::string& field) {
    absl::StatusOr<SelectedPlugin> selected = Resolve(selection, field);
    if (!selected.ok()) return selected.status();
    if (absl::StatusOr<std::unique_ptr<Product>> plugin = selected->Create();
        !plugin.ok()) {
      return plugin.status();
    }
    return selected;
  }

  // The factory's stable name ("" when empty).
  const std::string& name() const { return name_; }

  // A new plugin from the checked options.
  absl::StatusOr<std::unique_ptr<Product>> Create() const {
    if (factory_ == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat(field_, ": no ", Product::kKind, " plugin selected"));
    }
    absl::StatusOr<std::unique_ptr<Product>> plugin = factory_->Create(*options_);
    if (!plugin.ok()) {
      return absl::Status(plugin.status().code(),
                          absl::StrCat(field_, ".options: ",
                                       plugin.status().message()));
    }
    return plugin;
  }

 private:
  template <typename P>
  friend absl::StatusOr<std::unique_ptr<P>> CreateSelectedPlugin(
      const PluginSelection& selection, const std::string& field);

  // The factory and the unpacked options (defaults when `options` is
  // absent); no plugin is created.
  static absl::StatusOr<SelectedPlugin> Resolve(const PluginSelection& selection,
                                                const std::string& field) {
    absl::StatusOr<const Factory<Product>*> factory =
        FindFactory<Product>(selection.name());
    if (!factory.ok()) {
      return absl::Status(factory.status().code(),
                          absl::StrCat(field, ".name: ",
                                       factory.status().message()));
    }
    std::shared_ptr<google::protobuf::Message> options =
        (*factory)->CreateEmptyOptions();
    if (selection.has_options() && !selection.options().UnpackTo(options.get())) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".options: plugin '", selection.name(),
          "' takes options of type ", options->GetDescriptor()->full_name(),
          ", got ", selection.options().type_url()));
    }
    SelectedPlugin selected;
    selected.factory_ = *factory;
    selected.options_ = std::move(options);
    selected.name_ = selection.name();
    selected.field_ = field;
    return selected;
  }

  const Factory<Product>* factory_ = nullptr;
  std::shared_ptr<const google::protobuf::Message> options_;
  std::string name_;
  std::string field_;
};

// Resolves `selection` and creates its plugin once.
template <typename Product>
absl::StatusOr<std::unique_ptr<Product>> CreateSelectedPlugin(
    const PluginSelection& selection, const std::string& field) {
  absl::StatusOr<SelectedPlugin<Product>> selected =
      SelectedPlugin<Product>::Resolve(selection, field);
  if (!selected.ok()) return selected.status();
  return selected->Create();
}

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_PLUGINS_PLUGIN_SELECTION_H_

// The plugin kinds a training run selects, in one table.
//
// Each row ties a kind's registry name (its interface's kKind, e.g.
// SamplerPolicy::kKind = "sampler_policy") to the TrainingConfig field that
// selects it ("sampler"), the plugin used when the config names none, and
// the run_manifest.json key that records the choice (the field's name).
// Everything that lists the selections reads this table: the defaults
// (ApplyDefaults), the plugins a run creates (run_plugins.h), start
// agreement between ranks and checkpoint MANIFESTs (both by kind name), the
// run manifest (by field name).
//
// Two kinds are not rows: the model ("model", model/classifier_builder.h),
// which a config selects with ModelConfig's own name and options
// (model/model_forms.h; a run records and compares what it trains as the
// model revision; config/run_model.h selects it), and the optimizer
// ("optimizer", optimizers/optimizer_plugin.h), selected by
// OptimizerConfig's forms (config/run_optimizer.h) and recorded whole as
// run_manifest.json's "optimizer".
//
// Thread safety: immutable.
#ifndef RECEIPT_PARITY_CONFIG_PLUGIN_KINDS_H_
#define RECEIPT_PARITY_CONFIG_PLUGIN_KINDS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "config/plugin_names.pb.h"
#include "config/config.pb.h"

namespace receipt_parity {

struct PluginKind {
  // The registry's name of the kind: the interface's kKind. Stable: written
  // into checkpoint MANIFESTs and compared between ranks at start.
  const char* kind;
  // The TrainingConfig field that holds the selection; the key of
  // run_manifest.json's "plugins"; the field named in errors.
  const char* config_field;
  // The plugin a selection without a name gets.
  const char* default_name;
  const PluginSelection& (*selection)(const TrainingConfig& config);
  PluginSelection* (*mutable_selection)(TrainingConfig* config);
  std::string* (*run_manifest_name)(PluginNames* names);
};

// Every kind, sorted by kind.
absl::Span<const PluginKind> PluginKinds();

// The row of `kind`. REQUIRES: `kind` is in PluginKinds() (CHECK).
const PluginKind& FindPluginKind(const std::string& kind);

// The row of Product's kind, e.g. PluginKindOf<SamplerPolicy>().
template <typename Product>
const PluginKind& PluginKindOf() {
  return FindPluginKind(Product::kKind);
}

// (kind, selected name) of every kind, sorted by kind.
std::vector<std::pair<std::string, std::string>> SelectedPluginNames(
    const TrainingConfig& config);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CONFIG_PLUGIN_KINDS_H_

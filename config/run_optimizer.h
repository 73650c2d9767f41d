// The optimizer a training run steps with: the optimizer plugin its
// config's `optimizer` selects (config/config.proto: the config form
// sgd { } / adamw { }, or the plugin form name + options), checked once
// when the config is loaded (config/config_loader.h).
//
// The config form keeps its meaning as written: it becomes the plugin
// "sgd" or "adamw" with every option set from the config (an AdamW config
// without weight_decay has none, where the plugin form's default is
// PyTorch's 0.01). The optimizer is not a PluginKinds() row
// (config/plugin_kinds.h): like the model, its selection lives in its own
// message, recorded whole in run_manifest.json's "optimizer".
//
// Thread safety: a RunOptimizer is immutable.
#ifndef RECEIPT_PARITY_CONFIG_RUN_OPTIMIZER_H_
#define RECEIPT_PARITY_CONFIG_RUN_OPTIMIZER_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "config/config.pb.h"
#include "optimizers/optimizer_plugin.h"

namespace receipt_parity {

struct RunOptimizer {
  // "sgd", "adam", "adamw", or a plugin library's.
  std::string name;
  std::shared_ptr<const OptimizerPlugin> plugin;
};

// Whether `config` is in exactly one form. InvalidArgument naming
// "optimizer" when it is in none or in both.
absl::Status CheckOptimizerForm(const OptimizerConfig& config);

// The short form of a plugin-form `sgd` or `adamw` selection when it has
// one (the same optimizer, every option the same), else `config` as it is:
// what the config fingerprint hashes, so that a config keeps its
// fingerprint whichever form it is written in (the plugin form is the one
// the docs write; sgd { } and adamw { } are its aliases). The plugin form
// has no short form when it sets what the short form cannot say:
// dampening, amsgrad, weight_decay_excludes_biases_and_norms, or an AdamW
// beta or eps of 0 (the short form reads 0 as the default).
OptimizerConfig OptimizerShortFormOf(const OptimizerConfig& config);

// Selects and checks the optimizer of `config`. Errors name the field:
// "optimizer.name: no optimizer plugin named 'x'; registered: ...",
// "optimizer.options: <the plugin's message>", "optimizer.sgd.<option>:
// ..." (the config form). REQUIRES: CheckOptimizerForm(config) is OK.
absl::StatusOr<RunOptimizer> SelectRunOptimizer(const OptimizerConfig& config);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CONFIG_RUN_OPTIMIZER_H_

#include "config/run_optimizer.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "optimizers/builtin_optimizers.h"
#include "optimizers/optimizer_options.pb.h"
#include "plugins/plugin_selection.h"

namespace receipt_parity {
namespace {

// What sgd { } means: every option as written (dampening 0).
SgdOptions SgdOptionsOf(const SgdConfig& sgd) {
  SgdOptions options;
  options.set_lr(sgd.learning_rate());
  options.set_momentum(sgd.momentum());
  options.set_dampening(0);
  options.set_weight_decay(sgd.weight_decay());
  options.set_nesterov(sgd.nesterov());
  return options;
}

// What adamw { } means: 0 betas and eps are 0.9, 0.999 and 1e-8; the
// weight decay is as written, none when unset.
AdamWOptions AdamWOptionsOf(const AdamWConfig& adamw) {
  AdamWOptions options;
  options.set_lr(adamw.learning_rate());
  options.set_beta1(adamw.beta1() == 0 ? 0.9 : adamw.beta1());
  options.set_beta2(adamw.beta2() == 0 ? 0.999 : adamw.beta2());
  options.set_eps(adamw.eps() == 0 ? 1e-8 : adamw.eps());
  options.set_weight_decay(adamw.weight_decay());
  options.set_amsgrad(false);
  return options;
}

template <typename Plugin, typename Options>
absl::StatusOr<RunOptimizer> ConfigForm(const std::string& name, const Options& options,
                                        const std::string& field) {
  absl::StatusOr<std::unique_ptr<Plugin>> plugin = Plugin::Create(options);
  if (!plugin.ok()) {
    return absl::Status(plugin.status().code(),
                        absl::StrCat("optimizer.", field, ".", plugin.status().message()));
  }
  return RunOptimizer{name, std::shared_ptr<const OptimizerPlugin>(*std::move(plugin))};
}

}  // namespace

absl::Status CheckOptimizerForm(const OptimizerConfig& config) {
  const bool config_form = config.kind_case() != OptimizerConfig::KIND_NOT_SET;
  const bool plugin_form = !config.name().empty() || config.has_options();
  if (config_form && plugin_form) {
    return absl::InvalidArgumentError(
        "optimizer: write sgd { ... }, adamw { ... } or a plugin's name and options, "
        "not both");
  }
  if (!config_form && !plugin_form) {
    return absl::InvalidArgumentError(
        "optimizer: choose sgd { ... } or adamw { ... }, or a plugin by name: "
        "name: \"adam\" (or \"sgd\", \"adamw\") with its options");
  }
  if (plugin_form && config.name().empty()) {
    return absl::InvalidArgumentError("optimizer.name: options without a plugin name");
  }
  return absl::OkStatus();
}

absl::StatusOr<RunOptimizer> SelectRunOptimizer(const OptimizerConfig& config) {
  if (config.has_sgd()) {
    return ConfigForm<SgdOptimizer>(SgdOptimizer::kName, SgdOptionsOf(config.sgd()), "sgd");
  }
  if (config.has_adamw()) {
    return ConfigForm<AdamOptimizer>(AdamOptimizer::kAdamWName,
                                     AdamWOptionsOf(config.adamw()), "adamw");
  }
  PluginSelection selection;
  selection.set_name(config.name());
  if (config.has_options()) *selection.mutable_options() = config.options();
  absl::StatusOr<std::unique_ptr<OptimizerPlugin>> plugin =
      CreateSelectedPlugin<OptimizerPlugin>(selection, "optimizer");
  if (!plugin.ok()) return plugin.status();
  return RunOptimizer{config.name(), std::shared_ptr<const OptimizerPlugin>(*std::move(plugin))};
}

}  // namespace receipt_parity

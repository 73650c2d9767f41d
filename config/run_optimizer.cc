#include "config/run_optimizer.h"

#include <optional>
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

// The short form's value of an AdamW option whose 0 means `default_value`:
// unset for the default, nullopt where the short form cannot say it (0).
std::optional<double> ShortAdamWValue(bool has, double value, double default_value) {
  if (!has || value == default_value) return 0.0;
  if (value == 0) return std::nullopt;
  return value;
}

std::optional<SgdConfig> SgdShortForm(const SgdOptions& o) {
  if ((o.has_dampening() && o.dampening() != 0) ||
      o.weight_decay_excludes_biases_and_norms()) {
    return std::nullopt;
  }
  SgdConfig sgd;
  sgd.set_learning_rate(o.has_lr() ? o.lr() : 0.001);
  sgd.set_momentum(o.momentum());
  sgd.set_weight_decay(o.weight_decay());
  sgd.set_nesterov(o.nesterov());
  return sgd;
}

std::optional<AdamWConfig> AdamWShortForm(const AdamWOptions& o) {
  if (o.amsgrad() || o.weight_decay_excludes_biases_and_norms()) return std::nullopt;
  const std::optional<double> beta1 = ShortAdamWValue(o.has_beta1(), o.beta1(), 0.9);
  const std::optional<double> beta2 = ShortAdamWValue(o.has_beta2(), o.beta2(), 0.999);
  const std::optional<double> eps = ShortAdamWValue(o.has_eps(), o.eps(), 1e-8);
  if (!beta1.has_value() || !beta2.has_value() || !eps.has_value()) return std::nullopt;
  AdamWConfig adamw;
  adamw.set_learning_rate(o.has_lr() ? o.lr() : 0.001);
  adamw.set_beta1(*beta1);
  adamw.set_beta2(*beta2);
  adamw.set_eps(*eps);
  adamw.set_weight_decay(o.has_weight_decay() ? o.weight_decay() : 0.01);
  return adamw;
}

}  // namespace

OptimizerConfig OptimizerShortFormOf(const OptimizerConfig& config) {
  OptimizerConfig short_form;
  if (config.name() == SgdOptimizer::kName) {
    SgdOptions options;
    if (config.has_options() && !config.options().UnpackTo(&options)) return config;
    const std::optional<SgdConfig> sgd = SgdShortForm(options);
    if (!sgd.has_value()) return config;
    *short_form.mutable_sgd() = *sgd;
    return short_form;
  }
  if (config.name() == AdamOptimizer::kAdamWName) {
    AdamWOptions options;
    if (config.has_options() && !config.options().UnpackTo(&options)) return config;
    const std::optional<AdamWConfig> adamw = AdamWShortForm(options);
    if (!adamw.has_value()) return config;
    *short_form.mutable_adamw() = *adamw;
    return short_form;
  }
  return config;
}

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

#include "trainer/run_plugins.h"

#include "plugins/plugin_selection.h"

namespace receipt_parity {

absl::StatusOr<RunPlugins> CreateRunPlugins(const LoadedConfig& loaded) {
  const TrainingConfig& c = loaded.config;
  RunPlugins p;
  auto sampler = CreateSelectedPlugin<SamplerPolicy>(c.sampler(), "sampler");
  if (!sampler.ok()) return loaded.locator->Locate(sampler.status());
  p.sampler = std::move(*sampler);
  auto weighting =
      CreateSelectedPlugin<LossWeighting>(c.loss_weighting(), "loss_weighting");
  if (!weighting.ok()) return loaded.locator->Locate(weighting.status());
  p.weighting = std::move(*weighting);
  auto reducer = CreateSelectedPlugin<GradientReducer>(c.reducer(), "reducer");
  if (!reducer.ok()) return loaded.locator->Locate(reducer.status());
  p.reducer = std::move(*reducer);
  auto dedup = CreateSelectedPlugin<MetricDedup>(c.metric_dedup(), "metric_dedup");
  if (!dedup.ok()) return loaded.locator->Locate(dedup.status());
  p.dedup = std::move(*dedup);
  return p;
}

}  // namespace receipt_parity

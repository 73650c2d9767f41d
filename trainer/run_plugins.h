// The four plugins a training run uses, built from its config.
#ifndef RECEIPT_PARITY_TRAINER_RUN_PLUGINS_H_
#define RECEIPT_PARITY_TRAINER_RUN_PLUGINS_H_

#include <memory>

#include "absl/status/statusor.h"
#include "metrics/metric_dedup.h"
#include "reducers/gradient_reducer.h"
#include "samplers/sampler_policy.h"
#include "trainer/config_loader.h"
#include "weighting/loss_weighting.h"

namespace receipt_parity {

struct RunPlugins {
  std::unique_ptr<SamplerPolicy> sampler;
  std::unique_ptr<LossWeighting> weighting;
  std::unique_ptr<GradientReducer> reducer;
  std::unique_ptr<MetricDedup> dedup;
};

// Errors name the config field and where it is written, e.g.
// "configs/x.pbtxt:12:1: reducer.name: no reducer plugin named 'y'; registered: ...".
absl::StatusOr<RunPlugins> CreateRunPlugins(const LoadedConfig& loaded);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_TRAINER_RUN_PLUGINS_H_

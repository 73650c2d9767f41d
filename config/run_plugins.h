// The five plugins a training run uses, selected by its config
// (config/plugin_kinds.h lists the kinds and the fields that select them).
//
// SelectRunPlugins checks every selection once, when the config is loaded
// (config/config_loader.h), before any data is touched: the name is
// registered, the options are of the plugin's own type, and the factory
// accepts their values (it creates the plugin once). A run then creates its
// own plugins from the checked selections with Create().
#ifndef RECEIPT_PARITY_CONFIG_RUN_PLUGINS_H_
#define RECEIPT_PARITY_CONFIG_RUN_PLUGINS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "metrics/metric_dedup.h"
#include "plugins/plugin_selection.h"
#include "reducers/gradient_reducer.h"
#include "samplers/sampler_policy.h"
#include "schedules/lr_schedule.h"
#include "config/config.pb.h"
#include "weighting/loss_weighting.h"

namespace receipt_parity {

// One run's plugins (the reducer keeps statistics: one per run).
struct RunPlugins {
  std::unique_ptr<SamplerPolicy> sampler;
  std::unique_ptr<LossWeighting> weighting;
  std::unique_ptr<GradientReducer> reducer;
  std::unique_ptr<MetricDedup> dedup;
  std::unique_ptr<LearningRateSchedule> schedule;
};

// The checked selections of a config. Copyable.
struct RunPluginSelections {
  SelectedPlugin<SamplerPolicy> sampler;
  SelectedPlugin<LossWeighting> weighting;
  SelectedPlugin<GradientReducer> reducer;
  SelectedPlugin<MetricDedup> dedup;
  SelectedPlugin<LearningRateSchedule> schedule;
  // Why an update of this run would train otherwise on another number of
  // workers, naming the field of the first plugin that makes it so (e.g.
  // 'sampler.name "masked_tail" deals its order by the world size'); empty
  // when none does: the sampler's order is world-size-independent, the loss
  // weighting split-independent and the reducer a sum. Then a generation
  // saved by W workers resumes on W' as if nothing changed
  // (artifacts/run_folder.h, checkpointing/run_checkpoints.h).
  std::string world_size_dependence;
  // The reducer's GradientReducer::chunk_slots(): > 0 in the ordered mode
  // (reducers/ordered_sum_reducer.h), whose chunks the loader checks
  // against the split (config/config_loader.h).
  int reducer_chunk_slots = 0;

  // New plugins, one of each kind. Errors as SelectRunPlugins'.
  absl::StatusOr<RunPlugins> Create() const;
};

// Errors name the config field, not yet where it is written (the loader adds
// that), e.g. "reducer.name: no reducer plugin named 'y'; registered: ...".
// REQUIRES: every selection has a name (ApplyDefaults).
absl::StatusOr<RunPluginSelections> SelectRunPlugins(const TrainingConfig& config);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CONFIG_RUN_PLUGINS_H_

#include "config/plugin_kinds.h"

#include "logging/glog.h"
#include "metrics/metric_dedup.h"
#include "reducers/gradient_reducer.h"
#include "samplers/sampler_policy.h"
#include "schedules/lr_schedule.h"
#include "weighting/loss_weighting.h"

namespace receipt_parity {

absl::Span<const PluginKind> PluginKinds() {
  static constexpr PluginKind kKinds[] = {
      {LossWeighting::kKind, "loss_weighting", "global_count",
       [](const TrainingConfig& c) -> const PluginSelection& { return c.loss_weighting(); },
       [](TrainingConfig* c) { return c->mutable_loss_weighting(); },
       [](PluginNames* n) { return n->mutable_loss_weighting(); }},
      {LearningRateSchedule::kKind, "lr_schedule", "constant",
       [](const TrainingConfig& c) -> const PluginSelection& { return c.lr_schedule(); },
       [](TrainingConfig* c) { return c->mutable_lr_schedule(); },
       [](PluginNames* n) { return n->mutable_lr_schedule(); }},
      {MetricDedup::kKind, "metric_dedup", "by_receipt_id",
       [](const TrainingConfig& c) -> const PluginSelection& { return c.metric_dedup(); },
       [](TrainingConfig* c) { return c->mutable_metric_dedup(); },
       [](PluginNames* n) { return n->mutable_metric_dedup(); }},
      {GradientReducer::kKind, "reducer", "allreduce_sum",
       [](const TrainingConfig& c) -> const PluginSelection& { return c.reducer(); },
       [](TrainingConfig* c) { return c->mutable_reducer(); },
       [](PluginNames* n) { return n->mutable_reducer(); }},
      {SamplerPolicy::kKind, "sampler", "masked_tail",
       [](const TrainingConfig& c) -> const PluginSelection& { return c.sampler(); },
       [](TrainingConfig* c) { return c->mutable_sampler(); },
       [](PluginNames* n) { return n->mutable_sampler(); }},
  };
  return kKinds;
}

const PluginKind& FindPluginKind(const std::string& kind) {
  const PluginKind* found = nullptr;
  for (const PluginKind& row : PluginKinds()) {
    if (kind == row.kind) found = &row;
  }
  CHECK(found != nullptr) << "no plugin kind '" << kind << "' in config/plugin_kinds.cc";
  return *found;
}

std::vector<std::pair<std::string, std::string>> SelectedPluginNames(
    const TrainingConfig& config) {
  std::vector<std::pair<std::string, std::string>> names;
  for (const PluginKind& row : PluginKinds()) {
    names.emplace_back(row.kind, row.selection(config).name());
  }
  return names;
}

}  // namespace receipt_parity

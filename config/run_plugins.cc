#include "config/run_plugins.h"

#include "config/plugin_kinds.h"

namespace receipt_parity {
namespace {

// Selects Product's kind of `config` (the field of its PluginKind row).
template <typename Product>
absl::Status SelectInto(const TrainingConfig& config,
                        SelectedPlugin<Product>* selected) {
  const PluginKind& kind = PluginKindOf<Product>();
  absl::StatusOr<SelectedPlugin<Product>> s =
      SelectedPlugin<Product>::Select(kind.selection(config), kind.config_field);
  if (!s.ok()) return s.status();
  *selected = std::move(*s);
  return absl::OkStatus();
}

template <typename Product>
absl::Status CreateInto(const SelectedPlugin<Product>& selected,
                        std::unique_ptr<Product>* plugin) {
  absl::StatusOr<std::unique_ptr<Product>> made = selected.Create();
  if (!made.ok()) return made.status();
  *plugin = std::move(*made);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RunPluginSelections> SelectRunPlugins(const TrainingConfig& config) {
  RunPluginSelections s;
  for (absl::Status status :
       {SelectInto(config, &s.sampler), SelectInto(config, &s.weighting),
        SelectInto(config, &s.reducer), SelectInto(config, &s.dedup),
        SelectInto(config, &s.schedule)}) {
    if (!status.ok()) return status;
  }
  return s;
}

absl::StatusOr<RunPlugins> RunPluginSelections::Create() const {
  RunPlugins p;
  for (absl::Status status :
       {CreateInto(sampler, &p.sampler), CreateInto(weighting, &p.weighting),
        CreateInto(reducer, &p.reducer), CreateInto(dedup, &p.dedup),
        CreateInto(schedule, &p.schedule)}) {
    if (!status.ok()) return status;
  }
  return p;
}

}  // namespace receipt_parity

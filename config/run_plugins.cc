#include "config/run_plugins.h"

#include "absl/strings/str_cat.h"
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

// RunPluginSelections::world_size_dependence of `plugins`, selected by
// `config`.
std::string WorldSizeDependence(const TrainingConfig& config, const RunPlugins& plugins) {
  if (!plugins.sampler->world_size_independent()) {
    return absl::StrCat("sampler.name \"", config.sampler().name(),
                        "\" deals its order by the world size");
  }
  if (!plugins.weighting->split_independent()) {
    return absl::StrCat("loss_weighting.name \"", config.loss_weighting().name(),
                        "\" weighs each slot by how the update is split over ranks");
  }
  if (!plugins.reducer->world_size_independent()) {
    return absl::StrCat("reducer.name \"", config.reducer().name(),
                        "\" does not sum the ranks' gradients");
  }
  return "";
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
  absl::StatusOr<RunPlugins> plugins = s.Create();
  if (!plugins.ok()) return plugins.status();
  s.world_size_dependence = WorldSizeDependence(config, *plugins);
  s.reducer_chunk_slots = plugins->reducer->chunk_slots();
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

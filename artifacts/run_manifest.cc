#include "artifacts/run_manifest.h"

#include <set>

#include <c10/util/hash.h>

#include "absl/strings/str_cat.h"
#include "data/label_map.h"
#include "config/plugin_kinds.h"

namespace receipt_parity {

std::string DataHash(const ReceiptSplit& data) {
  std::string bytes;
  size_t pixels = 0;
  for (const auto* part : {&data.train, &data.validation}) {
    for (const ReceiptExample& e : *part) pixels += e.pixels.size();
  }
  // The ids and labels are a few bytes per receipt beside its pixels.
  bytes.reserve(pixels * sizeof(float) + 64 * (data.train.size() + data.validation.size()));
  for (const auto* part : {&data.train, &data.validation}) {
    for (const ReceiptExample& e : *part) {
      absl::StrAppend(&bytes, e.receipt_id, "/", e.label, "/", e.view, ";");
      bytes.append(reinterpret_cast<const char*>(e.pixels.data()),
                   e.pixels.size() * sizeof(float));
    }
  }
  return c10::sha1(bytes).str();
}

RunManifest MakeRunManifest(const LoadedConfig& loaded, const Classifier& model,
                            const ReceiptSplit& data, int world_size) {
  const TrainingConfig& c = loaded.config;
  RunManifest m;
  for (const std::string& name : LabelNames()) m.add_label_map(name);
  const std::string hash = ParameterHash(model);
  m.mutable_model_revision()->set_architecture(model.Describe());
  m.mutable_model_revision()->set_initial_parameter_hash(hash);
  m.mutable_model_revision()->set_revision(ModelRevision(model));
  int64_t count = 0;
  for (const auto& p : model.parameters()) count += p.numel();
  m.mutable_model_revision()->set_parameter_count(static_cast<int32_t>(count));
  *m.mutable_seeds() = c.seeds();
  *m.mutable_optimizer() = c.optimizer();
  m.set_precision(c.precision());
  m.set_world_size(world_size);
  m.set_global_batch(c.global_batch());
  for (int b : LocalBatchSizes(c)) m.add_local_batch_sizes(b);
  for (const PluginKind& kind : PluginKinds()) {
    *kind.run_manifest_name(m.mutable_plugins()) = kind.selection(c).name();
  }
  DataRecord* d = m.mutable_data();
  // The manifest read: resolved against the config's folder.
  d->set_source(loaded.data.has_synthetic() ? "synthetic" : loaded.data.manifest_path());
  d->set_image_size(data.image_size);
  d->set_train_examples(static_cast<int32_t>(data.train.size()));
  d->set_validation_identities(static_cast<int32_t>(data.validation.size()));
  std::set<std::string> identities;
  for (const ReceiptExample& e : data.train) identities.insert(e.receipt_id);
  d->set_train_identities(static_cast<int32_t>(identities.size()));
  for (int64_t n : data.train_class_counts) {
    d->add_train_class_counts(static_cast<int32_t>(n));
  }
  m.set_config_path(loaded.locator->path());
  for (const LoadedPluginLibrary& library : loaded.plugin_libraries) {
    PluginLibraryRecord* record = m.add_plugin_libraries();
    record->set_path(library.path);
    record->set_resolved_path(library.resolved_path);
    record->set_sha1(library.sha1);
    for (const std::string& plugin : library.plugins) record->add_plugins(plugin);
  }
  m.set_epochs(c.epochs());
  return m;
}

}  // namespace receipt_parity

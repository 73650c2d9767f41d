#include "artifacts/run_manifest.h"

#include <algorithm>
#include <exception>
#include <vector>

#include <ATen/ATen.h>
#include <openssl/evp.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "logging/glog.h"
#include "collectives/collective_error.h"
#include "data/label_map.h"
#include "config/plugin_kinds.h"

namespace receipt_parity {

namespace {

// Examples hashed per Select().
constexpr int64_t kHashChunkExamples = 4096;

// A SHA-1 fed a piece at a time (OpenSSL's EVP digest).
class StreamedSha1 {
 public:
  StreamedSha1() : context_(EVP_MD_CTX_new()) {
    CHECK(context_ != nullptr && EVP_DigestInit_ex(context_, EVP_sha1(), nullptr) == 1);
  }
  ~StreamedSha1() { EVP_MD_CTX_free(context_); }
  StreamedSha1(const StreamedSha1&) = delete;
  StreamedSha1& operator=(const StreamedSha1&) = delete;

  void Add(const void* bytes, size_t size) {
    CHECK_EQ(EVP_DigestUpdate(context_, bytes, size), 1);
  }
  // Lowercase hex, as c10::sha1::str() writes it.
  std::string Hex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    CHECK_EQ(EVP_DigestFinal_ex(context_, digest, &size), 1);
    return absl::BytesToHexString(
        absl::string_view(reinterpret_cast<const char*>(digest), size));
  }

 private:
  EVP_MD_CTX* context_;
};

// Feeds `examples`, their pixels from `source`, to `hash`.
absl::Status HashPart(const std::vector<ReceiptExample>& examples, const ExampleSource& source,
                      StreamedSha1* hash) {
  const auto n = static_cast<int64_t>(examples.size());
  if (source.size() != n) {
    return absl::InternalError(absl::StrCat("hashing the data: a source of ", source.size(),
                                            " examples for ", n));
  }
  std::vector<Slot> slots;
  for (int64_t begin = 0; begin < n; begin += kHashChunkExamples) {
    const int64_t end = std::min(n, begin + kHashChunkExamples);
    slots.assign(end - begin, Slot{});
    for (int64_t i = begin; i < end; ++i) slots[i - begin].dataset_index = i;
    absl::StatusOr<ExampleTensors> chunk = source.Select(slots);
    if (!chunk.ok()) return chunk.status();
    const at::Tensor images = chunk->images.to(at::kCPU).contiguous();
    const float* pixels = images.data_ptr<float>();
    const int64_t per_example = images[0].numel();
    for (int64_t i = begin; i < end; ++i) {
      const ReceiptExample& e = examples[i];
      const std::string header = absl::StrCat(e.receipt_id, "/", e.label, "/", e.view, ";");
      hash->Add(header.data(), header.size());
      hash->Add(pixels + (i - begin) * per_example, per_example * sizeof(float));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> DataHash(const ReceiptSplit& data, const ExampleSource& train,
                                     const ExampleSource& validation) {
  StreamedSha1 hash;
  try {
    if (absl::Status s = HashPart(data.train, train, &hash); !s.ok()) return s;
    if (absl::Status s = HashPart(data.validation, validation, &hash); !s.ok()) return s;
    return hash.Hex();
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "hashing the data: LibTorch");
  }
}

RunManifest MakeRunManifest(const LoadedConfig& loaded, const Classifier& model,
                            const ReceiptSplit& data, int world_size) {
  const TrainingConfig& c = loaded.config;
  RunManifest m;
  for (const ConfigOverride& o : loaded.overrides) m.add_config_overrides(o.text());
  *m.mutable_effective_config() = c;
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
  // Training examples are grouped by identity (data/receipt_dataset.h).
  int32_t identities = 0;
  for (size_t i = 0; i < data.train.size(); ++i) {
    if (i == 0 || data.train[i].receipt_id != data.train[i - 1].receipt_id) ++identities;
  }
  d->set_train_identities(identities);
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

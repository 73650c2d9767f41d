// The config fingerprint and the configs derived from a loaded one
// (declared in config/config_loader.h): what names a run, apart from how a
// config is parsed and checked.
#include <string>
#include <vector>
#include <utility>

#include <c10/util/hash.h>

#include "config/config_loader.h"
#include "config/run_optimizer.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "model/model_forms.h"

namespace receipt_parity {

TrainingConfig FingerprintedConfig(const TrainingConfig& config) {
  TrainingConfig canonical = config;
  canonical.clear_run();
  canonical.clear_plugin_library();
  canonical.clear_checkpoint();
  // Which updates parity checks, whether a failure stops the run, and
  // whether every update is checked or the checked ones replayed change
  // what is judged, not what is trained.
  canonical.mutable_parity()->clear_check_updates();
  canonical.mutable_parity()->clear_stop_on_failure();
  canonical.mutable_parity()->clear_every_update();
  canonical.mutable_parity()->clear_replay();
  // Where a run computes and how it reduces do not change what it trains.
  canonical.clear_device();
  if (canonical.has_backend()) canonical.set_backend("gloo");
  // One micro-batch is no accumulation, as before accumulation existed.
  if (canonical.accumulation_steps() == 1) canonical.clear_accumulation_steps();
  // The constant schedule without options is the schedule of configs
  // written before schedules existed.
  if (canonical.lr_schedule().name() == "constant" && !canonical.lr_schedule().has_options()) {
    canonical.clear_lr_schedule();
  }
  // Both forms of the built-in sgd and adamw are one optimizer. A name
  // without options stays as it is: it is what RecipeFreeConfig leaves of
  // any optimizer, and the recipe-independent fingerprints that saved
  // checkpoints hold were made of it.
  if (canonical.optimizer().has_options()) {
    *canonical.mutable_optimizer() = OptimizerShortFormOf(canonical.optimizer());
  }
  // Both forms of a built-in model are one model.
  if (canonical.has_model()) {
    *canonical.mutable_model() = ArchitectureFormOf(canonical.model());
  }
  return canonical;
}

LoadedConfig WithTrainingConfig(const LoadedConfig& loaded, TrainingConfig config) {
  LoadedConfig changed = loaded;
  changed.config = std::move(config);
  changed.fingerprint = ConfigFingerprint(changed.config);
  return changed;
}

std::string ConfigFingerprint(const TrainingConfig& config) {
  const TrainingConfig canonical = FingerprintedConfig(config);
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream out(&stream);
    out.SetSerializationDeterministic(true);
    canonical.SerializeToCodedStream(&out);
  }
  return c10::sha1(bytes).str();
}

std::string OptimizerNameOf(const OptimizerConfig& config) {
  if (config.has_sgd()) return "sgd";
  if (config.has_adamw()) return "adamw";
  return config.name();
}

TrainingConfig RecipeFreeConfig(const TrainingConfig& config) {
  TrainingConfig recipe_free = config;
  recipe_free.mutable_optimizer()->Clear();
  recipe_free.mutable_optimizer()->set_name(OptimizerNameOf(config.optimizer()));
  recipe_free.clear_lr_schedule();
  recipe_free.clear_clip_grad_norm();
  return recipe_free;
}

TrainingConfig ReferenceConfig(const TrainingConfig& config) {
  TrainingConfig reference = config;
  reference.set_world_size(1);
  // The effective-batch rule's gradient, (1/|A|) sum over the whole global
  // batch, from one backward: however a run cuts its updates, this is what
  // it is compared with.
  reference.set_accumulation_steps(1);
  reference.clear_local_batch_sizes();
  reference.mutable_checkpoint()->set_every_updates(0);
  reference.mutable_run()->clear_fault();
  return reference;
}

std::vector<std::string> ReferenceOverrides(const TrainingConfig& config) {
  std::vector<std::string> overrides = {"world_size=1"};
  if (config.accumulation_steps() != 1) overrides.push_back("accumulation_steps=1");
  if (config.local_batch_sizes_size() > 0) overrides.push_back("local_batch_sizes=[]");
  // Its checkpoints and fault injection are operational: not in the
  // fingerprint a reference is matched by.
  return overrides;
}

}  // namespace receipt_parity

// The config fingerprint is part of every run folder (run_manifest.json,
// checkpoint MANIFESTs): a run folder resumes only while its config hashes
// the same. These values were computed on main before the schema moved into
// data/, model/ and plugins/; they must never change for the shipped
// configs.
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "config/config_loader.h"
#include "config/config_overrides.h"

namespace receipt_parity {
namespace {

struct Pinned {
  std::string config;
  std::string fingerprint;
  // ConfigFingerprint(ReferenceConfig(config)): the one-worker reference a
  // multi-worker run finds in OUT/reference, and the world-independent
  // fingerprint of its checkpoints.
  std::string reference_fingerprint;
};

const std::vector<Pinned>& PinnedFingerprints() {
  static const auto* pinned = new std::vector<Pinned>{
      {"configs/one_worker.pbtxt",
       "c16cfed2d292413cf4d2ec394e46cbe0e76bf99a",
       "c16cfed2d292413cf4d2ec394e46cbe0e76bf99a"},
      {"configs/three_worker_47_ids.pbtxt",
       "9cc441ba3ae387f96235562f208cdb47b1578577",
       "b260796c58a50a64556d8c5d4dbbd0d59ede4cfe"},
      // two_worker_masked_tail.pbtxt in bf16: precision is in both
      // fingerprints (its reference is a bf16 one).
      {"configs/two_worker_bf16.pbtxt",
       "de5296993522aab9bda9ebd5e057f6f9910699ad",
       "265b127e2ae60ae64e67129887d16df356649f30"},
      // two_worker_masked_tail.pbtxt with keyed dropout: model.dropout is
      // in both fingerprints.
      {"configs/two_worker_keyed_dropout.pbtxt",
       "786385d704d52a10b98a9a54975708ad6ca6a647",
       "b62ac662db69295bc84e0c211cc6111f05fbcb4e"},
      // Every recipe and layer at once (issue 25): pinned from the day it
      // was added.
      {"configs/two_worker_all_recipes.pbtxt",
       "2c15f4c9122ef55c1ba88a75f362c6c31b6dff79",
       "a6ad11ec447bbf852173c61172cdc57d6f8189e3"},
      {"configs/two_worker_duplicate_pad.pbtxt",
       "22c931f32b18adeabb2de137a05797645afce3a3",
       "35b57c38ac0db3e1fb92e6384b1aac96199f4f1a"},
      {"configs/two_worker_masked_tail.pbtxt",
       "6d6ee21d51c854797b5d0db00c78b7d702471728",
       "c16cfed2d292413cf4d2ec394e46cbe0e76bf99a"},
      // two_worker_masked_tail.pbtxt with its model in the plugin form: the
      // same fingerprints.
      {"configs/two_worker_model_plugin.pbtxt",
       "6d6ee21d51c854797b5d0db00c78b7d702471728",
       "c16cfed2d292413cf4d2ec394e46cbe0e76bf99a"},
      // two_worker_masked_tail.pbtxt over OpenMPI: the reducer is in the
      // fingerprint (its reference's too), the launcher is not.
      {"configs/two_worker_mpi.pbtxt",
       "5587498b245fd012ac83f1a038205bf15b7b5715",
       "b6f6ef5c74476c42690b542d57760b1faceeb9b3"},
      {"configs/two_worker_rank_mean_wrong.pbtxt",
       "303fc4d44108db2d5eb810c4d67139cf2ad3f01c",
       "c87cca911091397f5f0323195381e5139c8e9bb9"},
      {"configs/two_worker_uneven.pbtxt",
       "c131bc95f475742c1e5484479a88ebef7be66f70",
       "0978027b9ddc0486b96311130debb43935856085"},
      // Issue 28's world-size change: the run and its continuations on three
      // and on one worker share the reference fingerprint (the
      // world-independent fingerprint their checkpoints carry); so do the
      // duplicate_pad twin and its continuation.
      {"configs/world_size_change.pbtxt",
       "de64b48fb012e9246521d2805060fc2da1317f83",
       "d62ff622fb804dc09109e21e5dc43b3c3fe06196"},
      {"configs/world_size_change_on_three.pbtxt",
       "2bdc64455efe1561293e868e4e62c1d9af0dd57d",
       "d62ff622fb804dc09109e21e5dc43b3c3fe06196"},
      {"configs/world_size_change_on_one.pbtxt",
       "d62ff622fb804dc09109e21e5dc43b3c3fe06196",
       "d62ff622fb804dc09109e21e5dc43b3c3fe06196"},
      {"configs/world_size_change_duplicate_pad.pbtxt",
       "36b5ceb41a2243f19aa9bd6dbcdfca4fd64e28f1",
       "2e15cbe7209606a16fe5e2414f7348a21d79a398"},
      {"configs/world_size_change_duplicate_pad_on_three.pbtxt",
       "dc6332ab8cb60ee482199b1cd7849b394ca2d60f",
       "2e15cbe7209606a16fe5e2414f7348a21d79a398"},
  };
  return *pinned;
}

// The recipe-independent fingerprints a checkpoint's MANIFEST holds (the
// config without its optimizer's options, schedule and clipping; and that
// of its one-worker reference), as generations saved before the shipped
// configs were written in the plugin forms hold them: such a generation
// still resumes with a changed recipe or world size.
TEST(ConfigFingerprintPinTest, RecipeIndependentFingerprintsHashAsSavedBefore) {
  absl::StatusOr<LoadedConfig> loaded =
      LoadTrainingConfig("configs/two_worker_masked_tail.pbtxt");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(ConfigFingerprint(RecipeFreeConfig(loaded->config)),
            "3c4f4a06b9f6a1970bac68927ed0e0bae62c7e66");
  EXPECT_EQ(ConfigFingerprint(RecipeFreeConfig(ReferenceConfig(loaded->config))),
            "c094d40e38dfba508385f5e94c85d83e2190cf88");
}

TEST(ConfigFingerprintPinTest, ShippedConfigsHashAsOnMain) {
  for (const Pinned& p : PinnedFingerprints()) {
    absl::StatusOr<LoadedConfig> loaded = LoadTrainingConfig(p.config);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_EQ(ConfigFingerprint(loaded->config), p.fingerprint) << p.config;
    EXPECT_EQ(ConfigFingerprint(ReferenceConfig(loaded->config)),
              p.reference_fingerprint)
        << p.config;
  }
}

// configs/one_worker.pbtxt as it was until its data grew to 1000 identities
// (so the rare class has 20 validation receipts) still hashes as it did: the
// fingerprint function itself did not change with the configs.
TEST(ConfigFingerprintPinTest, TheFormerOneWorkerConfigHashesAsBefore) {
  const std::string path = ::testing::TempDir() + "/former_one_worker.pbtxt";
  std::ofstream(path) <<
      "data {\n"
      "  synthetic { num_identities: 400 rare_class_fraction: 0.04 seed: 11 }\n"
      "  views_per_identity: 2\n"
      "  validation_fraction: 0.2\n"
      "  split_seed: 5\n"
      "  augmentation_seed: 17\n"
      "  image_size: 32\n"
      "}\n"
      "model { architecture: \"cnn\" conv_channels: [32, 64, 128] hidden_units: [64] }\n"
      "optimizer { sgd { learning_rate: 0.01 momentum: 0.9 } }\n"
      "precision: \"fp32\"\n"
      "seeds { model_init: 37 sampler: 1234 }\n"
      "backend: \"gloo\"\n"
      "global_batch: 32\n"
      "epochs: 6\n"
      "world_size: 1\n"
      "sampler { name: \"masked_tail\" }\n"
      "loss_weighting { name: \"global_count\" }\n"
      "reducer { name: \"allreduce_sum\" }\n"
      "metric_dedup { name: \"by_receipt_id\" }\n"
      "checkpoint { every_updates: 10 keep_last: 2 }\n"
      "run { output_dir: \"out/one_worker\" log_every_updates: 10 }\n";
  absl::StatusOr<LoadedConfig> loaded = LoadTrainingConfig(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(ConfigFingerprint(loaded->config),
            "64e37d8d28dca76ceeb4c2476338a9f2ab01e776");
}

// Every default ApplyDefaults fills in is part of the hash: a config that
// leaves them all unset (parity tolerances, image size, views, plugins,
// precision, backend, epochs) hashes as on main too.
TEST(ConfigFingerprintPinTest, AConfigRelyingOnEveryDefaultHashesAsOnMain) {
  const std::string path = ::testing::TempDir() + "/defaults.pbtxt";
  {
    std::ofstream out(path);
    out << "world_size: 2\n"
           "global_batch: 4\n"
           "data { synthetic { num_identities: 20 } validation_fraction: 0.25 }\n"
           "model { architecture: \"linear\" }\n"
           "optimizer { sgd { learning_rate: 0.1 } }\n";
  }
  absl::StatusOr<LoadedConfig> loaded = LoadTrainingConfig(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(ConfigFingerprint(loaded->config),
            "f1847fc573a00096386e6874efef29c3b097867b");
  EXPECT_EQ(ConfigFingerprint(ReferenceConfig(loaded->config)),
            "bd1a7ac3dd4516964044f7f5869787bb6949d131");
}

// The every-update checks and the flipped bit that proves them change what
// is judged, not what is trained: the fingerprint stays.
TEST(ConfigFingerprintPinTest, TheEveryUpdateChecksAndAFlippedBitLeaveTheFingerprint) {
  const std::string base =
      "world_size: 2\n"
      "global_batch: 4\n"
      "data { synthetic { num_identities: 20 } validation_fraction: 0.25 }\n"
      "model { architecture: \"linear\" }\n"
      "optimizer { sgd { learning_rate: 0.1 } }\n";
  const std::string plain = ::testing::TempDir() + "/plain.pbtxt";
  const std::string judged = ::testing::TempDir() + "/judged.pbtxt";
  std::ofstream(plain) << base;
  std::ofstream(judged) << base
                        << "parity { every_update: false replay: false }\n"
                           "run { fault { corrupt_rank: 1 corrupt_update: 2 corrupt_bit: 30 } }\n";
  absl::StatusOr<LoadedConfig> a = LoadTrainingConfig(plain);
  absl::StatusOr<LoadedConfig> b = LoadTrainingConfig(judged);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  EXPECT_TRUE(a->config.parity().every_update());  // the default
  EXPECT_FALSE(b->config.parity().every_update());
  EXPECT_TRUE(a->config.parity().replay());  // the default
  EXPECT_FALSE(b->config.parity().replay());
  EXPECT_EQ(a->fingerprint, b->fingerprint);
  EXPECT_EQ(a->fingerprint, "f1847fc573a00096386e6874efef29c3b097867b");
}

// The overrides a user passes to train a config's reference by hand give
// the reference's fingerprint: one worker, one micro-batch, an even split.
TEST(ReferenceOverridesTest, TheyMakeTheConfigItsReference) {
  const std::string path = ::testing::TempDir() + "/accumulating.pbtxt";
  std::ofstream(path) << "world_size: 2\n"
                         "global_batch: 8\n"
                         "accumulation_steps: 2\n"
                         "local_batch_sizes: [6, 2]\n"
                         "data { synthetic { num_identities: 20 } validation_fraction: 0.25 }\n"
                         "model { architecture: \"linear\" }\n"
                         "optimizer { sgd { learning_rate: 0.1 } }\n"
                         "checkpoint { every_updates: 2 }\n";
  absl::StatusOr<LoadedConfig> run = LoadTrainingConfig(path);
  ASSERT_TRUE(run.ok()) << run.status();
  const std::vector<std::string> sets = ReferenceOverrides(run->config);
  EXPECT_EQ(sets, (std::vector<std::string>{"world_size=1", "accumulation_steps=1",
                                            "local_batch_sizes=[]"}));
  absl::StatusOr<std::vector<ConfigOverride>> overrides = ParseConfigOverrides(sets);
  ASSERT_TRUE(overrides.ok());
  absl::StatusOr<LoadedConfig> by_hand = LoadTrainingConfig(path, *overrides);
  ASSERT_TRUE(by_hand.ok()) << by_hand.status();
  EXPECT_EQ(by_hand->fingerprint, ConfigFingerprint(ReferenceConfig(run->config)));
}

// A manifest config hashes its data.manifest_path as written: the values
// below are what main printed for this config (with its manifest in the
// working directory, when paths in a config were relative to it), and they
// stay the same wherever the config and its data sit now that the path is
// relative to the config's folder.
TEST(ConfigFingerprintPinTest, AManifestConfigHashesItsPathAsWrittenWhereverItSits) {
  const std::string text =
      "world_size: 2\n"
      "global_batch: 4\n"
      "data { manifest_path: \"receipts.csv\" image_size: 16 validation_fraction: 0.25 }\n"
      "model { architecture: \"linear\" }\n"
      "optimizer { sgd { learning_rate: 0.1 } }\n";
  for (const std::string folder : {"/mydata", "/elsewhere/deeper"}) {
    const std::string dir = ::testing::TempDir() + folder;
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/m.pbtxt") << text;
    absl::StatusOr<LoadedConfig> loaded = LoadTrainingConfig(dir + "/m.pbtxt");
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_EQ(loaded->config.data().manifest_path(), "receipts.csv");
    EXPECT_EQ(loaded->data.manifest_path(),
              std::filesystem::path(dir + "/receipts.csv").lexically_normal().string());
    EXPECT_EQ(ConfigFingerprint(loaded->config),
              "e86be77640689d92000cf7b104804cd83e3ef6a4")
        << folder;
    EXPECT_EQ(ConfigFingerprint(ReferenceConfig(loaded->config)),
              "864a3335ddd7e6d09674f2aed9df4a1f3ecab3a3")
        << folder;
  }
}

// The plugin form of sgd and adamw is the form the docs write; the short
// forms are its aliases: a config written either way is one config.
TEST(ConfigFingerprintTest, BothFormsOfAnOptimizerAreOneConfig) {
  struct Forms {
    const char* short_form;
    const char* plugin_form;
  };
  const Forms same[] = {
      {"sgd { learning_rate: 0.01 momentum: 0.9 }",
       "name: 'sgd' options { [type.googleapis.com/receipt_parity.SgdOptions] "
       "{ lr: 0.01 momentum: 0.9 } }"},
      {"sgd { learning_rate: 0.001 }",
       "name: 'sgd' options { [type.googleapis.com/receipt_parity.SgdOptions] { } }"},
      {"adamw { learning_rate: 0.002 weight_decay: 0.01 }",
       "name: 'adamw' options { [type.googleapis.com/receipt_parity.AdamWOptions] "
       "{ lr: 0.002 beta1: 0.9 } }"},
      {"adamw { learning_rate: 0.001 beta2: 0.99 }",
       "name: 'adamw' options { [type.googleapis.com/receipt_parity.AdamWOptions] "
       "{ beta2: 0.99 weight_decay: 0 } }"},
  };
  auto fingerprint = [](const std::string& optimizer) {
    TrainingConfig config;
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
        "world_size: 2 global_batch: 4 optimizer { " + optimizer + " }", &config));
    return ConfigFingerprint(config);
  };
  for (const Forms& f : same) {
    SCOPED_TRACE(f.plugin_form);
    EXPECT_EQ(fingerprint(f.short_form), fingerprint(f.plugin_form));
  }
  // What the short form cannot say keeps the plugin form's own fingerprint:
  // another optimizer than the short form's nearest.
  EXPECT_NE(fingerprint("sgd { learning_rate: 0.01 }"),
            fingerprint("name: 'sgd' options { [type.googleapis.com/receipt_parity.SgdOptions] "
                        "{ lr: 0.01 dampening: 0.5 } }"));
  EXPECT_NE(fingerprint("adamw { learning_rate: 0.001 }"),
            fingerprint("name: 'adamw' options { "
                        "[type.googleapis.com/receipt_parity.AdamWOptions] { beta1: 0 } }"));
  // adamw { } without weight_decay has none; the plugin form's unset is 0.01.
  EXPECT_NE(fingerprint("adamw { learning_rate: 0.001 }"),
            fingerprint("name: 'adamw' options { "
                        "[type.googleapis.com/receipt_parity.AdamWOptions] { lr: 0.001 } }"));
}

}  // namespace
}  // namespace receipt_parity

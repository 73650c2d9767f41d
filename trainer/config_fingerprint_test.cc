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

#include "gtest/gtest.h"
#include "trainer/config_loader.h"

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
       "64e37d8d28dca76ceeb4c2476338a9f2ab01e776",
       "64e37d8d28dca76ceeb4c2476338a9f2ab01e776"},
      {"configs/three_worker_47_ids.pbtxt",
       "9cc441ba3ae387f96235562f208cdb47b1578577",
       "b260796c58a50a64556d8c5d4dbbd0d59ede4cfe"},
      {"configs/two_worker_duplicate_pad.pbtxt",
       "8245b9e9b32709dea57748ca802c5adeb6475389",
       "779f7cb74d4292d5e9074d6da2d81c0d22335503"},
      {"configs/two_worker_masked_tail.pbtxt",
       "356c4744602546d2e298cfc0ae49a8677ebe06bb",
       "64e37d8d28dca76ceeb4c2476338a9f2ab01e776"},
      {"configs/two_worker_rank_mean_wrong.pbtxt",
       "9944eae8e0d8b6dd68aa40de08670edde9c00956",
       "658a944079cf5290cafd9746dceaacb03f37b1b0"},
      {"configs/two_worker_uneven.pbtxt",
       "0fc88d2cf97ea06226ef01722bee261b05d68ea6",
       "e583d242d693a36a1649846293d923d08b93aea4"},
  };
  return *pinned;
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

}  // namespace
}  // namespace receipt_parity

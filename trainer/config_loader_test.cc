#include "trainer/config_loader.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/atomic_file.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kValid[] = R"pb(
world_size: 2
global_batch: 4
data { synthetic { num_identities: 20 } validation_fraction: 0.25 }
model { architecture: "linear" }
optimizer { sgd { learning_rate: 0.1 } }
)pb";

std::string WriteConfig(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + "/" + name;
  EXPECT_TRUE(WriteFileAtomically(path, text).ok());
  return path;
}

TEST(ConfigLoaderTest, ValidConfigGetsDefaults) {
  auto loaded = ParseTrainingConfig(kValid, "valid.pbtxt");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const TrainingConfig& c = loaded->config;
  EXPECT_EQ(c.precision(), "fp32");
  EXPECT_EQ(c.backend(), "gloo");
  EXPECT_EQ(c.sampler().name(), "masked_tail");
  EXPECT_EQ(c.reducer().name(), "allreduce_sum");
  EXPECT_EQ(LocalBatchSizes(c), (std::vector<int>{2, 2}));
}

TEST(ConfigLoaderTest, SyntaxErrorsCarryFileLineAndColumn) {
  const std::string path = WriteConfig(
      "syntax.pbtxt", "world_size: 2\nglobal_batch: four\n");
  auto loaded = LoadTrainingConfig(path);
  ASSERT_EQ(loaded.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(loaded.status().message()),
              StartsWith(path + ":2:15: "));
}

TEST(ConfigLoaderTest, UnknownFieldsAreErrorsWithTheirLocation) {
  auto loaded = ParseTrainingConfig(
      std::string(kValid) + "\nworld_sise: 3\n", "typo.pbtxt");
  EXPECT_THAT(loaded.status().message(), HasSubstr("typo.pbtxt:8:"));
  EXPECT_THAT(loaded.status().message(), HasSubstr("world_sise"));
}

TEST(ConfigLoaderTest, ValidationErrorsNameTheFieldAndWhereItIsWritten) {
  auto bf16 = ParseTrainingConfig(std::string(kValid) + "precision: \"bf16\"\n",
                                  "p.pbtxt");
  EXPECT_THAT(bf16.status().message(),
              HasSubstr("p.pbtxt:7:1: precision: only fp32 is supported"));

  auto nccl = ParseTrainingConfig(std::string(kValid) + "backend: \"nccl\"\n",
                                  "b.pbtxt");
  EXPECT_THAT(nccl.status().message(),
              HasSubstr("b.pbtxt:7:1: backend: nccl needs a CUDA build"));

  auto uneven = ParseTrainingConfig(
      std::string(kValid) + "local_batch_sizes: [3, 2]\n", "u.pbtxt");
  EXPECT_THAT(uneven.status().message(),
              HasSubstr("u.pbtxt:7:1: local_batch_sizes: add up to 5"));

  auto lr = ParseTrainingConfig(
      "world_size: 1 global_batch: 2 model { architecture: \"cnn\" }\n"
      "data { synthetic { num_identities: 3 } }\n"
      "optimizer {\n  sgd { learning_rate: -1 }\n}\n",
      "lr.pbtxt");
  EXPECT_THAT(lr.status().message(),
              HasSubstr("lr.pbtxt:4:9: optimizer.sgd.learning_rate: must be > 0"));

  auto odd = ParseTrainingConfig(
      std::string(kValid) + "global_batch: 5\n", "odd.pbtxt");
  EXPECT_FALSE(odd.ok());  // global_batch written twice is a syntax error
  auto indivisible = ParseTrainingConfig(
      "world_size: 2 global_batch: 3 model { architecture: \"linear\" }\n"
      "data { synthetic { num_identities: 3 } }\n"
      "optimizer { sgd { learning_rate: 1 } }\n",
      "i.pbtxt");
  EXPECT_THAT(indivisible.status().message(),
              HasSubstr("i.pbtxt:1:15: global_batch: 3 slots do not split"));
}

TEST(ConfigLoaderTest, AFieldLeftAtItsDefaultIsNamedWithTheFileOnly) {
  auto missing = ParseTrainingConfig("world_size: 1 global_batch: 1\n", "m.pbtxt");
  EXPECT_THAT(missing.status().message(),
              HasSubstr("m.pbtxt: model.architecture: missing"));
}

TEST(ConfigLoaderTest, MissingFileIsNotFound) {
  EXPECT_EQ(LoadTrainingConfig("/nonexistent/x.pbtxt").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(ConfigLoaderTest, UnknownPluginOptionTypeIsASyntaxError) {
  auto loaded = ParseTrainingConfig(
      std::string(kValid) +
          "reducer { name: \"allreduce_sum\" options { "
          "[type.googleapis.com/receipt_parity.NoSuchOptions] { } } }\n",
      "any.pbtxt");
  EXPECT_THAT(loaded.status().message(), HasSubstr("any.pbtxt:7:"));
  EXPECT_THAT(loaded.status().message(), HasSubstr("NoSuchOptions"));
}

TEST(ConfigFingerprintTest, IgnoresRunOptionsButNotTraining) {
  auto a = ParseTrainingConfig(kValid, "a");
  auto b = ParseTrainingConfig(
      std::string(kValid) + "run { output_dir: \"/tmp/x\" log_every_updates: 3 }\n" +
          "checkpoint { every_updates: 5 keep_last: 4 }\n",
      "b");
  auto c = ParseTrainingConfig(std::string(kValid) + "seeds { sampler: 9 }\n", "c");
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(ConfigFingerprint(a->config), ConfigFingerprint(b->config));
  EXPECT_NE(ConfigFingerprint(a->config), ConfigFingerprint(c->config));
  EXPECT_EQ(ConfigFingerprint(a->config).size(), 40u);
}

TEST(ConfigFingerprintTest, ReferenceConfigIsOneWorker) {
  auto a = ParseTrainingConfig(
      std::string(kValid) + "local_batch_sizes: [3, 1]\n", "a");
  ASSERT_TRUE(a.ok()) << a.status();
  TrainingConfig reference = ReferenceConfig(a->config);
  EXPECT_EQ(reference.world_size(), 1);
  EXPECT_TRUE(ValidateConfig(reference).ok());
  EXPECT_EQ(LocalBatchSizes(reference), (std::vector<int>{4}));
}

}  // namespace
}  // namespace receipt_parity

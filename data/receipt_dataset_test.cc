#include "data/receipt_dataset.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "data/label_map.h"
#include "data/test_image_files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

DataConfig Synthetic(int n, int views = 3, double fraction = 0.25) {
  DataConfig config;
  config.mutable_synthetic()->set_num_identities(n);
  config.mutable_synthetic()->set_seed(21);
  config.set_views_per_identity(views);
  config.set_validation_fraction(fraction);
  config.set_split_seed(5);
  config.set_augmentation_seed(9);
  config.set_image_size(16);
  return config;
}

ReceiptSplit Load(const DataConfig& config) {
  absl::StatusOr<ReceiptSplit> split = LoadReceipts(config);
  EXPECT_TRUE(split.ok()) << split.status();
  return split.ok() ? *std::move(split) : ReceiptSplit{};
}

std::set<std::string> Ids(const std::vector<ReceiptExample>& examples) {
  std::set<std::string> ids;
  for (const ReceiptExample& e : examples) ids.insert(e.receipt_id);
  return ids;
}

bool SameBytes(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

void ExpectNoIdOnBothSides(const ReceiptSplit& split) {
  const std::set<std::string> train = Ids(split.train);
  for (const std::string& id : Ids(split.validation)) {
    EXPECT_EQ(train.count(id), 0u) << id << " is in train and validation";
  }
}

TEST(ReceiptDatasetTest, NoReceiptIdInBothTrainAndValidation) {
  const ReceiptSplit split = Load(Synthetic(300));
  EXPECT_EQ(Ids(split.train).size() + Ids(split.validation).size(), 300u);
  ExpectNoIdOnBothSides(split);
}

TEST(ReceiptDatasetTest, SameConfigGivesByteIdenticalData) {
  const ReceiptSplit a = Load(Synthetic(120));
  const ReceiptSplit b = Load(Synthetic(120));
  ASSERT_EQ(a.train.size(), b.train.size());
  ASSERT_EQ(a.validation.size(), b.validation.size());
  for (size_t i = 0; i < a.train.size(); ++i) {
    EXPECT_EQ(a.train[i].receipt_id, b.train[i].receipt_id);
    EXPECT_EQ(a.train[i].view, b.train[i].view);
    EXPECT_TRUE(SameBytes(a.train[i].pixels, b.train[i].pixels)) << i;
  }
  for (size_t i = 0; i < a.validation.size(); ++i) {
    EXPECT_TRUE(SameBytes(a.validation[i].pixels, b.validation[i].pixels));
  }
}

TEST(ReceiptDatasetTest, SplitSeedChangesTheSplitAugmentationSeedTheViews) {
  const ReceiptSplit base = Load(Synthetic(120));
  DataConfig reseeded = Synthetic(120);
  reseeded.set_split_seed(6);
  EXPECT_NE(Ids(Load(reseeded).validation), Ids(base.validation));

  DataConfig reaugmented = Synthetic(120);
  reaugmented.set_augmentation_seed(10);
  const ReceiptSplit other = Load(reaugmented);
  EXPECT_EQ(Ids(other.validation), Ids(base.validation));
  EXPECT_TRUE(SameBytes(other.train[0].pixels, base.train[0].pixels));
  EXPECT_FALSE(SameBytes(other.train[1].pixels, base.train[1].pixels));
}

TEST(ReceiptDatasetTest, TrainViewsAreGroupedAndValidationIsOneCapture) {
  const int views = 3;
  const ReceiptSplit split = Load(Synthetic(80, views));
  EXPECT_EQ(split.image_size, 16);
  ASSERT_EQ(split.train.size() % views, 0u);
  for (size_t i = 0; i < split.train.size(); i += views) {
    for (int v = 0; v < views; ++v) {
      const ReceiptExample& e = split.train[i + v];
      EXPECT_EQ(e.receipt_id, split.train[i].receipt_id);
      EXPECT_EQ(e.label, split.train[i].label);
      EXPECT_EQ(e.view, v);
      EXPECT_EQ(e.pixels.size(), 16u * 16u);
      for (int w = 0; w < v; ++w) {
        EXPECT_FALSE(SameBytes(e.pixels, split.train[i + w].pixels))
            << e.receipt_id << " views " << w << " and " << v;
      }
    }
  }
  EXPECT_EQ(Ids(split.validation).size(), split.validation.size());
  for (const ReceiptExample& e : split.validation) EXPECT_EQ(e.view, 0);
}

TEST(ReceiptDatasetTest, ViewsDoNotDependOnOtherIdentities) {
  // rcpt-000003 with 40 or 60 identities: wherever it is in train, its views
  // are the same bytes.
  std::map<std::string, std::vector<float>> first;
  for (int n : {40, 60}) {
    for (const ReceiptExample& e : Load(Synthetic(n, 3, 0.0)).train) {
      const std::string key = absl::StrCat(e.receipt_id, "#", e.view);
      if (n == 40) {
        first[key] = e.pixels;
      } else if (first.count(key)) {
        EXPECT_TRUE(SameBytes(first[key], e.pixels)) << key;
      }
    }
  }
  EXPECT_EQ(first.size(), 120u);
}

TEST(ReceiptDatasetTest, ClassesPresentAndRareFractionAsConfigured) {
  const ReceiptSplit split = Load(Synthetic(600, 2, 0.2));
  std::vector<int64_t> counts(kNumLabels, 0), validation(kNumLabels, 0);
  for (const ReceiptExample& e : split.train) ++counts[e.label];
  for (const ReceiptExample& e : split.validation) ++validation[e.label];
  EXPECT_EQ(split.train_class_counts, counts);
  for (int label = 0; label < kNumLabels; ++label) {
    EXPECT_GT(counts[label], 0) << LabelNames()[label];
    EXPECT_GT(validation[label], 0) << LabelNames()[label];
  }
  const double rare = static_cast<double>(counts[kRareLabel]) /
                      static_cast<double>(split.train.size());
  EXPECT_NEAR(rare, 0.04, 0.01);
}

TEST(ReceiptDatasetTest, ManifestCapturesAreViewsAndStayOnOneSide) {
  const int size = 8;
  const std::string dir = MakeTestDir("dataset_manifest");
  std::string manifest = std::string("receipt_id,image,label\n");
  for (int id = 0; id < 12; ++id) {
    for (int capture = 0; capture < 1 + id % 3; ++capture) {
      const std::string image = absl::StrCat("r", id, "_", capture, ".pgm");
      WriteTestFile(
          dir, image,
          EncodePgmP5(size, size, RampSamples(size, size, id * 10 + capture)));
      absl::StrAppend(&manifest, "r", id, ",", image, ",", LabelNames()[id % 4],
                      "\n");
    }
  }
  DataConfig config;
  config.set_manifest_path(WriteTestFile(dir, "manifest.csv", manifest));
  config.set_image_size(size);
  config.set_validation_fraction(0.34);
  config.set_views_per_identity(2);
  const ReceiptSplit split = Load(config);
  ExpectNoIdOnBothSides(split);
  EXPECT_EQ(Ids(split.train).size() + Ids(split.validation).size(), 12u);
  // r<id> has 1 + id % 3 captures: views = max(captures, 2); view v < captures
  // is capture v, the rest are augmented.
  std::map<std::string, int> views;
  for (const ReceiptExample& e : split.train) {
    const int id = std::stoi(e.receipt_id.substr(1));
    EXPECT_EQ(e.view, views[e.receipt_id]++);
    const std::vector<uint8_t> capture =
        RampSamples(size, size, id * 10 + std::min(e.view, id % 3));
    const bool is_capture = e.view < 1 + id % 3;
    EXPECT_EQ(std::abs(e.pixels[5] - capture[5] / 255.0f) < 1e-6, is_capture)
        << e.receipt_id << " view " << e.view;
  }
  for (const auto& [id, count] : views) {
    EXPECT_EQ(count, std::max(2, 1 + std::stoi(id.substr(1)) % 3)) << id;
  }
  for (const ReceiptExample& e : split.validation) {
    const int id = std::stoi(e.receipt_id.substr(1));
    EXPECT_FLOAT_EQ(e.pixels[5], RampSamples(size, size, id * 10)[5] / 255.0f);
  }
}

// The index of a synthetic config is its examples without their pixels:
// the same ids, labels and views in the same order, and each example's
// identity_index its synthetic identity.
TEST(ReceiptDatasetTest, IndexOnlyIsTheSameExamplesWithoutPixels) {
  const DataConfig config = Synthetic(50);
  const ReceiptSplit whole = Load(config);
  absl::StatusOr<ReceiptSplit> index = LoadReceipts(config, PixelLoading::kIndexOnly);
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(index->image_size, whole.image_size);
  EXPECT_EQ(index->train_class_counts, whole.train_class_counts);
  for (auto part : {&ReceiptSplit::train, &ReceiptSplit::validation}) {
    const std::vector<ReceiptExample>& want = whole.*part;
    const std::vector<ReceiptExample>& got = (*index).*part;
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].receipt_id, want[i].receipt_id);
      EXPECT_EQ(got[i].label, want[i].label);
      EXPECT_EQ(got[i].view, want[i].view);
      EXPECT_EQ(got[i].identity_index, want[i].identity_index);
      EXPECT_EQ(got[i].receipt_id, absl::StrFormat("rcpt-%06d", got[i].identity_index));
      EXPECT_TRUE(got[i].pixels.empty());
      EXPECT_FALSE(want[i].pixels.empty());
    }
  }
}

// A manifest's rows are counted before any image is read: these images do
// not exist, and the refusal is about the rows.
TEST(ReceiptDatasetTest, AManifestWhosePixelsDoNotFitIsRefusedBeforeReadingAnImage) {
  const std::string dir = MakeTestDir("dataset_manifest_too_large");
  DataConfig config;
  config.set_image_size(8);
  config.set_views_per_identity(2);
  config.set_manifest_path(WriteTestFile(
      dir, "big.csv", "receipt_id,image,label\nr1,a.pgm,ok\n\nr2,b.pgm,ok\nr3,c.pgm,faded\n"));
  const int64_t per_row = HeldPixelBytes(2, 8);
  absl::Status refused = LoadReceipts(config, PixelLoading::kLoad, 3 * per_row - 1).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.message()),
              testing::StartsWith(absl::StrCat("data.manifest_path: ", dir,
                                               "/big.csv: 3 rows, more than the 2 whose pixels "
                                               "fit in memory")));
  // With room for the rows it goes on, to the missing image.
  absl::Status missing = LoadReceipts(config, PixelLoading::kLoad, 3 * per_row).status();
  EXPECT_THAT(std::string(missing.message()), HasSubstr("a.pgm"));
}

TEST(ReceiptDatasetTest, AManifestHasNoIndexOnlyLoading) {
  DataConfig config;
  config.set_image_size(8);
  config.set_manifest_path("receipts.csv");
  absl::Status refused = LoadReceipts(config, PixelLoading::kIndexOnly).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.message()), HasSubstr("data.manifest_path: "));
  EXPECT_THAT(std::string(refused.message()), HasSubstr("data.synthetic only"));
}

// The trainer puts the config's line of data.manifest_path in front of
// these (config/config_loader.h).
TEST(ReceiptDatasetTest, ManifestErrorsNameTheFieldThenTheManifest) {
  const std::string dir = MakeTestDir("dataset_manifest_errors");
  DataConfig config;
  config.set_image_size(8);
  config.set_manifest_path(dir + "/missing.csv");
  absl::Status missing = LoadReceipts(config).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(std::string(missing.message()),
            absl::StrCat("data.manifest_path: cannot read receipt manifest: ",
                         dir, "/missing.csv: no such file"));

  config.set_manifest_path(WriteTestFile(dir, "bad.csv",
                                         "receipt_id,image,label\nr1,a.pgm,smudged\n"));
  absl::Status bad_line = LoadReceipts(config).status();
  EXPECT_EQ(bad_line.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad_line.message()),
              testing::StartsWith(absl::StrCat("data.manifest_path: ", dir,
                                               "/bad.csv:2: unknown label \"smudged\"")));
}

TEST(ReceiptDatasetTest, BadConfigValuesNameTheField) {
  struct Case {
    DataConfig config;
    const char* message;
  };
  std::vector<Case> cases;
  cases.push_back({DataConfig(), "data.source: set data.synthetic"});
  DataConfig c = Synthetic(10);
  c.set_validation_fraction(1.5);
  cases.push_back({c, "data.validation_fraction: must be in [0, 1), got 1.5"});
  c.set_validation_fraction(1.0);
  cases.push_back({c, "data.validation_fraction"});
  c.set_validation_fraction(std::numeric_limits<double>::quiet_NaN());
  cases.push_back({c, "data.validation_fraction"});
  c = Synthetic(10, -1);
  cases.push_back({c, "data.views_per_identity: must be in [0, 1000]"});
  c = Synthetic(10);
  c.set_image_size(4);
  cases.push_back(
      {c, "data.image_size: must be in [8, 512] (0 means 32), got 4"});
  c.set_image_size(-32);
  cases.push_back({c, "data.image_size"});
  c = Synthetic(0);
  cases.push_back({c, "data.synthetic.num_identities"});
  c = Synthetic(10);
  c.mutable_synthetic()->set_rare_class_fraction(0.7);
  cases.push_back({c, "data.synthetic.rare_class_fraction"});
  c = DataConfig();
  c.set_manifest_path("");
  cases.push_back({c, "data.manifest_path: must not be empty"});
  for (const Case& bad : cases) {
    const absl::Status status = ValidateDataConfig(bad.config);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad.message;
    EXPECT_THAT(status.message(), HasSubstr(bad.message));
    EXPECT_EQ(LoadReceipts(bad.config).status(), status);
  }
  EXPECT_TRUE(ValidateDataConfig(Synthetic(10)).ok());
}

TEST(ReceiptDatasetTest, DefaultsApplyWhenZero) {
  DataConfig config = Synthetic(20, 0, 0.0);
  config.set_image_size(0);
  const ReceiptSplit split = Load(config);
  EXPECT_EQ(split.image_size, kDefaultImageSize);
  EXPECT_EQ(split.train.size(), 20u);  // one view each
  EXPECT_TRUE(split.validation.empty());
  EXPECT_EQ(split.train[0].pixels.size(), 32u * 32u);
}

}  // namespace
}  // namespace receipt_parity

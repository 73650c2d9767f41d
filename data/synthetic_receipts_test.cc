#include "data/synthetic_receipts.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "data/augmentation.h"
#include "data/label_map.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

SyntheticReceipts Config(int n, double rare = 0.0, uint64_t seed = 7) {
  SyntheticReceipts config;
  config.set_num_identities(n);
  config.set_rare_class_fraction(rare);
  config.set_seed(seed);
  return config;
}

std::vector<ReceiptIdentity> Generate(const SyntheticReceipts& config,
                                      int size = 32) {
  absl::StatusOr<std::vector<ReceiptIdentity>> identities =
      GenerateSyntheticReceipts(config, size);
  EXPECT_TRUE(identities.ok()) << identities.status();
  return identities.ok() ? *std::move(identities)
                         : std::vector<ReceiptIdentity>{};
}

bool SameBytes(const GrayPixels& a, const GrayPixels& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<int> ClassCounts(const std::vector<ReceiptIdentity>& identities) {
  std::vector<int> counts(kNumLabels, 0);
  for (const ReceiptIdentity& identity : identities) ++counts[identity.label];
  return counts;
}

// A hand-written rule on three image statistics; it recognises every class
// only if the generator makes the classes visibly different:
// faded = low intensity range, blurred = little row-to-row change,
// cropped = bright paper on the image border.
int ClassifyByRule(const GrayPixels& pixels, int size) {
  GrayPixels sorted = pixels;
  std::sort(sorted.begin(), sorted.end());
  const double range =
      sorted[sorted.size() * 99 / 100] - sorted[sorted.size() / 100];
  if (range < 0.4) return kLabelFaded;
  double change = 0;
  for (int i = size; i < size * size; ++i) {
    change += std::abs(pixels[i] - pixels[i - size]);
  }
  if (change / (size * (size - 1)) < 0.045) return kLabelBlurred;
  float border = 0;
  for (int k = 0; k < size; ++k) {
    border = std::max({border, pixels[k], pixels[(size - 1) * size + k],
                       pixels[k * size], pixels[k * size + size - 1]});
  }
  return border > 0.6 ? kLabelCropped : kLabelOk;
}

TEST(SyntheticReceiptsTest, IdsAreNumberedReceipts) {
  EXPECT_EQ(SyntheticReceiptId(17), "rcpt-000017");
  const std::vector<ReceiptIdentity> identities = Generate(Config(3));
  ASSERT_EQ(identities.size(), 3u);
  EXPECT_EQ(identities[2].receipt_id, "rcpt-000002");
}

TEST(SyntheticReceiptsTest, ImagesHaveTheSizeAndRange) {
  for (int size : {8, 32, 48}) {
    for (const ReceiptIdentity& identity : Generate(Config(40), size)) {
      ASSERT_EQ(identity.captures.size(), 1u);
      ASSERT_EQ(identity.captures[0].size(), static_cast<size_t>(size * size));
      for (float p : identity.captures[0]) {
        ASSERT_GE(p, 0.0f);
        ASSERT_LE(p, 1.0f);
      }
    }
  }
}

TEST(SyntheticReceiptsTest, SameConfigGivesByteIdenticalPixels) {
  const std::vector<ReceiptIdentity> a = Generate(Config(60));
  const std::vector<ReceiptIdentity> b = Generate(Config(60));
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].label, b[i].label);
    EXPECT_TRUE(SameBytes(a[i].captures[0], b[i].captures[0])) << i;
  }
  // Another seed renders other receipts.
  const std::vector<ReceiptIdentity> c = Generate(Config(60, 0.0, 8));
  EXPECT_FALSE(SameBytes(a[0].captures[0], c[0].captures[0]));
}

TEST(SyntheticReceiptsTest, IdentityDoesNotDependOnHowManyExist) {
  const std::vector<ReceiptIdentity> few = Generate(Config(30));
  const std::vector<ReceiptIdentity> more = Generate(Config(90));
  for (size_t i = 0; i < few.size(); ++i) {
    EXPECT_EQ(few[i].label, more[i].label);
    EXPECT_TRUE(SameBytes(few[i].captures[0], more[i].captures[0])) << i;
  }
}

TEST(SyntheticReceiptsTest, RareClassFractionIsTheConfiguredOne) {
  for (double rare : {0.0, 0.03, 0.05, 0.2}) {
    const int n = 2000;
    const std::vector<int> counts = ClassCounts(Generate(Config(n, rare), 8));
    const double expected =
        (rare == 0.0 ? kDefaultRareClassFraction : rare) * n;
    EXPECT_LE(std::abs(counts[kRareLabel] - expected), 1.0) << rare;
  }
}

TEST(SyntheticReceiptsTest, EveryClassPresentAndCommonClassesBalanced) {
  const int n = 1200;
  const std::vector<int> counts = ClassCounts(Generate(Config(n), 8));
  const double common = (n - counts[kRareLabel]) / 3.0;
  for (int label : {kLabelOk, kLabelBlurred, kLabelFaded}) {
    EXPECT_NEAR(counts[label], common, 0.15 * common) << LabelNames()[label];
  }
  // Even a small set holds the rare class.
  EXPECT_GT(ClassCounts(Generate(Config(60)))[kRareLabel], 0);
}

TEST(SyntheticReceiptsTest, ClassesAreVisiblyDifferentAlsoAfterAugmentation) {
  const int size = 32;
  const std::vector<ReceiptIdentity> identities = Generate(Config(400), size);
  int right = 0, total = 0;
  std::vector<std::vector<int>> confusion(kNumLabels,
                                          std::vector<int>(kNumLabels, 0));
  for (const ReceiptIdentity& identity : identities) {
    for (int view = 0; view < 3; ++view) {
      const GrayPixels pixels =
          AugmentView(identity.captures[0], size, 5, identity.receipt_id, view);
      const int guess = ClassifyByRule(pixels, size);
      ++confusion[identity.label][guess];
      right += guess == identity.label;
      ++total;
    }
  }
  for (int label = 0; label < kNumLabels; ++label) {
    EXPECT_GE(confusion[label][label],
              0.97 * std::max(1, ClassCounts(identities)[label] * 3))
        << LabelNames()[label];
  }
  EXPECT_GE(right, 0.99 * total);
}

TEST(SyntheticReceiptsTest, BadConfigNamesTheField) {
  struct Case {
    SyntheticReceipts config;
    const char* field;
  };
  const Case cases[] = {
      {Config(0), "data.synthetic.num_identities: must be in [1, 1000000]"},
      {Config(-5), "data.synthetic.num_identities"},
      {Config(kMaxSyntheticIdentities + 1), "data.synthetic.num_identities"},
      {Config(10, 0.5),
       "data.synthetic.rare_class_fraction: must be in (0, 0.5)"},
      {Config(10, -0.1), "data.synthetic.rare_class_fraction"},
      {Config(10, std::numeric_limits<double>::quiet_NaN()),
       "data.synthetic.rare_class_fraction"},
  };
  for (const Case& c : cases) {
    const absl::Status status = ValidateSyntheticReceipts(c.config);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.field;
    EXPECT_THAT(status.message(), HasSubstr(c.field));
    EXPECT_EQ(GenerateSyntheticReceipts(c.config, 8).status(), status);
  }
}

}  // namespace
}  // namespace receipt_parity

#include "data/identity_split.h"

#include <algorithm>
#include <set>
#include <string>

#include "absl/strings/str_format.h"
#include "data/label_map.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

// `per_class[label]` identities of each label, ids "id-<label>-<k>", no
// pixels (the split looks at ids and labels only).
std::vector<ReceiptIdentity> Identities(const std::vector<int>& per_class) {
  std::vector<ReceiptIdentity> identities;
  for (int label = 0; label < static_cast<int>(per_class.size()); ++label) {
    for (int k = 0; k < per_class[label]; ++k) {
      identities.push_back(
          ReceiptIdentity{absl::StrFormat("id-%d-%04d", label, k), label, {}});
    }
  }
  return identities;
}

std::set<std::string> Ids(const std::vector<ReceiptIdentity>& identities,
                          const std::vector<int>& indices) {
  std::set<std::string> ids;
  for (int i : indices) ids.insert(identities[i].receipt_id);
  return ids;
}

int CountLabel(const std::vector<ReceiptIdentity>& identities,
               const std::vector<int>& indices, int label) {
  return static_cast<int>(
      std::count_if(indices.begin(), indices.end(),
                    [&](int i) { return identities[i].label == label; }));
}

TEST(IdentitySplitTest, EveryIdentityOnExactlyOneSide) {
  const std::vector<ReceiptIdentity> identities = Identities({40, 30, 20, 5});
  const IdentitySplit split = SplitIdentities(identities, 0.25, 1);
  std::vector<int> all = split.train;
  all.insert(all.end(), split.validation.begin(), split.validation.end());
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), identities.size());
  for (int i = 0; i < static_cast<int>(all.size()); ++i) EXPECT_EQ(all[i], i);
  EXPECT_TRUE(std::is_sorted(split.train.begin(), split.train.end()));
  EXPECT_TRUE(std::is_sorted(split.validation.begin(), split.validation.end()));
}

TEST(IdentitySplitTest, StratifiedByClass) {
  const std::vector<ReceiptIdentity> identities = Identities({40, 30, 20, 5});
  const IdentitySplit split = SplitIdentities(identities, 0.25, 1);
  EXPECT_EQ(CountLabel(identities, split.validation, 0), 10);
  EXPECT_EQ(CountLabel(identities, split.validation, 1), 8);  // round(7.5)
  EXPECT_EQ(CountLabel(identities, split.validation, 2), 5);
  EXPECT_EQ(CountLabel(identities, split.validation, 3), 1);
}

TEST(IdentitySplitTest, RareClassReachesValidationWhenPossible) {
  // 0.05 * 3 rounds to 0, but the rare class still gets a validation identity.
  const std::vector<ReceiptIdentity> identities = Identities({50, 50, 50, 3});
  const IdentitySplit split = SplitIdentities(identities, 0.05, 4);
  EXPECT_EQ(CountLabel(identities, split.validation, kRareLabel), 1);
  EXPECT_EQ(CountLabel(identities, split.train, kRareLabel), 2);
  // A single identity of a class stays in training.
  const std::vector<ReceiptIdentity> lone = Identities({10, 10, 10, 1});
  const IdentitySplit lone_split = SplitIdentities(lone, 0.9, 4);
  EXPECT_EQ(CountLabel(lone, lone_split.train, kRareLabel), 1);
  // Every class keeps a training identity even at a high fraction.
  for (int label = 0; label < kNumLabels; ++label) {
    EXPECT_GE(CountLabel(lone, lone_split.train, label), 1);
  }
}

TEST(IdentitySplitTest, ZeroFractionKeepsEverythingInTraining) {
  const std::vector<ReceiptIdentity> identities = Identities({5, 5, 5, 2});
  const IdentitySplit split = SplitIdentities(identities, 0.0, 1);
  EXPECT_TRUE(split.validation.empty());
  EXPECT_EQ(split.train.size(), identities.size());
}

TEST(IdentitySplitTest, DeterministicPerSeedAndSeedChangesIt) {
  const std::vector<ReceiptIdentity> identities = Identities({40, 30, 20, 5});
  const IdentitySplit a = SplitIdentities(identities, 0.3, 11);
  const IdentitySplit b = SplitIdentities(identities, 0.3, 11);
  const IdentitySplit c = SplitIdentities(identities, 0.3, 12);
  EXPECT_EQ(a.validation, b.validation);
  EXPECT_EQ(a.train, b.train);
  EXPECT_NE(a.validation, c.validation);
  EXPECT_EQ(a.validation.size(), c.validation.size());
}

TEST(IdentitySplitTest, SideDependsOnIdNotOnInputOrder) {
  std::vector<ReceiptIdentity> identities = Identities({40, 30, 20, 5});
  const IdentitySplit forward = SplitIdentities(identities, 0.3, 5);
  const std::set<std::string> validation = Ids(identities, forward.validation);
  std::reverse(identities.begin(), identities.end());
  const IdentitySplit reversed = SplitIdentities(identities, 0.3, 5);
  EXPECT_EQ(Ids(identities, reversed.validation), validation);
}

}  // namespace
}  // namespace receipt_parity

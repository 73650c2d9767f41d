#include "metrics/first_per_receipt.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> Origins(const std::vector<Prediction>& predictions) {
  std::vector<std::string> out;
  for (const Prediction& p : predictions) {
    out.push_back(absl::StrCat(p.receipt_id, "@", p.rank, ":", p.slot));
  }
  return out;
}

TEST(SortPredictionsTest, OrdersByReceiptIdThenRankThenSlot) {
  std::vector<Prediction> predictions = {{"r2", 0, 0, 1, 0},
                                         {"r1", 0, 0, 1, 3},
                                         {"r1", 0, 0, 0, 5},
                                         {"r1", 0, 0, 1, 1},
                                         {"r10", 0, 0, 0, 0}};
  SortPredictions(&predictions);
  EXPECT_THAT(Origins(predictions),
              ElementsAre("r1@0:5", "r1@1:1", "r1@1:3", "r10@0:0", "r2@1:0"));
}

TEST(KeepFirstPerReceiptIdTest, KeepsTheFirstInRankSlotOrderWhateverTheInput) {
  // Gathered in reverse: rank 1 first.
  std::vector<Prediction> gathered = {{"b", 1, 1, 1, 0},
                                      {"a", 2, 2, 1, 1},
                                      {"a", 2, 2, 0, 7},
                                      {"a", 2, 2, 0, 2},
                                      {"b", 1, 1, 0, 4}};
  FirstPerReceipt first = KeepFirstPerReceiptId(gathered);
  EXPECT_THAT(Origins(first.result.counted), ElementsAre("a@0:2", "b@0:4"));
  EXPECT_EQ(first.result.duplicates_dropped, 3);
  EXPECT_TRUE(first.disagreements.empty());
}

TEST(KeepFirstPerReceiptIdTest, DescribesEachDisagreeingIdWithEveryOrigin) {
  std::vector<Prediction> gathered = {
      {"same", 1, 1, 0, 0},  {"same", 1, 1, 1, 0},
      {"pred", 1, 2, 0, 3},  {"pred", 0, 2, 1, 0},  // predicted differs
      {"label", 3, 3, 0, 1}, {"label", 3, 2, 1, 2}  // label differs
  };
  FirstPerReceipt first = KeepFirstPerReceiptId(gathered);
  EXPECT_EQ(first.result.counted.size(), 3u);
  EXPECT_EQ(first.result.duplicates_dropped, 3);
  ASSERT_EQ(first.disagreements.size(), 2u);
  EXPECT_EQ(first.disagreements[0],
            "receipt 'label': rank 0 slot 1 (predicted 3, label 3), "
            "rank 1 slot 2 (predicted 3, label 2)");
  EXPECT_EQ(first.disagreements[1],
            "receipt 'pred': rank 0 slot 3 (predicted 1, label 2), "
            "rank 1 slot 0 (predicted 0, label 2)");
}

TEST(KeepFirstPerReceiptIdTest, EmptyInputGivesEmptyResult) {
  FirstPerReceipt first = KeepFirstPerReceiptId({});
  EXPECT_TRUE(first.result.counted.empty());
  EXPECT_EQ(first.result.duplicates_dropped, 0);
}

TEST(JoinDisagreementsTest, ShowsAtMostMaxShownThenHowManyMore) {
  std::vector<std::string> lines = {"a", "b", "c", "d"};
  EXPECT_EQ(JoinDisagreements(lines, 4), "a; b; c; d");
  EXPECT_EQ(JoinDisagreements(lines, 2), "a; b; ... and 2 more");
}

}  // namespace
}  // namespace receipt_parity

#include "metrics/by_receipt_id_dedup.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// 5 receipts on 2 ranks, duplicate_pad style: 6 slots, the head ("r0")
// repeated as the pad on rank 1.
std::vector<Prediction> PaddedGather() {
  return {
      {"r3", 1, 1, 0, 0}, {"r0", 0, 0, 0, 1}, {"r4", 2, 2, 0, 2},
      {"r1", 1, 2, 1, 0}, {"r2", 3, 3, 1, 1}, {"r0", 0, 0, 1, 2},
  };
}

TEST(ByReceiptIdDedupTest, CountsEachReceiptIdOnceAndReportsDropped) {
  ByReceiptIdDedup dedup;
  absl::StatusOr<DedupResult> result = dedup.Dedup(PaddedGather());
  ASSERT_TRUE(result.ok()) << result.status();
  std::vector<std::string> ids;
  for (const Prediction& p : result->counted) ids.push_back(p.receipt_id);
  EXPECT_EQ(ids, (std::vector<std::string>{"r0", "r1", "r2", "r3", "r4"}));
  EXPECT_EQ(result->duplicates_dropped, 1);
  // The kept copy of r0 is the first in (rank, slot) order.
  EXPECT_EQ(result->counted[0].rank, 0);
  EXPECT_EQ(result->counted[0].slot, 1);
}

TEST(ByReceiptIdDedupTest, DropsEveryExtraCopy) {
  std::vector<Prediction> gathered = {{"x", 1, 1, 0, 0},
                                      {"x", 1, 1, 1, 0},
                                      {"x", 1, 1, 2, 0},
                                      {"y", 0, 0, 0, 1}};
  absl::StatusOr<DedupResult> result = ByReceiptIdDedup().Dedup(gathered);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->counted.size(), 2u);
  EXPECT_EQ(result->duplicates_dropped, 2);
}

TEST(ByReceiptIdDedupTest, DisagreeingDuplicatesNameTheIdRanksAndSlots) {
  std::vector<Prediction> gathered = PaddedGather();
  gathered.back().predicted = 2;  // rank 1 slot 2 saw "r0" as class 2
  absl::StatusOr<DedupResult> result = ByReceiptIdDedup().Dedup(gathered);
  ASSERT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(result.status().message(),
              AllOf(HasSubstr("by_receipt_id"), HasSubstr("receipt 'r0'"),
                    HasSubstr("rank 0 slot 1 (predicted 0, label 0)"),
                    HasSubstr("rank 1 slot 2 (predicted 2, label 0)"),
                    Not(HasSubstr("'r1'"))));
}

TEST(ByReceiptIdDedupTest, DisagreeingLabelsAreAnErrorToo) {
  std::vector<Prediction> gathered = PaddedGather();
  gathered.back().label = 3;
  gathered.push_back({"r4", 2, 1, 1, 7});  // a second disagreeing id
  absl::StatusOr<DedupResult> result = ByReceiptIdDedup().Dedup(gathered);
  ASSERT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(result.status().message(),
              AllOf(HasSubstr("2 receipt id(s)"), HasSubstr("receipt 'r0'"),
                    HasSubstr("rank 1 slot 2 (predicted 0, label 3)"),
                    HasSubstr("receipt 'r4'"),
                    HasSubstr("rank 1 slot 7 (predicted 2, label 1)")));
}

TEST(ByReceiptIdDedupTest, NothingGatheredCountsNothing) {
  absl::StatusOr<DedupResult> result = ByReceiptIdDedup().Dedup({});
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->counted.empty());
  EXPECT_EQ(result->duplicates_dropped, 0);
}

}  // namespace
}  // namespace receipt_parity

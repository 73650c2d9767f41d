#include "metrics/none_dedup.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

TEST(NoneDedupTest, CountsEveryPredictionSoPaddedDuplicatesInflateSupport) {
  // 3 receipts on 2 ranks, "r0" (class 1) repeated as the pad, and even a
  // disagreeing copy: none counts them all and never fails.
  std::vector<Prediction> gathered = {{"r2", 0, 0, 1, 0},
                                      {"r0", 1, 1, 0, 0},
                                      {"r1", 0, 0, 0, 1},
                                      {"r0", 0, 1, 1, 1}};
  absl::StatusOr<DedupResult> result = NoneDedup().Dedup(gathered);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->duplicates_dropped, 0);
  ASSERT_EQ(result->counted.size(), 4u);
  int support_of_class_1 = 0;
  for (const Prediction& p : result->counted) {
    if (p.label == 1) ++support_of_class_1;
  }
  EXPECT_EQ(support_of_class_1, 2);  // one receipt, counted twice

  // Deterministic order: receipt id, then rank, then slot.
  std::vector<std::string> order;
  for (const Prediction& p : result->counted) {
    order.push_back(absl::StrCat(p.receipt_id, "@", p.rank, ":", p.slot));
  }
  EXPECT_EQ(order,
            (std::vector<std::string>{"r0@0:0", "r0@1:1", "r1@0:1", "r2@1:0"}));
}

}  // namespace
}  // namespace receipt_parity

#include "data/label_map.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(LabelMapTest, NamesAreFixedAndOrdered) {
  EXPECT_THAT(LabelNames(), ElementsAre("ok", "blurred", "faded", "cropped"));
  EXPECT_EQ(static_cast<int>(LabelNames().size()), kNumLabels);
  EXPECT_EQ(LabelNames()[kRareLabel], "cropped");
}

TEST(LabelMapTest, LabelIdRoundTrips) {
  for (int id = 0; id < kNumLabels; ++id) {
    absl::StatusOr<int> got = LabelId(LabelNames()[id]);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, id);
  }
}

TEST(LabelMapTest, UnknownNameListsValidNames) {
  for (const char* bad : {"OK", "torn", "", " ok"}) {
    absl::StatusOr<int> got = LabelId(bad);
    ASSERT_FALSE(got.ok()) << bad;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(got.status().message(),
                HasSubstr("ok, blurred, faded, cropped"));
  }
}

}  // namespace
}  // namespace receipt_parity

#include "data/example_source.h"

#include <vector>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

// Five examples whose pixels, labels and keys say their index.
ExampleTensors Five() {
  ExampleTensors all;
  all.images = at::arange(5 * 4, at::kFloat).reshape({5, 1, 2, 2});
  all.labels = at::arange(5, at::kLong);
  all.keys = at::arange(5, at::kLong) * 10;
  return all;
}

TEST(InMemoryExamplesTest, SelectsTheSlotsRowsInSlotOrder) {
  const InMemoryExamples source(Five());
  EXPECT_EQ(source.size(), 5);
  std::vector<Slot> slots(3);
  slots[0].dataset_index = 4;
  slots[1].dataset_index = 0;
  slots[2].dataset_index = 4;
  slots[2].valid = false;  // a masked slot is still a row
  absl::StatusOr<ExampleTensors> selected = source.Select(slots);
  ASSERT_TRUE(selected.ok()) << selected.status();
  const ExampleTensors expected = SelectSlots(Five(), slots);
  EXPECT_TRUE(at::equal(selected->images, expected.images));
  EXPECT_TRUE(at::equal(selected->labels, at::tensor(std::vector<int64_t>{4, 0, 4}, at::kLong)));
  EXPECT_EQ(selected->keys[1].item<int64_t>(), 0);
  EXPECT_EQ(selected->keys[2].item<int64_t>(), 40);
}

TEST(InMemoryExamplesTest, AnIndexThatIsNoExampleIsRefused) {
  const InMemoryExamples source(Five());
  std::vector<Slot> slots(2);
  slots[1].dataset_index = 5;
  absl::StatusOr<ExampleTensors> selected = source.Select(slots);
  EXPECT_EQ(selected.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(selected.status().message(),
              ::testing::HasSubstr("slot 1 names dataset index 5, not one of the 5 examples"));
  EXPECT_EQ(InMemoryExamples().size(), 0);
}

TEST(InMemoryExamplesTest, SharesTheTensorsItWasGiven) {
  ExampleTensors all = Five();
  const InMemoryExamples source(all);
  all.images[2].fill_(-1);
  std::vector<Slot> slots(1);
  slots[0].dataset_index = 2;
  absl::StatusOr<ExampleTensors> selected = source.Select(slots);
  ASSERT_TRUE(selected.ok());
  EXPECT_EQ(selected->images.min().item<float>(), -1);
  EXPECT_TRUE(InMemoryExamples(Five()).MoveTo(c10::Device(c10::kCPU)).ok());
}

}  // namespace
}  // namespace receipt_parity

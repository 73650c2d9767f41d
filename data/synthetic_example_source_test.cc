#include "data/synthetic_example_source.h"

#include <algorithm>
#include <list>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "absl/strings/numbers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "data/receipt_dataset.h"
#include "data/receipt_tensors.h"

namespace receipt_parity {
namespace {

DataConfig Config() {
  DataConfig config;
  config.mutable_synthetic()->set_num_identities(60);
  config.mutable_synthetic()->set_seed(11);
  config.mutable_synthetic()->set_rare_class_fraction(0.1);
  config.set_views_per_identity(3);  // views 1 and 2 are augmented
  config.set_validation_fraction(0.2);
  config.set_split_seed(5);
  config.set_augmentation_seed(17);
  config.set_image_size(16);
  return config;
}

// The index of LoadReceipts' training examples, read off them.
std::vector<SyntheticExampleEntry> IndexOf(const ReceiptSplit& split) {
  std::vector<SyntheticExampleEntry> index;
  for (const ReceiptExample& e : split.train) {
    int identity = -1;
    EXPECT_TRUE(absl::SimpleAtoi(e.receipt_id.substr(5), &identity)) << e.receipt_id;
    index.push_back({identity, static_cast<int16_t>(e.view), static_cast<int8_t>(e.label)});
  }
  return index;
}

std::vector<Slot> SlotsOf(const std::vector<int64_t>& indices) {
  std::vector<Slot> slots(indices.size());
  for (size_t i = 0; i < indices.size(); ++i) slots[i].dataset_index = indices[i];
  return slots;
}

TEST(SyntheticExampleSourceTest, RendersWhatLoadReceiptsHoldsBitwise) {
  absl::StatusOr<ReceiptSplit> split = LoadReceipts(Config());
  ASSERT_TRUE(split.ok()) << split.status();
  const InMemoryExamples in_memory(ToTensors(split->train, split->image_size));
  for (int64_t cache : {0, 4, 1000}) {
    SCOPED_TRACE(cache);
    const SyntheticExampleSource rendered(IndexOf(*split), {11, 16, 17}, cache);
    ASSERT_EQ(rendered.size(), in_memory.size());
    std::vector<int64_t> all;
    for (int64_t i = rendered.size() - 1; i >= 0; i -= 3) all.push_back(i);  // views 0, 1, 2
    all.push_back(all.front());
    for (const std::vector<int64_t>& indices : {all, std::vector<int64_t>{0, 1, 2, 0}}) {
      absl::StatusOr<ExampleTensors> want = in_memory.Select(SlotsOf(indices));
      absl::StatusOr<ExampleTensors> got = rendered.Select(SlotsOf(indices));
      ASSERT_TRUE(want.ok() && got.ok()) << got.status();
      EXPECT_TRUE(at::equal(got->images, want->images));
      EXPECT_TRUE(at::equal(got->labels, want->labels));
      EXPECT_TRUE(at::equal(got->keys, want->keys));
    }
  }
}

// The slab's recency links against a plain list's LRU, over a long
// pseudo-random run of selections, and the pixels against no cache.
TEST(SyntheticExampleSourceTest, TheCacheIsAnLruOverALongRun) {
  absl::StatusOr<ReceiptSplit> split = LoadReceipts(Config());
  ASSERT_TRUE(split.ok()) << split.status();
  for (int64_t capacity : {1, 3, 17}) {
    SCOPED_TRACE(capacity);
    const SyntheticExampleSource cached(IndexOf(*split), {11, 16, 17}, capacity);
    const SyntheticExampleSource uncached(IndexOf(*split), {11, 16, 17}, 0);
    std::list<int64_t> lru;  // most recent first
    int64_t hits = 0;
    uint64_t state = 7;
    for (int step = 0; step < 2000; ++step) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      // Mostly a few hot examples, sometimes any.
      const int64_t i = (state >> 33) % (step % 3 == 0 ? cached.size() : 24);
      auto it = std::find(lru.begin(), lru.end(), i);
      if (it != lru.end()) {
        ++hits;
        lru.erase(it);
      } else if (static_cast<int64_t>(lru.size()) == capacity) {
        lru.pop_back();
      }
      lru.push_front(i);
      absl::StatusOr<ExampleTensors> got = cached.Select(SlotsOf({i}));
      absl::StatusOr<ExampleTensors> want = uncached.Select(SlotsOf({i}));
      ASSERT_TRUE(got.ok() && want.ok());
      ASSERT_TRUE(at::equal(got->images, want->images)) << "step " << step;
    }
    EXPECT_EQ(cached.cache_hits(), hits);
    EXPECT_EQ(cached.rendered(), 2000 - hits);
    EXPECT_GT(hits, 0);
  }
}

TEST(SyntheticExampleSourceTest, TheCacheKeepsTheLastSelectedExamples) {
  absl::StatusOr<ReceiptSplit> split = LoadReceipts(Config());
  ASSERT_TRUE(split.ok()) << split.status();
  const SyntheticExampleSource source(IndexOf(*split), {11, 16, 17}, 2);
  ASSERT_TRUE(source.Select(SlotsOf({0, 1})).ok());
  EXPECT_EQ(source.rendered(), 2);
  ASSERT_TRUE(source.Select(SlotsOf({1, 0})).ok());  // both cached
  EXPECT_EQ(source.cache_hits(), 2);
  ASSERT_TRUE(source.Select(SlotsOf({5})).ok());  // evicts 1, the least recent
  ASSERT_TRUE(source.Select(SlotsOf({0})).ok());
  EXPECT_EQ(source.cache_hits(), 3);
  ASSERT_TRUE(source.Select(SlotsOf({1})).ok());
  EXPECT_EQ(source.rendered(), 4);
}

TEST(SyntheticExampleSourceTest, AnIndexThatIsNoExampleIsRefused) {
  const SyntheticExampleSource source({{3, 0, 1}}, {11, 16, 17}, 1);
  absl::StatusOr<ExampleTensors> selected = source.Select(SlotsOf({0, 1}));
  EXPECT_EQ(selected.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(selected.status().message(),
              ::testing::HasSubstr("slot 1 names dataset index 1, not one of the 1 examples"));
}

}  // namespace
}  // namespace receipt_parity

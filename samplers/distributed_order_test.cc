#include "samplers/distributed_order.h"

#include <map>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "samplers/permutation.h"

namespace receipt_parity {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

OrderRequest Request(int64_t n, int world_size, uint64_t seed = 11,
                     int64_t epoch = 0) {
  OrderRequest request;
  request.num_examples = n;
  request.world_size = world_size;
  request.seed = seed;
  request.epoch = epoch;
  return request;
}

GlobalOrder Order(const OrderRequest& request, TailHandling tail,
                  bool shuffle = true) {
  absl::StatusOr<GlobalOrder> order =
      DistributedSamplerOrder(request, shuffle, tail);
  EXPECT_TRUE(order.ok()) << order.status();
  return order.ok() ? *order : GlobalOrder();
}

std::vector<int64_t> Permutation(const OrderRequest& request,
                                 bool shuffle = true) {
  return *EpochPermutation(request.num_examples, request.seed, request.epoch,
                           shuffle);
}

// The padded order DistributedSampler(drop_last=False) builds:
// permutation + its head repeated, total = ceil(n / W) * W.
void ExpectPaddedOrder(const OrderRequest& request, const GlobalOrder& order,
                       bool pads_valid, bool shuffle = true) {
  const std::vector<int64_t> permutation = Permutation(request, shuffle);
  const int64_t n = request.num_examples;
  const int64_t w = request.world_size;
  ASSERT_EQ(static_cast<int64_t>(order.slots.size()), (n + w - 1) / w * w);
  for (size_t p = 0; p < order.slots.size(); ++p) {
    EXPECT_EQ(order.slots[p].dataset_index, permutation[p % n]) << p;
    EXPECT_EQ(order.slots[p].valid, static_cast<int64_t>(p) < n || pads_valid)
        << p;
  }
  EXPECT_THAT(order.dropped, IsEmpty());
}

TEST(DistributedSamplerOrderTest, DuplicatePadRepeatsTheHead) {
  const OrderRequest request = Request(47, 3);
  GlobalOrder order = Order(request, TailHandling::kDuplicatePad);
  EXPECT_EQ(order.slots.size(), 48u);
  ExpectPaddedOrder(request, order, /*pads_valid=*/true);
}

TEST(DistributedSamplerOrderTest, MaskedTailMasksExactlyThePads) {
  const OrderRequest request = Request(47, 3);
  ExpectPaddedOrder(request, Order(request, TailHandling::kMaskedTail),
                    /*pads_valid=*/false);
}

TEST(DistributedSamplerOrderTest, FewerExamplesThanRanksRepeatTheWholeList) {
  for (TailHandling tail :
       {TailHandling::kDuplicatePad, TailHandling::kMaskedTail}) {
    const OrderRequest request = Request(2, 5);
    GlobalOrder order = Order(request, tail);
    ExpectPaddedOrder(request, order, tail == TailHandling::kDuplicatePad);
    std::map<int64_t, int> count;
    for (const Slot& slot : order.slots) ++count[slot.dataset_index];
    EXPECT_EQ(count.size(), 2u);
  }
}

TEST(DistributedSamplerOrderTest, DropTailCutsToAMultipleAndNamesTheRest) {
  const OrderRequest request = Request(47, 3);
  const std::vector<int64_t> permutation = Permutation(request);
  GlobalOrder order = Order(request, TailHandling::kDropTail);
  ASSERT_EQ(order.slots.size(), 45u);
  for (size_t p = 0; p < 45; ++p) {
    EXPECT_EQ(order.slots[p].dataset_index, permutation[p]);
    EXPECT_TRUE(order.slots[p].valid);
  }
  EXPECT_THAT(order.dropped,
              ElementsAreArray(permutation.begin() + 45, permutation.end()));
}

TEST(DistributedSamplerOrderTest, DropTailWithFewerExamplesThanRanks) {
  const OrderRequest request = Request(2, 3);
  GlobalOrder order = Order(request, TailHandling::kDropTail);
  EXPECT_THAT(order.slots, IsEmpty());
  EXPECT_THAT(order.dropped, ElementsAreArray(Permutation(request)));
}

TEST(DistributedSamplerOrderTest, DivisibleSizesNeitherPadNorDrop) {
  for (TailHandling tail :
       {TailHandling::kDuplicatePad, TailHandling::kMaskedTail,
        TailHandling::kDropTail}) {
    GlobalOrder order = Order(Request(48, 3), tail);
    EXPECT_EQ(order.slots.size(), 48u);
    EXPECT_THAT(order.dropped, IsEmpty());
    for (const Slot& slot : order.slots) EXPECT_TRUE(slot.valid);
  }
}

TEST(DistributedSamplerOrderTest, EmptyDatasetGivesAnEmptyOrder) {
  for (TailHandling tail :
       {TailHandling::kDuplicatePad, TailHandling::kMaskedTail,
        TailHandling::kDropTail}) {
    GlobalOrder order = Order(Request(0, 3), tail);
    EXPECT_THAT(order.slots, IsEmpty());
    EXPECT_THAT(order.dropped, IsEmpty());
  }
}

TEST(DistributedSamplerOrderTest, WithoutShuffleTheOrderIsTheRange) {
  const OrderRequest request = Request(7, 3, 11, 5);
  GlobalOrder order =
      Order(request, TailHandling::kDuplicatePad, /*shuffle=*/false);
  ExpectPaddedOrder(request, order, /*pads_valid=*/true, /*shuffle=*/false);
  EXPECT_EQ(order.slots[7].dataset_index, 0);
  EXPECT_EQ(order.slots[8].dataset_index, 1);
}

TEST(DistributedSamplerOrderTest, EachEpochIsSeededSeedPlusEpoch) {
  const GlobalOrder epoch1 =
      Order(Request(47, 3, 11, 1), TailHandling::kDuplicatePad);
  const GlobalOrder epoch0 =
      Order(Request(47, 3, 11, 0), TailHandling::kDuplicatePad);
  const GlobalOrder seed12 =
      Order(Request(47, 3, 12, 0), TailHandling::kDuplicatePad);
  EXPECT_EQ(epoch1.slots, seed12.slots);
  EXPECT_NE(epoch1.slots, epoch0.slots);
}

TEST(DistributedSamplerOrderTest, RejectsBadRequests) {
  absl::StatusOr<GlobalOrder> order =
      DistributedSamplerOrder(Request(4, 0), true, TailHandling::kDuplicatePad);
  EXPECT_EQ(order.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(order.status().message(), HasSubstr("world_size is 0"));
  order =
      DistributedSamplerOrder(Request(-3, 2), true, TailHandling::kMaskedTail);
  EXPECT_THAT(order.status().message(), HasSubstr("num_examples is -3"));
  order = DistributedSamplerOrder(Request(4, 2, 0, -1), true,
                                  TailHandling::kDropTail);
  EXPECT_THAT(order.status().message(), HasSubstr("epoch is -1"));
}

}  // namespace
}  // namespace receipt_parity

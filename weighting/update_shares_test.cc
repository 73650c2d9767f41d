#include "weighting/update_shares.h"

#include <vector>

#include "gtest/gtest.h"
#include "samplers/masked_tail.h"
#include "weighting/global_count_weighting.h"

namespace receipt_parity {
namespace {

EpochPlan Plan(int n, int world, int local_batch) {
  auto policy = MaskedTailFactory().Create(MaskedTailOptions());
  EXPECT_TRUE(policy.ok());
  OrderRequest request;
  request.num_examples = n;
  request.world_size = world;
  request.seed = 3;
  return *BuildEpochPlan(**policy, request, std::vector<int>(world, local_batch));
}

struct Inputs {
  GlobalCountWeighting weighting;
  std::vector<int> labels;
  std::vector<int64_t> class_counts = {2, 1, 1, 1};
  WeightingInputs Of(int micro_batches) {
    return WeightingInputs{&weighting, &labels, &class_counts, micro_batches};
  }
};

TEST(UpdateSharesTest, ComposeUpdateCarriesLabelsAndMasks) {
  EpochPlan plan = Plan(5, 2, 4);  // 6 slots of the last update, 1 masked
  std::vector<int> labels = {0, 1, 2, 3, 0};
  UpdateComposition c = ComposeUpdate(plan, 0, labels, {2, 1, 1, 1});
  ASSERT_EQ(c.by_rank.size(), 2u);
  int valid = 0;
  for (const auto& rank : c.by_rank) {
    for (const WeightedSlot& s : rank) valid += s.valid ? 1 : 0;
  }
  EXPECT_EQ(valid, 5);
  EXPECT_EQ(c.class_counts.size(), 4u);
}

// A rank's micro-batches cover its slots of the update in order, each with
// the weighting's weights of its own slots.
TEST(UpdateSharesTest, RankShareCutsTheRanksSlotsIntoMicroBatches) {
  EpochPlan plan = Plan(13, 2, 4);  // 8 slots an update; the second 5 valid
  Inputs in;
  in.labels.assign(13, 1);
  for (int rank = 0; rank < 2; ++rank) {
    const std::vector<MicroBatchShare> share = RankShare(plan, 1, rank, in.Of(2));
    ASSERT_EQ(share.size(), 2u);
    const std::vector<Slot> slots = plan.UpdateSlots(rank, 1).ToVector();
    std::vector<Slot> joined;
    std::vector<double> weights;
    for (const MicroBatchShare& m : share) {
      EXPECT_EQ(m.begin, static_cast<int64_t>(joined.size()));
      ASSERT_EQ(m.slots.size(), m.weights.size());
      joined.insert(joined.end(), m.slots.begin(), m.slots.end());
      weights.insert(weights.end(), m.weights.begin(), m.weights.end());
    }
    EXPECT_EQ(joined, slots);
    const std::vector<double> expected =
        in.weighting.Weights(ComposeUpdate(plan, 1, in.labels, in.class_counts, 2), rank);
    EXPECT_EQ(weights, expected);
  }
  EXPECT_EQ(UpdateShares(plan, 1, in.Of(2))[1][1].slots, RankShare(plan, 1, 1, in.Of(2))[1].slots);
}

// The chunks cover the update's global order position by position, each
// computed by the rank whose share of the global batch holds it.
TEST(UpdateSharesTest, OrderedChunksFollowTheGlobalOrder) {
  EpochPlan plan = Plan(13, 2, 4);
  Inputs in;
  in.labels.assign(13, 0);
  EXPECT_EQ(ChunkRows(plan, 2), 4);
  for (int64_t update = 0; update < plan.num_updates(); ++update) {
    const std::vector<ChunkShare> chunks = OrderedChunks(plan, update, 2, in.Of(1));
    const std::vector<DealtPosition> order = plan.UpdateOrder(update);
    int64_t next = 0;
    for (const ChunkShare& chunk : chunks) {
      EXPECT_EQ(chunk.row, next / 2);
      EXPECT_EQ(chunk.rank, chunk.positions.front() < 4 ? 0 : 1);
      for (size_t i = 0; i < chunk.positions.size(); ++i) {
        EXPECT_EQ(chunk.positions[i], next);
        const DealtPosition& at = order[next];
        EXPECT_EQ(chunk.slots[i], plan.UpdateSlots(at.rank, update)[at.index]);
        ++next;
      }
    }
    EXPECT_EQ(next, static_cast<int64_t>(order.size()));
    // Each rank's chunks lie inside its row bounds, the bounds cover every
    // row, and the rows past the update's last chunk are the last rank's.
    const std::vector<int64_t> bounds = ChunkRowBounds(plan, 2);
    EXPECT_EQ(bounds, (std::vector<int64_t>{0, 2, 4}));
    for (const ChunkShare& chunk : chunks) {
      EXPECT_LE(bounds[chunk.rank], chunk.row);
      EXPECT_LT(chunk.row, bounds[chunk.rank + 1]);
    }
  }
}

}  // namespace
}  // namespace receipt_parity

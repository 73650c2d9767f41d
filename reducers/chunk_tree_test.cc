// The ordered mode's reduction tree: its shape, each rank's subtrees, and
// the total from any contiguous split bit for bit the whole tree's.
#include "reducers/chunk_tree.h"

#include <cmath>
#include <vector>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Rows whose float sums depend on their order: magnitudes from 1e-4 to 1e4.
at::Tensor Rows(int64_t rows, int64_t n, uint64_t seed) {
  at::manual_seed(seed);
  at::Tensor scale = at::pow(10.0, at::randint(-4, 5, {rows, 1}).to(at::kFloat));
  return at::randn({rows, n}) * scale;
}

// A float tensor's bits, so that -0 and +0 differ.
at::Tensor Bits(const at::Tensor& t) { return t.contiguous().view(at::kInt); }

// Every way to cut [0, rows) into `parts` contiguous ranges, none empty.
void Splits(int64_t rows, int parts, std::vector<int64_t>* cut,
            std::vector<std::vector<int64_t>>* out) {
  const int64_t from = cut->empty() ? 0 : cut->back();
  if (static_cast<int>(cut->size()) == parts - 1) {
    std::vector<int64_t> bounds = {0};
    bounds.insert(bounds.end(), cut->begin(), cut->end());
    bounds.push_back(rows);
    out->push_back(bounds);
    return;
  }
  for (int64_t next = from + 1; next < rows; ++next) {
    cut->push_back(next);
    Splits(rows, parts, cut, out);
    cut->pop_back();
  }
}

TEST(ChunkTreeTest, ALeftSubtreeIsTheLargestPowerOfTwoBelowItsSize) {
  EXPECT_EQ(ChunkTreeSplit({0, 2}), 1);
  EXPECT_EQ(ChunkTreeSplit({0, 3}), 2);
  EXPECT_EQ(ChunkTreeSplit({0, 4}), 2);
  EXPECT_EQ(ChunkTreeSplit({0, 5}), 4);
  EXPECT_EQ(ChunkTreeSplit({8, 12}), 10);
  EXPECT_EQ(ChunkTreeSplit({0, 12}), 8);
}

TEST(ChunkTreeTest, ARankHoldsItsRangesMaximalSubtrees) {
  EXPECT_THAT(HeldSubtrees(8, 2, 4), ElementsAre(ChunkTreeNode{2, 4}));
  EXPECT_THAT(HeldSubtrees(9, 0, 3), ElementsAre(ChunkTreeNode{0, 2}, ChunkTreeNode{2, 3}));
  EXPECT_THAT(HeldSubtrees(8, 1, 7), ElementsAre(ChunkTreeNode{1, 2}, ChunkTreeNode{2, 4},
                                                 ChunkTreeNode{4, 6}, ChunkTreeNode{6, 7}));
  EXPECT_TRUE(HeldSubtrees(8, 3, 3).empty());
  EXPECT_THAT(HeldSubtrees(1, 0, 1), ElementsAre(ChunkTreeNode{0, 1}));
}

// The ordered mode's aligned splits (each rank an equal share of a chunk
// count that is the world size times a power of two, or the study's 4
// chunks on 2, 3-way 6 and 12) send one sum a rank; any split O(log K).
TEST(ChunkTreeTest, AnAlignedSplitHoldsOneSubtreeARankAndAnyOtherFew) {
  for (const auto& [rows, world] : std::vector<std::pair<int64_t, int>>{
           {4, 2}, {8, 4}, {16, 4}, {6, 3}, {12, 3}, {4, 4}, {32, 2}}) {
    SCOPED_TRACE(rows);
    const int64_t share = rows / world;
    for (int r = 0; r < world; ++r) {
      EXPECT_EQ(HeldSubtrees(rows, r * share, (r + 1) * share).size(), 1u) << "rank " << r;
    }
  }
  for (int64_t rows = 1; rows <= 64; ++rows) {
    const double bound = 2 * std::ceil(std::log2(static_cast<double>(rows))) + 1;
    for (int64_t first = 0; first < rows; ++first) {
      for (int64_t last = first + 1; last <= rows; ++last) {
        EXPECT_LE(HeldSubtrees(rows, first, last).size(), bound)
            << rows << " rows, [" << first << ", " << last << ")";
      }
    }
  }
}

// The property the ordered mode's bits rest on: every split of every row
// count into 1 to 4 contiguous ranks gives the whole tree's total, bit for
// bit, from the ranks' subtree sums.
TEST(ChunkTreeTest, EverySplitGivesTheWholeTreesBits) {
  for (int64_t rows = 1; rows <= 13; ++rows) {
    const at::Tensor chunks = Rows(rows, 33, 100 + rows);
    const at::Tensor whole = SumSubtree(chunks, 0, {0, rows});
    for (int world = 1; world <= 4 && world <= rows; ++world) {
      std::vector<int64_t> cut;
      std::vector<std::vector<int64_t>> splits;
      Splits(rows, world, &cut, &splits);
      for (const std::vector<int64_t>& bounds : splits) {
        std::vector<ChunkTreeNode> roots;
        std::vector<at::Tensor> sums;
        for (int r = 0; r < world; ++r) {
          // A rank sees only its own rows, from its first.
          const at::Tensor own = chunks.slice(0, bounds[r], bounds[r + 1]).clone();
          for (const ChunkTreeNode& node : HeldSubtrees(rows, bounds[r], bounds[r + 1])) {
            roots.push_back(node);
            sums.push_back(SumSubtree(own, bounds[r], node));
            // Written into a tensor given: the same bits.
            at::Tensor into = at::full({33}, 7.0f);
            SumSubtreeInto(own, bounds[r], node, into);
            ASSERT_TRUE(at::equal(Bits(into), Bits(sums.back())));
          }
        }
        absl::StatusOr<at::Tensor> total = SumFromRoots(rows, roots, sums);
        ASSERT_TRUE(total.ok()) << total.status();
        ASSERT_TRUE(at::equal(Bits(*total), Bits(whole))) << rows << " rows on " << world << " ranks";
        at::Tensor into = at::full({33}, 7.0f);
        ASSERT_TRUE(SumFromRootsInto(rows, roots, sums, into).ok());
        ASSERT_TRUE(at::equal(Bits(into), Bits(whole))) << rows << " rows on " << world << " ranks";
      }
    }
  }
}

// Order matters for these rows: a sum in another order than the tree's
// (row by row) differs in some bit, so the test above would see one.
TEST(ChunkTreeTest, TheRowsChosenShowAnotherOrderOfAdditions) {
  const at::Tensor chunks = Rows(13, 33, 113);
  at::Tensor in_row_order = chunks[0].clone();
  for (int64_t k = 1; k < 13; ++k) in_row_order.add_(chunks[k]);
  EXPECT_FALSE(at::equal(Bits(in_row_order), Bits(SumSubtree(chunks, 0, {0, 13}))));
}

TEST(ChunkTreeTest, RootsThatAreNotAnExactCoverAreRefused) {
  const at::Tensor chunks = Rows(4, 3, 7);
  auto sum = [&](ChunkTreeNode node) { return SumSubtree(chunks, 0, node); };
  struct Case {
    std::vector<ChunkTreeNode> roots;
  };
  const Case refused[] = {
      {{{0, 2}}},                          // rows 2 and 3 in no root
      {{{0, 2}, {1, 2}, {2, 4}}},          // row 1 twice
      {{{0, 3}, {3, 4}}},                  // [0, 3) is no node of the tree
  };
  for (const Case& c : refused) {
    std::vector<at::Tensor> sums;
    for (const ChunkTreeNode& node : c.roots) {
      sums.push_back(node.hi - node.lo == 3 ? chunks[0] : sum(node));
    }
    absl::StatusOr<at::Tensor> total = SumFromRoots(4, c.roots, sums);
    EXPECT_EQ(total.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(total.status().message()), HasSubstr("covering the 4 rows"));
    at::Tensor into = at::zeros({3});
    EXPECT_EQ(SumFromRootsInto(4, c.roots, sums, into).code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(at::equal(into, at::zeros({3})));
  }
  absl::StatusOr<at::Tensor> one = SumFromRoots(4, {{0, 4}}, {sum({0, 4})});
  ASSERT_TRUE(one.ok());
  EXPECT_TRUE(at::equal(Bits(*one), Bits(sum({0, 4}))));
}

}  // namespace
}  // namespace receipt_parity

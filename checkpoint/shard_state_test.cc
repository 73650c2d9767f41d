#include "checkpoint/shard_state.h"

#include <ATen/ATen.h>

#include <cstring>
#include <limits>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

bool BitwiseEqual(const at::Tensor& a, const at::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || !a.sizes().equals(b.sizes())) {
    return false;
  }
  at::Tensor ca = a.contiguous();
  at::Tensor cb = b.contiguous();
  return std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0;
}

ShardState SampleState() {
  at::manual_seed(7);
  ShardState state;
  at::Tensor weight = at::randn({4, 3});
  weight[0][0] = std::numeric_limits<float>::quiet_NaN();
  weight[0][1] = -0.0f;
  weight.set_requires_grad(true);  // a parameter, saved without its graph
  state.owned_tensors["fc1.weight"] = weight;
  state.owned_tensors["sgd.momentum/fc1.bias"] = at::randn({3}, at::kDouble);
  state.owned_tensors["step"] = at::arange(5, at::kLong);
  state.rank_tensors["rng"] =
      at::randint(0, 256, {5056}, at::TensorOptions().dtype(at::kByte));
  state.scalars["sampler_position"] = 17;
  state.scalars["epoch"] = 3;
  state.scalars["negative"] = -(int64_t{1} << 40);
  return state;
}

TEST(ShardStateTest, RoundTripIsBitwiseExact) {
  const ShardState original = SampleState();
  absl::StatusOr<std::string> bytes = SerializeShardState(original);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<ShardState> back =
      DeserializeShardState(*bytes, "shard-rank-00000.pt");
  ASSERT_TRUE(back.ok()) << back.status();
  using TensorMap = std::map<std::string, at::Tensor>;
  for (TensorMap ShardState::*maps :
       {&ShardState::owned_tensors, &ShardState::rank_tensors}) {
    const auto& expected = original.*maps;
    const auto& actual = (*back).*maps;
    ASSERT_EQ(actual.size(), expected.size());
    for (const auto& [name, tensor] : expected) {
      ASSERT_EQ(actual.count(name), 1u) << name;
      EXPECT_TRUE(BitwiseEqual(actual.at(name), tensor)) << name;
    }
  }
  EXPECT_EQ(back->scalars, original.scalars);
}

TEST(ShardStateTest, TheReplicaHashSeesEveryBitOfTheSharedStateAndNotTheRanksOwn) {
  ShardState a;
  a.owned_tensors["model/w"] = at::tensor({1.0f, 2.0f});
  a.scalars["total_updates"] = 3;
  a.rank_tensors["rng"] = at::tensor({7});
  ShardState b = a;
  b.owned_tensors["model/w"] = a.owned_tensors["model/w"].clone();
  b.rank_tensors["rng"] = at::tensor({8});
  EXPECT_EQ(ReplicaHash(a), ReplicaHash(b));
  b.owned_tensors["model/w"].view(at::kInt)[1].bitwise_xor_(1);  // the lowest mantissa bit
  EXPECT_NE(ReplicaHash(a), ReplicaHash(b));
  ShardState c = a;
  c.scalars["total_updates"] = 4;
  EXPECT_NE(ReplicaHash(a), ReplicaHash(c));
  ShardState d = a;
  d.owned_tensors["model/w"] = a.owned_tensors["model/w"].to(at::kDouble);
  EXPECT_NE(ReplicaHash(a), ReplicaHash(d));
}

TEST(ShardStateTest, TruncatedOrForeignBytesAreAStatusNamingTheShard) {
  const std::string bytes = *SerializeShardState(SampleState());
  for (size_t size :
       {size_t{0}, size_t{10}, bytes.size() / 2, bytes.size() - 1}) {
    absl::StatusOr<ShardState> back = DeserializeShardState(
        absl::string_view(bytes).substr(0, size), "shard-rank-00001.pt");
    EXPECT_EQ(back.status().code(), absl::StatusCode::kDataLoss) << size;
    EXPECT_THAT(back.status().message(), HasSubstr("shard-rank-00001.pt"));
  }
  EXPECT_FALSE(DeserializeShardState(std::string(4096, 'x'), "junk").ok());
}

TEST(ShardStateTest, OwnedNamesBySizeBalancesBytes) {
  const std::vector<std::pair<std::string, int64_t>> sized = {
      {"a", 100}, {"b", 1}, {"c", 1}, {"d", 1}, {"e", 98}};
  // a -> 0 (100), e -> 1 (98), b -> 1 (99), c -> 1 (100), d -> 0 (tie).
  EXPECT_EQ(OwnedNamesBySize(sized, 2, 0), (std::vector<std::string>{"a", "d"}));
  EXPECT_EQ(OwnedNamesBySize(sized, 2, 1),
            (std::vector<std::string>{"b", "c", "e"}));
  // Three ranks: every name once, nobody above average + largest.
  std::set<std::string> seen;
  for (int rank = 0; rank < 3; ++rank) {
    int64_t bytes = 0;
    for (const std::string& name : OwnedNamesBySize(sized, 3, rank)) {
      EXPECT_TRUE(seen.insert(name).second) << name;
      for (const auto& [n, size] : sized) bytes += n == name ? size : 0;
    }
    EXPECT_LE(bytes, 201 / 3 + 100);
  }
  EXPECT_EQ(seen.size(), sized.size());
}

TEST(ShardStateTest, OwnedNamesCoverEveryNameOnceAndBalance) {
  for (int names = 0; names <= 9; ++names) {
    std::vector<std::string> all;
    for (int i = 0; i < names; ++i) all.push_back("p" + std::to_string(i));
    for (int world = 1; world <= 4; ++world) {
      std::multiset<std::string> seen;
      size_t smallest = all.size(), largest = 0;
      for (int rank = 0; rank < world; ++rank) {
        std::vector<std::string> owned = OwnedNames(all, world, rank);
        EXPECT_EQ(owned, OwnedNames(all, world, rank));  // deterministic
        seen.insert(owned.begin(), owned.end());
        smallest = std::min(smallest, owned.size());
        largest = std::max(largest, owned.size());
      }
      EXPECT_EQ(seen, std::multiset<std::string>(all.begin(), all.end()))
          << names << " names, world " << world;
      EXPECT_LE(largest - smallest, 1u);
    }
  }
}

TEST(ShardStateTest, MergeJoinsPartsAndRejectsMissingOrDuplicated) {
  const std::vector<std::string> names = {"a", "b", "c"};
  std::vector<ShardState> shards(2);
  for (int rank = 0; rank < 2; ++rank) {
    for (const std::string& name : OwnedNames(names, 2, rank)) {
      shards[rank].owned_tensors[name] = at::full({2}, rank);
    }
  }
  absl::StatusOr<std::map<std::string, at::Tensor>> merged =
      MergeOwnedTensors(shards, names);
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(merged->size(), 3u);
  EXPECT_EQ(merged->at("b")[0].item<float>(), 1.0f);

  std::vector<ShardState> duplicated = shards;
  duplicated[1].owned_tensors["a"] = at::zeros({2});
  EXPECT_THAT(MergeOwnedTensors(duplicated, names).status().message(),
              HasSubstr("\"a\" is in the shards of rank 0 and rank 1"));

  std::vector<ShardState> missing = shards;
  missing[1].owned_tensors.erase("b");
  EXPECT_THAT(MergeOwnedTensors(missing, names).status().message(),
              HasSubstr("\"b\" is in no shard"));

  std::vector<ShardState> extra = shards;
  extra[0].owned_tensors["z"] = at::zeros({1});
  EXPECT_THAT(MergeOwnedTensors(extra, names).status().message(),
              HasSubstr("unexpected \"z\""));
}

}  // namespace
}  // namespace receipt_parity

#include "verify/replica_checksum.h"

#include <cstring>
#include <vector>

#include <ATen/ATen.h>

#include "gtest/gtest.h"
#include "verify/checksum_kernels.h"

namespace receipt_parity {
namespace {

TEST(ReplicaChecksumTest, EqualBitsGiveEqualChecksums) {
  const ReplicaChecksum checksum;
  at::manual_seed(1);
  const at::Tensor a = at::randn({300, 7});
  absl::StatusOr<uint64_t> x = checksum.Of(a);
  absl::StatusOr<uint64_t> y = checksum.Of(a.clone());
  ASSERT_TRUE(x.ok() && y.ok());
  EXPECT_EQ(*x, *y);
  // A non-contiguous view of the same values reads the same.
  absl::StatusOr<uint64_t> t = checksum.Of(a.t().contiguous().t());
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, *x);
}

TEST(ReplicaChecksumTest, EveryOneBitFlipOfAnyElementChangesIt) {
  const ReplicaChecksum checksum;
  // Across a block boundary (2^16 words) too.
  at::Tensor a = at::randn({70000});
  const uint64_t before = *checksum.Of(a);
  float* data = a.data_ptr<float>();
  for (int64_t element : {int64_t{0}, int64_t{65535}, int64_t{65536}, int64_t{69999}}) {
    for (int bit = 0; bit < 32; ++bit) {
      uint32_t word;
      std::memcpy(&word, data + element, 4);
      const uint32_t flipped = word ^ (1u << bit);
      std::memcpy(data + element, &flipped, 4);
      EXPECT_NE(*checksum.Of(a), before) << "element " << element << " bit " << bit;
      std::memcpy(data + element, &word, 4);
    }
  }
  EXPECT_EQ(*checksum.Of(a), before);
}

TEST(ReplicaChecksumTest, ATensorsPlaceInTheListMatters) {
  const ReplicaChecksum checksum;
  const uint64_t a = *checksum.Of(at::ones({3}));
  const uint64_t b = *checksum.Of(at::zeros({3}) + 2);
  EXPECT_NE(ReplicaChecksum::Combine({a, b}), ReplicaChecksum::Combine({b, a}));
}

TEST(ReplicaChecksumTest, BytesThatAreNotWholeWordsCount) {
  const ReplicaChecksum checksum;
  at::Tensor bytes = at::tensor({1, 2, 3}, at::kByte);
  const uint64_t before = *checksum.Of(bytes);
  bytes[2] = 4;
  EXPECT_NE(*checksum.Of(bytes), before);
}

TEST(ReplicaChecksumTest, TheVectorAndPortableSumsAreTheSameIntegers) {
  std::vector<uint32_t> words(1037), multipliers(1037);
  uint64_t expected = 0;
  for (size_t i = 0; i < words.size(); ++i) {
    words[i] = static_cast<uint32_t>(i * 2654435761u);
    multipliers[i] = static_cast<uint32_t>(i * 40503u) | 1u;
    expected += uint64_t{words[i]} * multipliers[i];
  }
  EXPECT_EQ(ChecksumWords(words.data(), multipliers.data(), 1037), expected);
}

}  // namespace
}  // namespace receipt_parity

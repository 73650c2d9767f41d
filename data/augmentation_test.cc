#include "data/augmentation.h"

#include <cmath>
#include <cstring>

#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

constexpr int kSize = 16;

GrayPixels Capture() {
  GrayPixels pixels(kSize * kSize);
  for (int i = 0; i < kSize * kSize; ++i) {
    pixels[i] = static_cast<float>((i * 37) % 101) / 100.0f;
  }
  return pixels;
}

bool SameBytes(const GrayPixels& a, const GrayPixels& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

double Mean(const GrayPixels& pixels) {
  double sum = 0;
  for (float p : pixels) sum += p;
  return sum / pixels.size();
}

TEST(AugmentationTest, ViewZeroIsTheCaptureItself) {
  EXPECT_TRUE(
      SameBytes(AugmentView(Capture(), kSize, 1, "rcpt-000001", 0), Capture()));
}

TEST(AugmentationTest, ViewsDifferFromCaptureAndEachOther) {
  const GrayPixels capture = Capture();
  const GrayPixels v1 = AugmentView(capture, kSize, 1, "rcpt-000001", 1);
  const GrayPixels v2 = AugmentView(capture, kSize, 1, "rcpt-000001", 2);
  EXPECT_FALSE(SameBytes(v1, capture));
  EXPECT_FALSE(SameBytes(v2, capture));
  EXPECT_FALSE(SameBytes(v1, v2));
}

TEST(AugmentationTest, SeededByAugmentationSeedReceiptIdAndViewOnly) {
  const GrayPixels capture = Capture();
  const GrayPixels first = AugmentView(capture, kSize, 9, "rcpt-000004", 3);
  // Other calls in between must not matter.
  AugmentView(capture, kSize, 9, "rcpt-000005", 3);
  EXPECT_TRUE(
      SameBytes(first, AugmentView(capture, kSize, 9, "rcpt-000004", 3)));
  EXPECT_FALSE(
      SameBytes(first, AugmentView(capture, kSize, 10, "rcpt-000004", 3)));
  EXPECT_FALSE(
      SameBytes(first, AugmentView(capture, kSize, 9, "rcpt-000005", 3)));
}

TEST(AugmentationTest, JitterIsSmallAndStaysInRange) {
  const GrayPixels capture = Capture();
  for (int view = 1; view <= 20; ++view) {
    const GrayPixels v = AugmentView(capture, kSize, 2, "rcpt-000002", view);
    ASSERT_EQ(v.size(), capture.size());
    for (float p : v) {
      ASSERT_GE(p, 0.0f);
      ASSERT_LE(p, 1.0f);
    }
    EXPECT_NEAR(Mean(v), Mean(capture), 0.07) << "view " << view;
  }
}

TEST(AugmentationTest, TranslationIsBounded) {
  // A single bright pixel in the middle moves at most MaxTranslation.
  const int size = 64;
  GrayPixels dot(size * size, 0.0f);
  dot[32 * size + 32] = 1.0f;
  const int shift = MaxTranslation(size);
  EXPECT_EQ(shift, 2);
  int moved = 0;
  for (int view = 1; view <= 20; ++view) {
    const GrayPixels v = AugmentView(dot, size, 3, "rcpt-000003", view);
    int best = 0;
    for (int i = 1; i < size * size; ++i) {
      if (v[i] > v[best]) best = i;
    }
    EXPECT_LE(std::abs(best / size - 32), shift);
    EXPECT_LE(std::abs(best % size - 32), shift);
    moved += best != 32 * size + 32;
  }
  EXPECT_GT(moved, 10);
}

}  // namespace
}  // namespace receipt_parity

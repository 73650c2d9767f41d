#include "verify/gradient_projection.h"

#include <cmath>
#include <vector>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "verify/checksum_kernels.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

// The projection written out with long double sums, as the reference.
long double ReferenceDot(const at::Tensor& x, const ProjectionDirection& v, int64_t offset,
                         int64_t update) {
  const at::Tensor flat = x.to(at::kDouble).contiguous().reshape(-1);
  long double dot = 0;
  for (int64_t i = 0; i < flat.numel(); ++i) {
    dot += static_cast<long double>(flat[i].item<double>()) * v.At(offset + i, update);
  }
  return dot;
}

TEST(GradientProjectionTest, AFloat32ProjectionIsWithinItsFloat64BoundOfTheExactOne) {
  at::manual_seed(3);
  const at::Tensor x = at::randn({1001}, at::kFloat);
  const ProjectionDirection v(1001, 11);
  absl::StatusOr<Projection> p = v.Project(x, 0, 5);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->products, 1001);
  const long double exact = ReferenceDot(x, v, 0, 5);
  EXPECT_LE(std::fabs(static_cast<double>(p->dot - exact)),
            Gamma(p->products, kFloat64UnitRoundoff) * p->magnitude);
  EXPECT_GT(p->magnitude, std::fabs(p->dot));
}

TEST(GradientProjectionTest, PiecesAtTheirOffsetsAddUpToTheWhole) {
  at::manual_seed(4);
  const at::Tensor x = at::randn({50}, at::kFloat);
  const ProjectionDirection v(50, 2);
  absl::StatusOr<Projection> whole = v.Project(x, 0, 9);
  ASSERT_TRUE(whole.ok());
  Projection parts;
  for (int64_t begin : {0, 17, 40}) {
    const int64_t end = begin == 0 ? 17 : begin == 17 ? 40 : 50;
    absl::StatusOr<Projection> part = v.Project(x.narrow(0, begin, end - begin), begin, 9);
    ASSERT_TRUE(part.ok());
    parts.Add(*part);
  }
  EXPECT_NEAR(parts.dot, whole->dot, 1e-12 * whole->magnitude);
  EXPECT_EQ(parts.products, 50);
}

TEST(GradientProjectionTest, TheDirectionTurnsWithEveryUpdateAndIsFixedBySeed) {
  const ProjectionDirection v(1000, 7);
  const ProjectionDirection same(1000, 7);
  const ProjectionDirection other(1000, 8);
  int moved = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    EXPECT_EQ(v.At(i, 3), same.At(i, 3));
    EXPECT_GE(v.At(i, 3), -1.0f);
    EXPECT_LT(v.At(i, 3), 1.0f);
    moved += v.At(i, 3) != v.At(i, 4);
  }
  EXPECT_GT(moved, 900);
  EXPECT_NE(v.At(0, 3), other.At(0, 3));
}

TEST(GradientProjectionTest, AnotherDtypeIsProjectedInFloat64WithItsProductsCounted) {
  const at::Tensor x = at::tensor({0.1, -2.5, 3.0}, at::kDouble);
  const ProjectionDirection v(3, 1);
  absl::StatusOr<Projection> p = v.Project(x, 0, 0);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->products, 6);
  EXPECT_NEAR(p->dot, static_cast<double>(ReferenceDot(x, v, 0, 0)), 1e-15);
}

TEST(GradientProjectionTest, APieceOutsideTheLayoutIsRefused) {
  const ProjectionDirection v(10, 1);
  absl::StatusOr<Projection> p = v.Project(at::ones({4}), 8, 0);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("4 gradient elements at 8 of a layout of 10"));
}

TEST(GradientProjectionTest, NonFiniteValuesMakeANonFiniteProjection) {
  const ProjectionDirection v(4, 1);
  absl::StatusOr<Projection> p =
      v.Project(at::tensor({1.0f, std::numeric_limits<float>::infinity(), 0.0f, 2.0f}), 0, 0);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->finite());
}

TEST(GradientProjectionTest, TheVectorAndPortableLoopsAgreeWithinTheBound) {
  // Whichever body this CPU runs, the kernel's sums stay within gamma(n) of
  // the exact products' sum.
  std::vector<float> x(1003), v(1003);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<float>(std::sin(i * 0.37)) * 3;
    v[i] = static_cast<float>(std::cos(i * 1.1));
  }
  double dot = 0, magnitude = 0;
  ProjectFloats(x.data(), v.data(), 1003, &dot, &magnitude);
  long double exact = 0, exact_magnitude = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    exact += static_cast<long double>(x[i]) * v[i];
    exact_magnitude += std::fabs(static_cast<long double>(x[i]) * v[i]);
  }
  EXPECT_LE(std::fabs(static_cast<double>(dot - exact)), Gamma(1003, kFloat64UnitRoundoff) * magnitude);
  // An upper bound, within the float32 sum's own rounding bound.
  EXPECT_GE(magnitude, static_cast<double>(exact_magnitude));
  EXPECT_LE(magnitude, static_cast<double>(exact_magnitude) * (1 + 2 * Gamma(1004, 0x1p-24)));
}

TEST(GradientProjectionTest, AHugeElementKeepsAFiniteMagnitudeAboveItsTerms) {
  std::vector<float> x(64, 1.0f), v(64, 0.5f);
  x[10] = 3e38f;  // |x v| summed in float32 with the rest stays finite ...
  x[20] = 3e38f;  // ... until two of them: float64 takes over
  double dot = 0, magnitude = 0;
  ProjectFloats(x.data(), v.data(), 64, &dot, &magnitude);
  EXPECT_TRUE(std::isfinite(dot));
  EXPECT_TRUE(std::isfinite(magnitude));
  EXPECT_GE(magnitude, 3e38);
}

TEST(GradientProjectionTest, GammaIsTheClassicBound) {
  EXPECT_DOUBLE_EQ(Gamma(1, 0x1p-24), 0x1p-24 / (1 - 0x1p-24));
  EXPECT_EQ(Gamma(0, 0x1p-24), 0);
  EXPECT_TRUE(std::isinf(Gamma(int64_t{1} << 24, 0x1p-24)));
  EXPECT_EQ(UnitRoundoff(at::kFloat), 0x1p-24);
  EXPECT_EQ(UnitRoundoff(at::kDouble), 0x1p-53);
  EXPECT_EQ(UnitRoundoff(at::kBFloat16), 0x1p-8);
}

}  // namespace
}  // namespace receipt_parity

#include "parity/tensor_comparison.h"

#include <cmath>
#include <limits>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

NamedTensors One(const std::string& name, std::vector<float> values) {
  return {{name, at::tensor(values, at::kFloat)}};
}

TEST(TensorComparisonTest, IdenticalTensorsAreBitwiseEqual) {
  auto c = CompareTensors(One("w", {1, -2, 0}), One("w", {1, -2, 0}), 0, 0);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->within_tolerance);
  EXPECT_TRUE(c->bitwise_equal);
  EXPECT_EQ(c->max_abs_diff, 0);
  EXPECT_EQ(c->tensors[0].max_abs_reference, 2);
}

TEST(TensorComparisonTest, AllcloseSemanticsAgainstTheReference) {
  // |1.1 - 1| = 0.1 (float), allowed atol + rtol * |ref| = 0 + 0.2 * 1.
  auto inside = CompareTensors(One("w", {1.1f}), One("w", {1.0f}), 0.2, 0);
  ASSERT_TRUE(inside.ok());
  EXPECT_TRUE(inside->within_tolerance);
  EXPECT_FALSE(inside->bitwise_equal);
  EXPECT_NEAR(inside->max_abs_diff, 0.1, 1e-6);
  EXPECT_NEAR(inside->max_rel_diff, 0.1, 1e-6);
  // The tolerance scales with the REFERENCE, not the actual value.
  auto outside = CompareTensors(One("w", {2.0f}), One("w", {1.0f}), 0.6, 0);
  ASSERT_TRUE(outside.ok());
  EXPECT_FALSE(outside->within_tolerance);
  auto swapped = CompareTensors(One("w", {1.0f}), One("w", {2.0f}), 0.6, 0);
  ASSERT_TRUE(swapped.ok());
  EXPECT_TRUE(swapped->within_tolerance);
}

TEST(TensorComparisonTest, ZeroReferenceIsJudgedByAtolAlone) {
  auto c = CompareTensors(One("b", {1e-8f, 3.0f}), One("b", {0.0f, 3.0f}),
                          1e-6, 1e-7);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->within_tolerance);
  EXPECT_EQ(c->max_rel_diff, 0);
  EXPECT_GT(c->max_abs_diff, 0);
  auto far = CompareTensors(One("b", {1e-6f}), One("b", {0.0f}), 1e-6, 1e-7);
  ASSERT_TRUE(far.ok());
  EXPECT_FALSE(far->within_tolerance);
}

TEST(TensorComparisonTest, NaNIsNeverClose) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto c = CompareTensors(One("w", {nan, 1}), One("w", {1, 1}), 1, 1);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->within_tolerance);
  EXPECT_TRUE(std::isnan(c->max_abs_diff));
}

TEST(TensorComparisonTest, BitwiseDistinguishesSignedZeroAndDtype) {
  auto zeros = CompareTensors(One("w", {-0.0f}), One("w", {0.0f}), 0, 0);
  ASSERT_TRUE(zeros.ok());
  EXPECT_TRUE(zeros->within_tolerance);
  EXPECT_FALSE(zeros->bitwise_equal);
  NamedTensors as_double = {{"w", at::tensor({1.0}, at::kDouble)}};
  auto dtype = CompareTensors(One("w", {1.0f}), as_double, 0, 0);
  ASSERT_TRUE(dtype.ok());
  EXPECT_TRUE(dtype->within_tolerance);
  EXPECT_FALSE(dtype->bitwise_equal);
}

TEST(TensorComparisonTest, ListMaximaAndProto) {
  NamedTensors actual = {{"a", at::tensor({1.0f, 2.0f})},
                         {"b", at::zeros({2, 3})}};
  NamedTensors reference = {{"a", at::tensor({1.0f, 2.5f})},
                            {"b", at::zeros({2, 3})}};
  auto c = CompareTensors(actual, reference, 1e-6, 1e-7);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->within_tolerance);
  EXPECT_FALSE(c->bitwise_equal);
  EXPECT_DOUBLE_EQ(c->max_abs_diff, 0.5);
  EXPECT_DOUBLE_EQ(c->max_rel_diff, 0.2);
  google::protobuf::RepeatedPtrField<TensorParity> out;
  AppendTensorParity(*c, &out);
  ASSERT_EQ(out.size(), 2);
  EXPECT_EQ(out[0].name(), "a");
  EXPECT_FALSE(out[0].pass());
  EXPECT_EQ(out[1].name(), "b");
  EXPECT_TRUE(out[1].pass());
  EXPECT_TRUE(out[1].bitwise_equal());
  ASSERT_EQ(out[1].shape_size(), 2);
  EXPECT_EQ(out[1].shape(0), 2);
  EXPECT_EQ(out[1].shape(1), 3);
}

// A derived budget per tensor: each tensor is judged by its own atol, which
// the proto records; the list's one atol records none.
TEST(TensorComparisonTest, EachTensorByItsOwnAtol) {
  NamedTensors actual = {{"small", at::tensor({1.0f})}, {"large", at::tensor({10.0f})}};
  NamedTensors reference = {{"small", at::tensor({1.5f})}, {"large", at::tensor({10.5f})}};
  auto c = CompareTensors(actual, reference, 0, std::vector<double>{0.1, 1.0});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->tensors[0].within_tolerance);
  EXPECT_TRUE(c->tensors[1].within_tolerance);
  google::protobuf::RepeatedPtrField<TensorParity> out;
  AppendTensorParity(*c, &out);
  ASSERT_TRUE(out[0].has_atol());
  EXPECT_DOUBLE_EQ(out[1].atol(), 1.0);
  auto one = CompareTensors(actual, reference, 0, 1.0);
  ASSERT_TRUE(one.ok());
  google::protobuf::RepeatedPtrField<TensorParity> plain;
  AppendTensorParity(*one, &plain);
  EXPECT_FALSE(plain[0].has_atol());
  EXPECT_THAT(CompareTensors(actual, reference, 0, std::vector<double>{0.1}).status().message(),
              HasSubstr("2 tensors with 1 atols"));
  EXPECT_THAT(
      CompareTensors(actual, reference, 0, std::vector<double>{0.1, NAN}).status().message(),
      HasSubstr("rtol and atol must be finite"));
}

TEST(TensorComparisonTest, MismatchedListsAreErrors) {
  EXPECT_THAT(CompareTensors(One("a", {1}), One("b", {1}), 0, 0)
                  .status()
                  .message(),
              HasSubstr("'a' but the reference's is 'b'"));
  EXPECT_THAT(CompareTensors(One("a", {1}), One("a", {1, 2}), 0, 0)
                  .status()
                  .message(),
              HasSubstr("shape [1], the reference [2]"));
  EXPECT_EQ(CompareTensors(One("a", {1}), {}, 0, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(CompareTensors(One("a", {1}), One("a", {1}), -1, 0)
                  .status()
                  .message(),
              HasSubstr("rtol and atol"));
}

}  // namespace
}  // namespace receipt_parity

#include "model/autocast_scope.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>

#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

TEST(AutocastScopeTest, AMatmulRunsInBfloat16InsideAndFp32Outside) {
  const at::Tensor a = at::randn({4, 4});
  const at::Tensor b = at::randn({4, 4});
  {
    AutocastScope scope(c10::DeviceType::CPU, true);
    EXPECT_TRUE(at::autocast::is_autocast_enabled(c10::DeviceType::CPU));
    EXPECT_EQ(at::mm(a, b).scalar_type(), at::kBFloat16);
  }
  EXPECT_FALSE(at::autocast::is_autocast_enabled(c10::DeviceType::CPU));
  EXPECT_EQ(at::mm(a, b).scalar_type(), at::kFloat);
}

TEST(AutocastScopeTest, ADisabledScopeChangesNothing) {
  AutocastScope scope(c10::DeviceType::CPU, false);
  EXPECT_FALSE(at::autocast::is_autocast_enabled(c10::DeviceType::CPU));
  EXPECT_EQ(at::mm(at::randn({2, 2}), at::randn({2, 2})).scalar_type(), at::kFloat);
}

}  // namespace
}  // namespace receipt_parity

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/nn/modules/linear.h>
#include "absl/status/statusor.h"
#include "glog/logging.h"
#include "gtest/gtest.h"
#include "google/protobuf/text_format.h"
#include "trainer/config.pb.h"
TEST(Smoke, Works) {
  receipt_parity::TrainingConfig c;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString("world_size: 2", &c));
  torch::nn::Linear l(3, 2);
  absl::StatusOr<int> s = 3;
  EXPECT_EQ(*s + c.world_size(), 5);
}

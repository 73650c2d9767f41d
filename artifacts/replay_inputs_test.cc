#include "artifacts/replay_inputs.h"

#include <filesystem>
#include <fstream>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string FreshReplayDir(const std::string& name) {
  const std::string dir = std::string(getenv("TEST_TMPDIR")) + "/replay-" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

ReplayInputs Inputs(int64_t update) {
  ReplayInputs in;
  RecordedUpdate& u = in.update;
  u.total_update = update;
  u.bf16 = true;
  u.shares = {{MicroBatchShare{0, {Slot{3, true}, Slot{4, false}}, {0.5, 0}},
               MicroBatchShare{2, {}, {}}},
              {MicroBatchShare{0, {Slot{9, true}}, {0.5}}, MicroBatchShare{1, {}, {}}}};
  u.reduced_divisor = 2;
  u.clipping = GradientClipping{1.5, true};
  u.run_clip_factor = 0.75;
  u.rate_factor = 0.125;
  in.world_size = 2;
  in.learning_rate = 0.01;
  in.parameter_order = {"fc.weight", "fc.bias"};
  in.state.model_before = {{"model/fc.weight", at::ones({2, 2})},
                           {"model/fc.bias", at::zeros({2})},
                           {"model_buffer/bn.running_mean", at::full({2}, 3.0)}};
  in.state.optimizer_before = {{"fc.weight/momentum_buffer", at::full({2, 2}, 0.5)}};
  in.state.gradient = {{"fc.weight", at::full({2, 2}, -1.0)}, {"fc.bias", at::tensor({2.f, 3.f})}};
  return in;
}

TEST(ReplayInputsTest, ReadBackAsWritten) {
  const std::string dir = FreshReplayDir("roundtrip");
  ASSERT_TRUE(WriteReplayInputs(dir, Inputs(4), MakeArtifactStamp("abc", 1)).ok());
  ASSERT_TRUE(WriteReplayInputs(dir, Inputs(0), MakeArtifactStamp("abc", 1)).ok());
  EXPECT_THAT(RecordedReplayUpdates(dir), ElementsAre(0, 4));
  absl::StatusOr<ReplayInputs> read = ReadReplayInputs(dir, 4, 10, {"abc"});
  ASSERT_TRUE(read.ok()) << read.status();
  const RecordedUpdate& u = read->update;
  EXPECT_EQ(u.total_update, 4);
  EXPECT_TRUE(u.bf16);
  ASSERT_EQ(u.shares.size(), 2u);
  ASSERT_EQ(u.shares[0].size(), 2u);
  EXPECT_EQ(u.shares[0][0].slots, (std::vector<Slot>{Slot{3, true}, Slot{4, false}}));
  EXPECT_EQ(u.shares[0][0].weights, (std::vector<double>{0.5, 0}));
  EXPECT_EQ(u.shares[0][1].begin, 2);
  EXPECT_EQ(u.shares[1][0].slots, (std::vector<Slot>{Slot{9, true}}));
  EXPECT_EQ(u.reduced_divisor, 2);
  ASSERT_TRUE(u.clipping.has_value());
  EXPECT_EQ(u.clipping->max_norm, 1.5);
  EXPECT_TRUE(u.clipping->global);
  EXPECT_EQ(u.run_clip_factor, 0.75);
  EXPECT_EQ(u.rate_factor, 0.125);
  EXPECT_EQ(read->world_size, 2);
  EXPECT_EQ(read->learning_rate, 0.01);
  EXPECT_EQ(read->state.model_before.size(), 3u);
  EXPECT_TRUE(read->state.model_before.at("model_buffer/bn.running_mean").equal(at::full({2}, 3.0)));
  EXPECT_TRUE(read->state.optimizer_before.at("fc.weight/momentum_buffer")
                  .equal(at::full({2, 2}, 0.5)));
  ASSERT_EQ(read->state.gradient.size(), 2u);
  EXPECT_EQ(read->state.gradient[1].first, "fc.bias");
  EXPECT_TRUE(read->state.gradient[1].second.equal(at::tensor({2.f, 3.f})));
}

TEST(ReplayInputsTest, RefusesDamageOtherConfigsAndSlotsOutsideTheSet) {
  const std::string dir = FreshReplayDir("damaged");
  ASSERT_TRUE(WriteReplayInputs(dir, Inputs(2), MakeArtifactStamp("abc", 1)).ok());
  EXPECT_EQ(ReadReplayInputs(dir, 3, 10).status().code(), absl::StatusCode::kNotFound);
  absl::StatusOr<ReplayInputs> other = ReadReplayInputs(dir, 2, 10, {"xyz"});
  EXPECT_EQ(other.status().code(), absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<ReplayInputs> outside = ReadReplayInputs(dir, 2, 5);
  EXPECT_EQ(outside.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(outside.status().message(), HasSubstr("dataset_index 9 is outside"));
  {
    std::fstream f(dir + "/trajectory/replay-2.pt", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('\x7f');
  }
  absl::StatusOr<ReplayInputs> damaged = ReadReplayInputs(dir, 2, 10);
  EXPECT_EQ(damaged.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(damaged.status().message(), HasSubstr("replay-2.pt"));
}

}  // namespace
}  // namespace receipt_parity

#include "config/device_check.h"

#include <cstdlib>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/cuda_support_loader.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

TrainingConfig Config(const std::string& device, const std::string& backend,
                      int world_size) {
  TrainingConfig config;
  config.set_device(device);
  config.set_backend(backend);
  config.set_world_size(world_size);
  return config;
}

class DeviceCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"RANK", "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"}) {
      unsetenv(name);
    }
  }
};

TEST_F(DeviceCheckTest, TheCpuWithGlooNeedsNothingAndLoadsNothing) {
  const TrainingConfig cpu = Config("cpu", "gloo", 4);
  EXPECT_FALSE(NeedsCuda(cpu));
  EXPECT_TRUE(CheckDevicesAvailable(cpu, 4).ok());
  EXPECT_EQ(LoadedCudaSupport(), nullptr);
  EXPECT_EQ(RankDevice(cpu, 3), c10::Device(c10::DeviceType::CPU));
}

TEST_F(DeviceCheckTest, LocalRanksFollowTheLauncher) {
  const TrainingConfig config = Config("cuda", "nccl", 8);
  EXPECT_EQ(LocalRankCount(config), 8);  // the local launcher starts all
  setenv("RANK", "5", 1);
  EXPECT_EQ(LocalRankCount(config), 1);  // one rank of an outside launcher
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "3", 1);
  EXPECT_EQ(LocalRankCount(config), 3);  // mpirun
  setenv("LOCAL_WORLD_SIZE", "2", 1);
  EXPECT_EQ(LocalRankCount(config), 2);  // torchrun
  setenv("LOCAL_WORLD_SIZE", "zero", 1);
  EXPECT_EQ(LocalRankCount(config), 3);
}

TEST_F(DeviceCheckTest, RanksThatCannotFitInThisMachineAreRefusedWithTheFigures) {
  TrainingConfig config = Config("cpu", "gloo", 1000000);
  config.mutable_data()->mutable_synthetic()->set_num_identities(400);
  config.mutable_data()->set_views_per_identity(2);
  config.mutable_data()->set_image_size(32);
  EXPECT_TRUE(CheckRanksFitThisMachine(config, 3).ok());  // 3 ranks on 2 cores
  const absl::Status refused = CheckRanksFitThisMachine(config, 1000000);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.message(), HasSubstr("world_size: 1000000 ranks on this machine need about"));
  EXPECT_THAT(refused.message(), HasSubstr("(1000000 x (150 MiB per LibTorch process + "));
  EXPECT_THAT(refused.message(), HasSubstr("GiB. Start fewer ranks per machine"));
}

TEST_F(DeviceCheckTest, CudaOrNcclWithoutAGpuIsRefusedSayingWhy) {
  EXPECT_TRUE(NeedsCuda(Config("cuda", "gloo", 1)));
  EXPECT_TRUE(NeedsCuda(Config("cpu", "nccl", 1)));
  absl::StatusOr<const CudaSupport*> support = LoadCudaSupport();
  ASSERT_TRUE(support.ok()) << support.status();
  if ((*support)->VisibleDeviceCount() > 0) GTEST_SKIP() << "a GPU is visible";
  const absl::Status cuda = CheckDevicesAvailable(Config("cuda", "gloo", 2), 2);
  EXPECT_EQ(cuda.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(cuda.message(),
              HasSubstr("device: \"cuda\" needs a GPU, and none is visible here"));
  const absl::Status nccl = CheckDevicesAvailable(Config("cuda", "nccl", 2), 2);
  EXPECT_THAT(nccl.message(), HasSubstr("device: \"cuda\" needs a GPU"));
}

TEST_F(DeviceCheckTest, NcclNeedsAGpuPerLocalRank) {
  absl::StatusOr<const CudaSupport*> support = LoadCudaSupport();
  ASSERT_TRUE(support.ok()) << support.status();
  const int gpus = (*support)->VisibleDeviceCount();
  if (gpus == 0) GTEST_SKIP() << "needs a GPU";
  const absl::Status refused =
      CheckDevicesAvailable(Config("cuda", "nccl", gpus + 1), gpus + 1);
  EXPECT_THAT(refused.message(), HasSubstr("NCCL refuses two ranks on one GPU"));
  EXPECT_TRUE(CheckDevicesAvailable(Config("cuda", "gloo", gpus + 1), gpus + 1).ok());
  EXPECT_EQ(RankDevice(Config("cuda", "gloo", gpus + 1), gpus),
            c10::Device(c10::DeviceType::CUDA, 0));
}

}  // namespace
}  // namespace receipt_parity

#include "trainer/compute_settings.h"

#include <cstdlib>

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include <gtest/gtest.h>

namespace receipt_parity {
namespace {

TEST(ComputeSettingsTest, TheCpuRecordSaysWhatIsInEffect) {
  TrainingConfig config;
  config.set_backend("gloo");
  config.mutable_run()->set_intra_op_threads(1);
  absl::StatusOr<PlatformRecord> record =
      ApplyComputeSettings(config, c10::Device(c10::DeviceType::CPU));
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->libtorch_version(), "2.11.0");
  EXPECT_EQ(record->device(), "cpu");
  EXPECT_EQ(record->backend(), "gloo");
  EXPECT_EQ(record->intra_op_threads(), 1);
  EXPECT_EQ(at::get_num_threads(), 1);
  EXPECT_EQ(record->float32_matmul_precision(), "highest");
  EXPECT_EQ(record->allow_tf32_cublas(), at::globalContext().allowTF32CuBLAS());
  EXPECT_FALSE(record->allow_tf32_cublas());
  // The CPU keeps LibTorch's defaults; CUDA's versions stay empty unless the
  // CUDA support library was loaded.
  EXPECT_EQ(record->deterministic_algorithms(),
            at::globalContext().deterministicAlgorithms());
  EXPECT_TRUE(record->device_name().empty());
  EXPECT_TRUE(record->cuda_runtime().empty());
}

TEST(ComputeSettingsTest, ThreadsFollowTheConfig) {
  TrainingConfig config;
  config.mutable_run()->set_intra_op_threads(2);
  absl::StatusOr<PlatformRecord> record =
      ApplyComputeSettings(config, c10::Device(c10::DeviceType::CPU));
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->intra_op_threads(), 2);
}

}  // namespace
}  // namespace receipt_parity

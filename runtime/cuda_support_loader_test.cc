#include "runtime/cuda_support_loader.h"

#include <chrono>
#include <fstream>
#include <string>

#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace receipt_parity {
namespace {

using ::testing::MatchesRegex;

TEST(CudaSupportLoaderTest, NothingIsLoadedBeforeTheFirstCall) {
  EXPECT_EQ(LoadedCudaSupport(), nullptr);
  for (const std::string& candidate : CudaSupportCandidates()) {
    EXPECT_NE(candidate.find(kCudaSupportLibrary), std::string::npos) << candidate;
  }
}

TEST(CudaSupportLoaderTest, LoadsTheLibraryFromTheRunfilesOnce) {
  absl::StatusOr<const CudaSupport*> support = LoadCudaSupport();
  ASSERT_TRUE(support.ok()) << support.status();
  ASSERT_NE(*support, nullptr);
  EXPECT_EQ(LoadedCudaSupport(), *support);
  absl::StatusOr<const CudaSupport*> again = LoadCudaSupport();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *support);
}

TEST(CudaSupportLoaderTest, ReportsTheCudaItWasBuiltWith) {
  absl::StatusOr<const CudaSupport*> support = LoadCudaSupport();
  ASSERT_TRUE(support.ok()) << support.status();
  const CudaVersions versions = (*support)->Versions();
  // The wheel's NCCL is linked whether or not a GPU is present: 2.28.9 for
  // torch 2.11.0+cu130.
  EXPECT_THAT(versions.nccl, MatchesRegex("2\\.[0-9]+\\.[0-9]+"));
}

TEST(CudaSupportLoaderTest, WithoutAGpuCountsNoneAndNcclRefuses) {
  absl::StatusOr<const CudaSupport*> support = LoadCudaSupport();
  ASSERT_TRUE(support.ok()) << support.status();
  const int gpus = (*support)->VisibleDeviceCount();
  EXPECT_GE(gpus, 0);
  if (gpus > 0) GTEST_SKIP() << gpus << " GPU(s) visible: the refusal needs none";
  auto store = c10::make_intrusive<c10d::HashStore>();
  try {
    (*support)->MakeNcclBackend(store, 0, 1, std::chrono::seconds(5));
    FAIL() << "ProcessGroupNCCL was created without a GPU";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what_without_backtrace()).find("no GPUs found"),
              std::string::npos)
        << e.what_without_backtrace();
  }
}

}  // namespace
}  // namespace receipt_parity

// The MPI backend without mpirun: what it refuses before any communication.
// (Two real ranks: //reducers:sum_over_mpi_two_ranks_test.)
#include "runtime/mpi_backend.h"

#include <vector>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

TEST(MpiAllreduceSumInPlaceTest, RefusesWhatMpiCannotSum) {
  at::Tensor undefined;
  EXPECT_EQ(MpiAllreduceSumInPlace(undefined).code(), absl::StatusCode::kInvalidArgument);
  at::Tensor integers = at::ones({4}, at::kInt);
  EXPECT_THAT(MpiAllreduceSumInPlace(integers).message(), HasSubstr("float32 or float64"));
  at::Tensor strided = at::ones({4, 4}).t();
  EXPECT_THAT(MpiAllreduceSumInPlace(strided).message(), HasSubstr("not contiguous"));
}

TEST(MpiAllreduceSumInPlaceTest, WithoutMpiIsAFailedPrecondition) {
  at::Tensor flat = at::ones({8});
  const absl::Status status = MpiAllreduceSumInPlace(flat);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("mpirun"));
  EXPECT_TRUE(at::equal(flat, at::ones({8})));
}

TEST(MpiProcessGroupTest, IsMadeWithoutMpiAndRefusesToReduceWithoutIt) {
  auto group = MakeMpiProcessGroup(c10::make_intrusive<c10d::HashStore>(), 0, 2);
  EXPECT_EQ(group->getBackend(c10::DeviceType::CPU)->getBackendName(), kMpiBackendName);
  std::vector<at::Tensor> tensors = {at::ones({3})};
  try {
    group->allreduce(tensors)->wait();
    FAIL() << "reduced without MPI";
  } catch (const c10::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("MPI is not running"));
  }
  EXPECT_TRUE(at::equal(tensors[0], at::ones({3})));
}

TEST(MpiProcessGroupTest, OnlySumIsAReduceOp) {
  auto group = MakeMpiProcessGroup(c10::make_intrusive<c10d::HashStore>(), 0, 2);
  std::vector<at::Tensor> tensors = {at::ones({3})};
  c10d::AllreduceOptions max;
  max.reduceOp = c10d::ReduceOp::MAX;
  try {
    group->allreduce(tensors, max)->wait();
    FAIL() << "reduced with MAX";
  } catch (const c10::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("SUM only"));
  }
}

}  // namespace
}  // namespace receipt_parity

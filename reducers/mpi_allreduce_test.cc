// mpi_allreduce without mpirun: what it refuses before any communication.
// (Two real ranks: mpi_allreduce_two_ranks_test.)
#include "reducers/mpi_allreduce.h"

#include <ATen/ATen.h>

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

TEST(MpiAllreduceReducerTest, NegativeBucketCapIsRefused) {
  EXPECT_EQ(MpiAllreduceReducer::Create(-1).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<MpiAllreduceReducer> reducer = MpiAllreduceReducer::Create(0);
  ASSERT_TRUE(reducer.ok());
  EXPECT_EQ(reducer->bucket_cap_bytes(), int64_t{25} << 20);
}

}  // namespace
}  // namespace receipt_parity

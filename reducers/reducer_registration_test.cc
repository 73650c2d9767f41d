// The built-in reducer plugins are registered under their stable names and
// build from their typed options. linkstatic = 1, so a registration dropped
// by the linker would show here.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plugins/plugin_registry.h"
#include "reducers/allreduce_sum_reducer.h"
#include "reducers/gradient_reducer.h"
#include "reducers/mpi_allreduce_options.pb.h"
#include "reducers/rank_average_reducer.h"
#include "reducers/reducer_options.pb.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;
using ::testing::IsSupersetOf;
using ::testing::NotNull;

TEST(ReducerRegistrationTest, AllBuiltinsAreRegistered) {
  EXPECT_THAT(RegisteredNames(GradientReducer::kKind),
              IsSupersetOf({"allreduce_sum", "mpi_allreduce", "rank_average"}));
  ASSERT_TRUE(CheckRegistries().ok());
}

TEST(ReducerRegistrationTest, FactoriesBuildFromTheirOptions) {
  auto sum_factory = FindFactory<GradientReducer>("allreduce_sum");
  ASSERT_TRUE(sum_factory.ok()) << sum_factory.status();
  AllreduceSumOptions sum_options;
  sum_options.set_bucket_cap_bytes(4096);
  auto sum = (*sum_factory)->Create(sum_options);
  ASSERT_TRUE(sum.ok()) << sum.status();
  auto* typed = dynamic_cast<AllreduceSumReducer*>(sum->get());
  ASSERT_THAT(typed, NotNull());
  EXPECT_EQ(typed->bucket_cap_bytes(), 4096);
  auto defaulted = (*sum_factory)->Create(AllreduceSumOptions());
  ASSERT_TRUE(defaulted.ok());
  EXPECT_EQ(dynamic_cast<AllreduceSumReducer*>(defaulted->get())
                ->bucket_cap_bytes(),
            AllreduceSumReducer::kDefaultBucketCapBytes);

  auto average_factory = FindFactory<GradientReducer>("rank_average");
  ASSERT_TRUE(average_factory.ok()) << average_factory.status();
  auto average = (*average_factory)->Create(RankAverageOptions());
  ASSERT_TRUE(average.ok()) << average.status();
  EXPECT_THAT(dynamic_cast<RankAverageReducer*>(average->get()), NotNull());
}

// The old name: allreduce_sum with its options' cap, reducing after the
// backward pass as the MPI reducer did; it needs no MPI to be made.
TEST(ReducerRegistrationTest, MpiAllreduceIsAllreduceSumAfterBackward) {
  auto factory = FindFactory<GradientReducer>("mpi_allreduce");
  ASSERT_TRUE(factory.ok()) << factory.status();
  MpiAllreduceOptions options;
  options.set_bucket_cap_bytes(2048);
  auto reducer = (*factory)->Create(options);
  ASSERT_TRUE(reducer.ok()) << reducer.status();
  auto* typed = dynamic_cast<AllreduceSumReducer*>(reducer->get());
  ASSERT_THAT(typed, NotNull());
  EXPECT_EQ(typed->bucket_cap_bytes(), 2048);
  EXPECT_FALSE(typed->overlaps_backward());
  options.set_bucket_cap_bytes(-1);
  EXPECT_EQ((*factory)->Create(options).status().code(), absl::StatusCode::kInvalidArgument);
}

// docs/configs.md: `ordered_sum` with chunk_slots unset takes one slot a
// chunk; a chunk_slots written 0 is still refused.
TEST(ReducerRegistrationTest, OrderedSumWithoutOptionsTakesOneSlotAChunk) {
  auto factory = FindFactory<GradientReducer>("ordered_sum");
  ASSERT_TRUE(factory.ok()) << factory.status();
  auto unset = (*factory)->Create(OrderedSumOptions());
  ASSERT_TRUE(unset.ok()) << unset.status();
  EXPECT_EQ((*unset)->chunk_slots(), 1);
  OrderedSumOptions zero;
  zero.set_chunk_slots(0);
  EXPECT_THAT((*factory)->Create(zero).status().message(),
              HasSubstr("chunk_slots: must be >= 1, got 0"));
}

TEST(ReducerRegistrationTest, BadOptionsAreRejected) {
  auto factory = FindFactory<GradientReducer>("rank_average");
  ASSERT_TRUE(factory.ok());
  RankAverageOptions options;
  options.set_bucket_cap_bytes(-1);
  auto reducer = (*factory)->Create(options);
  EXPECT_EQ(reducer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(reducer.status().message(), HasSubstr("bucket_cap_bytes"));
  EXPECT_EQ((*factory)->Create(AllreduceSumOptions()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace receipt_parity

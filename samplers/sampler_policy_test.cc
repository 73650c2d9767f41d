#include "samplers/sampler_policy.h"

#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

// Returns a fixed order (or error), whatever the request.
class FixedPolicy : public SamplerPolicy {
 public:
  explicit FixedPolicy(absl::StatusOr<GlobalOrder> order)
      : order_(std::move(order)) {}
  absl::StatusOr<GlobalOrder> Order(const OrderRequest&) const override {
    return order_;
  }

 private:
  absl::StatusOr<GlobalOrder> order_;
};

GlobalOrder Identity(int64_t n) {
  GlobalOrder order;
  for (int64_t i = 0; i < n; ++i) order.slots.push_back({i, true});
  return order;
}

OrderRequest Request(int64_t n, int world_size) {
  OrderRequest request;
  request.num_examples = n;
  request.world_size = world_size;
  request.epoch = 4;
  return request;
}

TEST(BuildEpochPlanTest, DealsThePolicysOrder) {
  FixedPolicy policy(Identity(6));
  absl::StatusOr<EpochPlan> plan =
      BuildEpochPlan(policy, Request(6, 2), {2, 1});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->epoch(), 4);
  EXPECT_EQ(plan->num_updates(), 2);
  EXPECT_EQ(plan->rank_slots(0).size(), 4u);
  EXPECT_EQ(plan->rank_slots(1).size(), 2u);
}

// Expects InvalidArgument whose message contains `needle`.
void ExpectInvalid(const OrderRequest& request,
                   const std::vector<int>& local_batch,
                   const std::string& needle) {
  FixedPolicy policy(Identity(4));
  absl::StatusOr<EpochPlan> plan = BuildEpochPlan(policy, request, local_batch);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument)
      << plan.status();
  EXPECT_THAT(plan.status().message(), HasSubstr(needle));
}

TEST(BuildEpochPlanTest, RejectsBadRequestsNamingTheValue) {
  ExpectInvalid(Request(4, 0), {}, "world_size is 0");
  ExpectInvalid(Request(-1, 1), {1}, "num_examples is -1");
  ExpectInvalid(Request(4, 3), {1, 1}, "world_size is 3");
  ExpectInvalid(Request(4, 3), {1, 1}, "[1,1]");
  ExpectInvalid(Request(4, 2), {2, -1}, "rank 1 is -1");
  ExpectInvalid(Request(4, 2), {0, 0}, "sum to 0");
}

TEST(BuildEpochPlanTest, PolicyErrorsPassThrough) {
  FixedPolicy policy(absl::FailedPreconditionError("no order today"));
  absl::StatusOr<EpochPlan> plan = BuildEpochPlan(policy, Request(4, 1), {1});
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(plan.status().message(), HasSubstr("no order today"));
}

TEST(BuildEpochPlanTest, RejectsAPolicyThatNamesMissingExamples) {
  GlobalOrder order = Identity(4);
  order.slots[2].dataset_index = 4;
  absl::StatusOr<EpochPlan> plan =
      BuildEpochPlan(FixedPolicy(order), Request(4, 1), {1});
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(plan.status().message(), HasSubstr("slot dataset index 4"));

  order = Identity(4);
  order.dropped = {-1};
  plan = BuildEpochPlan(FixedPolicy(order), Request(4, 1), {1});
  EXPECT_THAT(plan.status().message(), HasSubstr("dropped dataset index -1"));
}

}  // namespace
}  // namespace receipt_parity

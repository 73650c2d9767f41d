// The three built-in sampler policies, found through the registry of a
// statically linked binary as the trainer and the audit tool find them.
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "gtest/gtest.h"
#include "plugins/plugin_registry.h"
#include "samplers/sampler_options.pb.h"
#include "samplers/sampler_policy.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;
using ::testing::IsSupersetOf;

std::unique_ptr<SamplerPolicy> Create(const std::string& name,
                                      bool disable_shuffle) {
  absl::StatusOr<const Factory<SamplerPolicy>*> factory =
      FindFactory<SamplerPolicy>(name);
  EXPECT_TRUE(factory.ok()) << factory.status();
  if (!factory.ok()) return nullptr;
  std::unique_ptr<google::protobuf::Message> options =
      (*factory)->CreateEmptyOptions();
  const google::protobuf::FieldDescriptor* field =
      options->GetDescriptor()->FindFieldByName("disable_shuffle");
  EXPECT_NE(field, nullptr) << name;
  if (field == nullptr) return nullptr;
  options->GetReflection()->SetBool(options.get(), field, disable_shuffle);
  absl::StatusOr<std::unique_ptr<SamplerPolicy>> policy =
      (*factory)->Create(*options);
  EXPECT_TRUE(policy.ok()) << policy.status();
  return policy.ok() ? std::move(*policy) : nullptr;
}

GlobalOrder Order(const SamplerPolicy& policy, int64_t n, int world_size) {
  OrderRequest request;
  request.num_examples = n;
  request.world_size = world_size;
  request.seed = 3;
  request.global_batch = 8;
  absl::StatusOr<GlobalOrder> order = policy.Order(request);
  EXPECT_TRUE(order.ok()) << order.status();
  return order.ok() ? *order : GlobalOrder();
}

TEST(BuiltinSamplersTest, AllThreeAreRegistered) {
  ASSERT_TRUE(CheckRegistries().ok());
  EXPECT_THAT(RegisteredNames(SamplerPolicy::kKind),
              IsSupersetOf({"drop_tail", "duplicate_pad", "global_batches", "masked_tail"}));
}

TEST(BuiltinSamplersTest, EachPolicyHasItsTailAndHonoursDisableShuffle) {
  struct Expected {
    std::string name;
    size_t slots;
    size_t valid;
    size_t dropped;
  };
  for (const Expected& expected :
       {Expected{"duplicate_pad", 48, 48, 0},
        Expected{"masked_tail", 48, 47, 0}, Expected{"drop_tail", 45, 45, 2},
        Expected{"global_batches", 48, 47, 0}}) {
    SCOPED_TRACE(expected.name);
    for (bool disable_shuffle : {false, true}) {
      std::unique_ptr<SamplerPolicy> policy =
          Create(expected.name, disable_shuffle);
      ASSERT_NE(policy, nullptr);
      GlobalOrder order = Order(*policy, 47, 3);
      ASSERT_EQ(order.slots.size(), expected.slots);
      EXPECT_EQ(order.dropped.size(), expected.dropped);
      size_t valid = 0;
      bool is_range = true;
      for (size_t p = 0; p < order.slots.size(); ++p) {
        valid += order.slots[p].valid;
        is_range = is_range &&
                   order.slots[p].dataset_index == static_cast<int64_t>(p % 47);
      }
      EXPECT_EQ(valid, expected.valid);
      EXPECT_EQ(is_range, disable_shuffle);
    }
  }
}

TEST(BuiltinSamplersTest, OptionsOfAnotherPolicyAreRejected) {
  absl::StatusOr<const Factory<SamplerPolicy>*> factory =
      FindFactory<SamplerPolicy>("masked_tail");
  ASSERT_TRUE(factory.ok()) << factory.status();
  DropTailOptions wrong;
  absl::StatusOr<std::unique_ptr<SamplerPolicy>> policy =
      (*factory)->Create(wrong);
  EXPECT_EQ(policy.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(policy.status().message(),
              HasSubstr("receipt_parity.MaskedTailOptions"));
}

}  // namespace
}  // namespace receipt_parity

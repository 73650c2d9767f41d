#include "artifacts/first_step_record.h"

#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/modules/linear.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "samplers/masked_tail.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

// A module whose parameters are "out.weight" [4, 16] and "out.bias" [4].
struct TinyModule : torch::nn::Module {
  TinyModule() { register_module("out", torch::nn::Linear(16, 4)); }
};

// The masked_tail plan of epoch 0 over `n` examples.
EpochPlan MaskedTailPlan(int n, const std::vector<int>& local_batch) {
  absl::StatusOr<std::unique_ptr<SamplerPolicy>> policy =
      MaskedTailFactory().Create(MaskedTailOptions());
  EXPECT_TRUE(policy.ok()) << policy.status();
  OrderRequest request;
  request.num_examples = n;
  request.world_size = static_cast<int>(local_batch.size());
  request.seed = 3;
  absl::StatusOr<EpochPlan> plan = BuildEpochPlan(**policy, request, local_batch);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return *plan;
}

TEST(FirstStepRecordTest, StoredTensorsLoadBackBitwiseInTheOrderAsked) {
  auto model = std::make_shared<TinyModule>();
  FirstStep record;
  StoreNamedTensors(SnapshotParameters(*model), record.mutable_parameters_before());
  ASSERT_EQ(record.parameters_before().size(), 2u);
  EXPECT_EQ(record.parameters_before().at("out.weight").shape_size(), 2);
  absl::StatusOr<NamedTensors> loaded =
      LoadNamedTensors(record.parameters_before(), {"out.bias", "out.weight"});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_EQ(loaded->size(), 2u);
  EXPECT_EQ((*loaded)[0].first, "out.bias");
  EXPECT_TRUE(at::equal((*loaded)[0].second, model->named_parameters()["out.bias"]));
  EXPECT_TRUE(at::equal((*loaded)[1].second, model->named_parameters()["out.weight"]));
}

TEST(FirstStepRecordTest, MissingShortOrImpossibleTensorsAreInvalidArgument) {
  google::protobuf::Map<std::string, NamedTensor> map;
  NamedTensor& short_one = map["short"];
  short_one.add_shape(2);
  short_one.add_shape(2);
  short_one.add_values(1);
  NamedTensor& negative = map["negative"];
  negative.add_shape(-1);
  negative.add_shape(-2);  // "fills" 2 values, but no tensor has this shape
  negative.add_values(1);
  negative.add_values(2);

  absl::Status missing = LoadNamedTensors(map, {"absent"}).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(missing.message()), HasSubstr("'absent' is missing"));
  absl::Status short_status = LoadNamedTensors(map, {"short"}).status();
  EXPECT_EQ(short_status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(short_status.message()), HasSubstr("has 1 values for a shape of 4"));
  absl::StatusOr<NamedTensors> impossible;
  EXPECT_NO_THROW(impossible = LoadNamedTensors(map, {"negative"}));
  EXPECT_EQ(impossible.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(impossible.status().message()), HasSubstr("'negative': LibTorch"));
}

TEST(FirstStepRecordTest, RecordBatchListsEveryRanksSlots) {
  std::vector<std::string> receipt_ids;
  for (int i = 0; i < 10; ++i) receipt_ids.push_back("r" + std::to_string(i));
  const EpochPlan plan = MaskedTailPlan(10, {2, 2});
  FirstStep record;
  RecordBatch(plan, 2, receipt_ids, /*micro_batches=*/2, &record);
  ASSERT_EQ(record.batch_size(), 2);
  for (int r = 0; r < 2; ++r) {
    const DealtSlots slots = plan.UpdateSlots(r, 2);
    EXPECT_EQ(record.batch(r).rank(), r);
    ASSERT_EQ(record.batch(r).receipt_ids_size(), static_cast<int>(slots.size()));
    for (size_t i = 0; i < slots.size(); ++i) {
      EXPECT_EQ(record.batch(r).dataset_indices(i), slots[i].dataset_index);
      EXPECT_EQ(record.batch(r).receipt_ids(i), receipt_ids[slots[i].dataset_index]);
      EXPECT_EQ(record.batch(r).valid(i), slots[i].valid);
      EXPECT_EQ(record.batch(r).micro_batch(i), static_cast<int>(i));  // 2 slots, 2 micro-batches
    }
  }
}

}  // namespace
}  // namespace receipt_parity

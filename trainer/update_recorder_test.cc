#include "trainer/update_recorder.h"

#include <filesystem>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "artifacts/artifact_stamp.h"
#include "gtest/gtest.h"
#include "io/json_file.h"
#include "model/training_test_support.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;

UpdateRecorderOptions Options(const TinyTrainingSet& set, const std::string& dir,
                              int64_t first_update, std::set<int64_t> records,
                              bool writer = true) {
  UpdateRecorderOptions options;
  options.world_size = 1;
  options.loss_weighting = "global_count";
  options.reducer = "allreduce_sum";
  options.first_update = first_update;
  options.writer = writer;
  options.record_updates = std::move(records);
  options.artifact_dir = dir;
  options.receipt_ids = &set.receipt_ids;
  return options;
}

TEST(UpdateRecorderTest, FreshRunRecordsTheFirstStepAndTheUpdatesAskedFor) {
  const TinyTrainingSet set = MakeTinyTrainingSet(4);
  UpdateRecorder recorder(Options(set, "unused", 0, {3, 9}));
  EXPECT_TRUE(recorder.RecordsFirstStep(0));
  EXPECT_FALSE(recorder.RecordsFirstStep(1));
  EXPECT_FALSE(recorder.RecordsUpdate(0));
  EXPECT_TRUE(recorder.RecordsUpdate(3));
  EXPECT_TRUE(recorder.RecordsUpdate(9));
  EXPECT_FALSE(recorder.RecordsUpdate(4));
}

TEST(UpdateRecorderTest, ResumedRunRecordsItsFirstUpdateButNoFirstStep) {
  const TinyTrainingSet set = MakeTinyTrainingSet(4);
  UpdateRecorder recorder(Options(set, "unused", 6, {8}));
  EXPECT_FALSE(recorder.RecordsFirstStep(0));
  EXPECT_FALSE(recorder.RecordsFirstStep(6));
  EXPECT_TRUE(recorder.RecordsUpdate(6));
  EXPECT_FALSE(recorder.RecordsUpdate(7));
  EXPECT_TRUE(recorder.RecordsUpdate(8));
}

TEST(UpdateRecorderTest, OnlyTheWriterRecords) {
  const TinyTrainingSet set = MakeTinyTrainingSet(4);
  UpdateRecorder fresh(Options(set, "unused", 0, {0, 2}, /*writer=*/false));
  UpdateRecorder resumed(Options(set, "unused", 6, {}, /*writer=*/false));
  EXPECT_FALSE(fresh.RecordsFirstStep(0));
  EXPECT_FALSE(fresh.RecordsUpdate(0));
  EXPECT_FALSE(fresh.RecordsUpdate(2));
  EXPECT_FALSE(resumed.RecordsUpdate(6));
  ASSERT_TRUE(fresh.Start(*MakeTinyModel()).ok());
  EXPECT_EQ(fresh.first_step().ByteSizeLong(), 0u);
}

// A fake update: gradients g, then parameters p + 1 after the "step".
void FakeUpdate(Classifier& model, float gradient) {
  for (auto& item : model.named_parameters()) {
    item.value().mutable_grad() = at::full_like(item.value(), gradient);
  }
}
void FakeStep(Classifier& model) {
  at::NoGradGuard no_grad;
  for (auto& item : model.named_parameters()) item.value().add_(1.0);
}

UpdateResult Result(double loss, int64_t accepted) {
  UpdateResult result;
  result.weighted_loss = loss;
  result.global_accepted = accepted;
  return result;
}

absl::Status RecordOne(UpdateRecorder& recorder, Classifier& model,
                       const EpochPlan& plan, int64_t total, int64_t u,
                       float gradient) {
  FakeUpdate(model, gradient);
  if (absl::Status s = recorder.BeforeOptimizerStep(total, model); !s.ok()) return s;
  FakeStep(model);
  return recorder.AfterOptimizerStep(total, plan, u, Result(0.25 * (total + 1), 4), model);
}

float FirstValue(const google::protobuf::Map<std::string, NamedTensor>& map,
                 const std::string& name) {
  return map.at(name).values(0);
}

TEST(UpdateRecorderTest, WritesFirstStepAndUpdateKWithTheirGradientsAndBatch) {
  const TinyTrainingSet set = MakeTinyTrainingSet(8);
  const EpochPlan plan = TinyPlan(8, {4});
  const std::string dir = FreshTestFolder("recorder_fresh");
  std::shared_ptr<Classifier> model = MakeTinyModel();
  const float before = model->named_parameters()["out.bias"][0].item<float>();
  UpdateRecorder recorder(Options(set, dir, 0, {0, 1}));
  ASSERT_TRUE(recorder.Start(*model).ok());
  ASSERT_TRUE(RecordOne(recorder, *model, plan, 0, 0, 0.5f).ok());
  ASSERT_TRUE(RecordOne(recorder, *model, plan, 1, 1, 0.75f).ok());

  const FirstStep& first = recorder.first_step();
  EXPECT_EQ(first.loss_weighting(), "global_count");
  EXPECT_EQ(first.reducer(), "allreduce_sum");
  EXPECT_EQ(first.world_size(), 1);
  ASSERT_EQ(first.parameter_order_size(), 2);
  EXPECT_EQ(first.parameter_order(1), "out.bias");
  EXPECT_FLOAT_EQ(FirstValue(first.parameters_before(), "out.bias"), before);
  EXPECT_FLOAT_EQ(FirstValue(first.gradients(), "out.bias"), 0.5f);
  EXPECT_FLOAT_EQ(FirstValue(first.parameters_after(), "out.bias"), before + 1);
  EXPECT_DOUBLE_EQ(first.loss(), 0.25);
  EXPECT_EQ(first.accepted_examples(), 4);
  ASSERT_EQ(first.batch_size(), 1);
  ASSERT_EQ(first.batch(0).receipt_ids_size(), 4);
  const Slot& slot = plan.UpdateSlots(0, 0)[0];
  EXPECT_EQ(first.batch(0).receipt_ids(0), set.receipt_ids[slot.dataset_index]);

  // update-0.json is the same update as first_step.json, not an empty record.
  FirstStep update0, update1;
  ASSERT_TRUE(ReadArtifact(dir + "/update-0.json", &update0).ok());
  ASSERT_TRUE(ReadArtifact(dir + "/update-1.json", &update1).ok());
  EXPECT_FLOAT_EQ(FirstValue(update0.gradients(), "out.bias"), 0.5f);
  EXPECT_EQ(update0.batch(0).receipt_ids(0), first.batch(0).receipt_ids(0));
  EXPECT_EQ(update0.parameter_order_size(), 2);
  EXPECT_TRUE(update0.parameters_before().empty());
  EXPECT_FLOAT_EQ(FirstValue(update1.gradients(), "out.bias"), 0.75f);
  EXPECT_FLOAT_EQ(FirstValue(update1.parameters_after(), "out.bias"), before + 2);
  EXPECT_DOUBLE_EQ(update1.loss(), 0.5);
  // The first step holds update 0 only.
  EXPECT_FLOAT_EQ(FirstValue(first.gradients(), "out.bias"), 0.5f);
}

TEST(UpdateRecorderTest, ResumedRunWritesOnlyItsFirstUpdateAndTheOnesAskedFor) {
  const TinyTrainingSet set = MakeTinyTrainingSet(8);
  const EpochPlan plan = TinyPlan(8, {4});
  const std::string dir = FreshTestFolder("recorder_resumed");
  std::shared_ptr<Classifier> model = MakeTinyModel();
  UpdateRecorder recorder(Options(set, dir, 5, {7}));
  ASSERT_TRUE(recorder.Start(*model).ok());
  for (int64_t total = 5; total < 8; ++total) {
    ASSERT_TRUE(RecordOne(recorder, *model, plan, total, total % 2, 1.0f).ok());
  }
  EXPECT_TRUE(fs::exists(dir + "/update-5.json"));
  EXPECT_FALSE(fs::exists(dir + "/update-6.json"));
  EXPECT_TRUE(fs::exists(dir + "/update-7.json"));
  EXPECT_EQ(recorder.first_step().ByteSizeLong(), 0u);
}

TEST(UpdateRecorderTest, UnwritableFolderIsAStatus) {
  const TinyTrainingSet set = MakeTinyTrainingSet(8);
  const EpochPlan plan = TinyPlan(8, {4});
  const std::string dir = FreshTestFolder("recorder_unwritable");
  // A file where the folder should be.
  ASSERT_TRUE(WriteJsonFile(dir + "/taken", FirstStep()).ok());
  std::shared_ptr<Classifier> model = MakeTinyModel();
  UpdateRecorder recorder(Options(set, dir + "/taken", 0, {0}));
  ASSERT_TRUE(recorder.Start(*model).ok());
  EXPECT_FALSE(RecordOne(recorder, *model, plan, 0, 0, 1.0f).ok());
}

}  // namespace
}  // namespace receipt_parity

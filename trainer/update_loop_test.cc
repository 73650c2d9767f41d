#include "trainer/update_loop.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/optim/sgd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "reducers/allreduce_sum_reducer.h"
#include "collectives/local_process_group.h"
#include "samplers/masked_tail.h"
#include "model/training_test_support.h"
#include "weighting/global_count_weighting.h"
#include "artifacts/run_summary.pb.h"

namespace receipt_parity {
namespace {

constexpr int kExamples = 16;

// Which global updates the step ran, in order.
class UpdateOrder : public UpdateObserver {
 public:
  absl::Status BeforeOptimizerStep(int64_t total, const Classifier&) override {
    totals.push_back(total);
    return absl::OkStatus();
  }
  absl::Status AfterOptimizerStep(int64_t, const EpochPlan&, int64_t,
                                  const UpdateResult&, const Classifier&) override {
    return absl::OkStatus();
  }
  std::vector<int64_t> totals;
};

// One rank's loop: model, optimizer, plugins, parts.
class RankLoop {
 public:
  RankLoop(const TinyTrainingSet& set, int rank, int world)
      : model_(MakeTinyModel()),
        optimizer_(model_->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9)),
        reducer_(*AllreduceSumReducer::Create(1 << 20)),
        policy_(*MaskedTailFactory().Create(MaskedTailOptions())),
        report_(rank, world, kExamples),
        world_(world) {
    step_parts_.model = model_.get();
    step_parts_.optimizer = &optimizer_;
    step_parts_.weighting = &weighting_;
    step_parts_.reducer = &reducer_;
    step_parts_.rank = rank;
    step_parts_.examples = &set.source;
    step_parts_.labels = &set.labels;
    step_parts_.class_counts = &set.class_counts;
  }

  // Runs from `start`, saving (through a recording saver) every
  // `every_updates`.
  absl::Status Run(TrainingCursor start, int64_t max_updates, int64_t every_updates,
                   c10d::ProcessGroup* group = nullptr, UpdateGate* gate = nullptr) {
    step_parts_.group = group;
    UpdateStep step(step_parts_);
    std::optional<CheckpointPlan> plan;
    if (every_updates > 0) plan = CheckpointPlan{"unused", static_cast<int>(every_updates), 2};
    CheckpointCadence cadence(plan, 1,
                              [this](int64_t generation, const TrainingCursor& cursor) {
                                saved.push_back(cursor);
                                SaveResult result;
                                result.generation = generation;
                                return absl::StatusOr<SaveResult>(result);
                              });
    const ProgressLog progress({/*writer=*/false, 1, max_updates, 2});
    UpdateSchedule schedule;
    schedule.sampler = policy_.get();
    schedule.num_examples = kExamples;
    schedule.world_size = world_;
    schedule.seed = 3;
    schedule.local_batch = std::vector<int>(world_, 4 / world_);
    schedule.epochs = 2;
    schedule.max_updates = max_updates;
    schedule.start = start;
    UpdateLoopParts parts;
    parts.step = &step;
    parts.observer = &order;
    parts.cadence = &cadence;
    parts.progress = &progress;
    parts.report = &report_;
    parts.gate = gate;
    absl::StatusOr<UpdateLoopEnd> end = RunUpdateLoop(schedule, parts);
    if (!end.ok()) return end.status();
    stopped_by = end->stopped_by;
    return absl::OkStatus();
  }

  RankReport Report() { return report_.Finish({}, 0, ""); }
  const RankReportBuilder& builder() const { return report_; }
  std::vector<at::Tensor> Parameters() const { return ParameterValues(*model_); }

  UpdateOrder order;
  std::vector<TrainingCursor> saved;
  std::string stopped_by;

 private:
  std::shared_ptr<Classifier> model_;
  torch::optim::SGD optimizer_;
  GlobalCountWeighting weighting_;
  AllreduceSumReducer reducer_;
  std::unique_ptr<SamplerPolicy> policy_;
  RankReportBuilder report_;
  int world_;
  UpdateStepParts step_parts_;
};

bool Equal(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!at::equal(a[i], b[i])) return false;
  }
  return true;
}

// masked_tail, but not declaring the same size every epoch (a team's
// policy that does not say so).
class UndeclaredSize : public SamplerPolicy {
 public:
  absl::StatusOr<GlobalOrder> Order(const OrderRequest& request) const override {
    return masked_tail_->Order(request);
  }

 private:
  std::unique_ptr<SamplerPolicy> masked_tail_ =
      *MaskedTailFactory().Create(MaskedTailOptions());
};

UpdateSchedule CountedSchedule(const SamplerPolicy& policy, int64_t epochs) {
  UpdateSchedule schedule;
  schedule.sampler = &policy;
  schedule.num_examples = 10;
  schedule.world_size = 2;
  schedule.local_batch = {2, 2};
  schedule.epochs = epochs;
  return schedule;
}

// 10 examples in updates of 4: 3 an epoch. A declared same size counts any
// number of epochs from the first; otherwise every epoch is planned, and
// what would not end at start is refused at once, naming epochs.
TEST(RunUpdateCountTest, CountsEveryEpochAndRefusesWhatWouldNotEnd) {
  std::unique_ptr<SamplerPolicy> declared = *MaskedTailFactory().Create(MaskedTailOptions());
  ASSERT_TRUE(declared->same_size_every_epoch());
  EXPECT_EQ(*RunUpdateCount(CountedSchedule(*declared, 5)), 15);
  EXPECT_EQ(*RunUpdateCount(CountedSchedule(*declared, 700000000)), 2100000000);
  absl::StatusOr<int64_t> too_many = RunUpdateCount(CountedSchedule(*declared, 2147483647));
  EXPECT_EQ(too_many.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(too_many.status().message()),
              ::testing::StartsWith("epochs: 2147483647 epochs of 3 updates are more than the "
                                    "2147483647 updates a run records"));
  UndeclaredSize undeclared;
  EXPECT_EQ(*RunUpdateCount(CountedSchedule(undeclared, 5)), 15);
  absl::StatusOr<int64_t> unplanned = RunUpdateCount(CountedSchedule(undeclared, 100000000));
  EXPECT_EQ(unplanned.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(unplanned.status().message()),
              ::testing::HasSubstr("epochs: 100000000 epochs of 12 slots are more than a start "
                                   "plans one by one"));
}

TEST(UpdateLoopTest, RunsEveryUpdateOfEveryEpochAndSavesOnTheCadence) {
  const TinyTrainingSet set = MakeTinyTrainingSet(kExamples);
  RankLoop loop(set, 0, 1);
  ASSERT_TRUE(loop.Run({}, 0, 3).ok());
  EXPECT_EQ(loop.order.totals, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(loop.builder().updates(), 8);
  EXPECT_EQ(loop.builder().totals().epoch_of_update,
            (std::vector<int64_t>{0, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(loop.builder().totals().accepted_per_update,
            (std::vector<int64_t>(8, 4)));
  ASSERT_EQ(loop.saved.size(), 2u);
  EXPECT_EQ(loop.saved[0].total_updates, 3);
  EXPECT_EQ(loop.saved[1].total_updates, 6);
  EXPECT_EQ(loop.saved[1].epoch, 1);
  EXPECT_EQ(loop.saved[1].update_in_epoch, 2);
  const RankReport report = loop.Report();
  ASSERT_EQ(report.per_rank_size(), 2);
  EXPECT_EQ(report.per_rank(0).accepted_examples(), kExamples);
  EXPECT_EQ(report.per_rank(1).epoch(), 1);
}

// Stopping at run.max_updates and continuing from the saved cursor runs
// exactly the updates the uninterrupted run runs.
TEST(UpdateLoopTest, StopAtMaxUpdatesThenResumeFromTheCursorEqualsOneRun) {
  const TinyTrainingSet set = MakeTinyTrainingSet(kExamples);
  RankLoop whole(set, 0, 1);
  ASSERT_TRUE(whole.Run({}, 0, 0).ok());

  RankLoop split(set, 0, 1);
  ASSERT_TRUE(split.Run({}, 5, 5).ok());
  EXPECT_EQ(split.builder().updates(), 5);
  ASSERT_EQ(split.saved.size(), 1u);
  const TrainingCursor cursor = split.saved[0];
  EXPECT_EQ(cursor.total_updates, 5);
  EXPECT_EQ(cursor.epoch, 1);
  EXPECT_EQ(cursor.update_in_epoch, 1);
  ASSERT_TRUE(split.Run(cursor, 0, 0).ok());
  EXPECT_EQ(split.order.totals, whole.order.totals);
  EXPECT_TRUE(Equal(split.Parameters(), whole.Parameters()));
}

// Stops the run once `at` updates are done, and counts its calls.
class StopAt : public UpdateGate {
 public:
  explicit StopAt(int64_t at) : at_(at) {}
  absl::StatusOr<std::optional<GateStop>> AfterUpdate(int64_t completed) override {
    seen.push_back(completed);
    if (completed == at_) return std::optional<GateStop>(GateStop{"test_stop", save_});
    return std::optional<GateStop>();
  }
  bool save_ = false;
  std::vector<int64_t> seen;

 private:
  int64_t at_;
};

TEST(UpdateLoopTest, AGateStopsTheRunAfterTheUpdateItNamesWithItsCheckpointSaved) {
  const TinyTrainingSet set = MakeTinyTrainingSet(kExamples);
  RankLoop loop(set, 0, 1);
  StopAt gate(6);
  ASSERT_TRUE(loop.Run({}, 0, 3, nullptr, &gate).ok());
  EXPECT_EQ(loop.stopped_by, "test_stop");
  EXPECT_EQ(gate.seen, (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(loop.order.totals, (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(loop.builder().updates(), 6);
  ASSERT_EQ(loop.saved.size(), 2u);  // the save after update 6 came first
  EXPECT_EQ(loop.saved[1].total_updates, 6);
  // The epoch's accounting counts the updates it ran, the stopping one too.
  const RankReport report = loop.Report();
  ASSERT_EQ(report.per_rank_size(), 2);
  EXPECT_EQ(report.per_rank(1).updates(), 2);
}

TEST(UpdateLoopTest, AGateThatAsksSavesWhereItStopsOnceOnly) {
  const TinyTrainingSet set = MakeTinyTrainingSet(kExamples);
  RankLoop loop(set, 0, 1);
  StopAt gate(5);
  gate.save_ = true;
  ASSERT_TRUE(loop.Run({}, 0, 3, nullptr, &gate).ok());
  ASSERT_EQ(loop.saved.size(), 2u);  // the cadence's at 3, the stop's at 5
  EXPECT_EQ(loop.saved[1].total_updates, 5);
  EXPECT_EQ(loop.saved[1].epoch, 1);
  EXPECT_EQ(loop.saved[1].update_in_epoch, 1);
  // Stopping where the cadence saves anyway saves once.
  RankLoop on_cadence(set, 0, 1);
  StopAt at_six(6);
  at_six.save_ = true;
  ASSERT_TRUE(on_cadence.Run({}, 0, 3, nullptr, &at_six).ok());
  ASSERT_EQ(on_cadence.saved.size(), 2u);
  EXPECT_EQ(on_cadence.saved[1].total_updates, 6);
}

TEST(UpdateLoopTest, AChainAsksEveryGateAndTheFirstStopWins) {
  const TinyTrainingSet set = MakeTinyTrainingSet(kExamples);
  RankLoop loop(set, 0, 1);
  StopAt later(4), sooner(2);
  GateChain chain({&later, &sooner});
  ASSERT_TRUE(loop.Run({}, 0, 0, nullptr, &chain).ok());
  EXPECT_EQ(loop.builder().updates(), 2);
  EXPECT_EQ(later.seen, (std::vector<int64_t>{1, 2}));  // asked at the stop too
}

TEST(UpdateLoopTest, ARunTheGateLetsGoEndsByItsSchedule) {
  const TinyTrainingSet set = MakeTinyTrainingSet(kExamples);
  RankLoop loop(set, 0, 1);
  StopAt gate(100);
  ASSERT_TRUE(loop.Run({}, 0, 0, nullptr, &gate).ok());
  EXPECT_EQ(loop.stopped_by, "");
  EXPECT_EQ(loop.builder().updates(), 8);
}

TEST(UpdateLoopTest, TwoRanksOverGlooRunTheSameUpdatesAndEndEqual) {
  const TinyTrainingSet set = MakeTinyTrainingSet(kExamples);
  std::vector<std::unique_ptr<RankLoop>> ranks;
  for (int r = 0; r < 2; ++r) ranks.push_back(std::make_unique<RankLoop>(set, r, 2));
  absl::Status status = RunOnLocalGroup(2, [&](int r, c10d::ProcessGroup& group) {
    return ranks[r]->Run({}, 0, 4, &group);
  });
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(ranks[0]->order.totals, ranks[1]->order.totals);
  EXPECT_EQ(ranks[0]->builder().updates(), 8);
  ASSERT_EQ(ranks[1]->saved.size(), 2u);
  EXPECT_EQ(ranks[1]->saved[0].epoch, 1);
  EXPECT_EQ(ranks[1]->saved[0].update_in_epoch, 0);
  EXPECT_TRUE(Equal(ranks[0]->Parameters(), ranks[1]->Parameters()));
  EXPECT_EQ(ranks[1]->Report().per_rank(0).rank(), 1);
}

}  // namespace
}  // namespace receipt_parity

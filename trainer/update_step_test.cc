#include "trainer/update_step.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/optim/sgd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "reducers/allreduce_sum_reducer.h"
#include "collectives/local_process_group.h"
#include "model/training_test_support.h"
#include "weighting/global_count_weighting.h"
#include "weighting/micro_batch_mean_weighting.h"

namespace receipt_parity {
namespace {

using ::testing::MatchesRegex;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr double kLearningRate = 0.1;

// One rank's model, optimizer and reducer over the tiny training set.
struct Rank {
  explicit Rank(const TinyTrainingSet& set, GradientReducer* reducer_override = nullptr)
      : model(MakeTinyModel()),
        optimizer(model->parameters(), torch::optim::SGDOptions(kLearningRate)),
        reducer(*AllreduceSumReducer::Create(1 << 20)) {
    parts.model = model.get();
    parts.optimizer = &optimizer;
    parts.weighting = &weighting;
    parts.reducer = reducer_override != nullptr ? reducer_override : &reducer;
    parts.examples = &set.source;
    parts.labels = &set.labels;
    parts.class_counts = &set.class_counts;
  }

  std::shared_ptr<Classifier> model;
  torch::optim::SGD optimizer;
  GlobalCountWeighting weighting;
  AllreduceSumReducer reducer;
  UpdateStepParts parts;
};

// Remembers the gradients before the step and the parameters after it.
class Recording : public UpdateObserver {
 public:
  absl::Status BeforeOptimizerStep(int64_t total_update,
                                   const Classifier& model) override {
    calls.push_back("before " + std::to_string(total_update));
    for (const auto& item : model.named_parameters()) {
      gradients.push_back(item.value().grad().detach().clone());
      before.push_back(item.value().detach().clone());
    }
    return absl::OkStatus();
  }
  absl::Status AfterOptimizerStep(int64_t total_update, const EpochPlan&,
                                  int64_t update, const UpdateResult& result,
                                  const Classifier&) override {
    calls.push_back("after " + std::to_string(total_update) + " (update " +
                    std::to_string(update) + ", accepted " +
                    std::to_string(result.global_accepted) + ")");
    return absl::OkStatus();
  }

  std::vector<std::string> calls;
  std::vector<at::Tensor> gradients;
  std::vector<at::Tensor> before;
};

TEST(UpdateStepTest, OneWorkerStepsOnTheGradientOfItsSlotsAndTellsTheObserver) {
  const TinyTrainingSet set = MakeTinyTrainingSet(10);
  const EpochPlan plan = TinyPlan(10, {4});  // updates of 4, 4, 2 slots
  Rank rank(set);
  UpdateStep step(rank.parts);
  Recording observer;

  absl::StatusOr<UpdateResult> result = step.Run(plan, 2, 7, &observer);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->local_slots, 2);
  EXPECT_EQ(result->global_accepted, 2);
  EXPECT_GT(result->weighted_loss, 0);
  EXPECT_THAT(observer.calls,
              ::testing::ElementsAre("before 7", "after 7 (update 2, accepted 2)"));
  // Plain SGD: after = before - lr * gradient, with the gradient the
  // observer saw before the step.
  const std::vector<at::Tensor> after = ParameterValues(*rank.model);
  ASSERT_EQ(after.size(), observer.gradients.size());
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_GT(observer.gradients[i].abs().sum().item<double>(), 0);
    EXPECT_TRUE(at::allclose(after[i], observer.before[i] - kLearningRate * observer.gradients[i]));
  }
}

// Two ranks holding half of each update, reduced with a SUM over a real
// Gloo group, step exactly as one worker holding the whole update.
TEST(UpdateStepTest, TwoRanksOverGlooStepLikeOneWorker) {
  const TinyTrainingSet set = MakeTinyTrainingSet(16);
  const EpochPlan one_plan = TinyPlan(16, {8});
  const EpochPlan two_plan = TinyPlan(16, {4, 4});
  Rank reference(set);
  ASSERT_TRUE(UpdateStep(reference.parts).Run(one_plan, 0, 0, nullptr).ok());

  std::vector<std::unique_ptr<Rank>> ranks;
  ranks.push_back(std::make_unique<Rank>(set));
  ranks.push_back(std::make_unique<Rank>(set));
  std::vector<double> loss_shares(2);
  absl::Status status = RunOnLocalGroup(2, [&](int r, c10d::ProcessGroup& group) {
    ranks[r]->parts.group = &group;
    ranks[r]->parts.rank = r;
    absl::StatusOr<UpdateResult> result =
        UpdateStep(ranks[r]->parts).Run(two_plan, 0, 0, nullptr);
    if (!result.ok()) return result.status();
    EXPECT_EQ(result->local_slots, 4);
    EXPECT_EQ(result->global_accepted, 8);
    loss_shares[r] = result->weighted_loss;
    return absl::OkStatus();
  });
  ASSERT_TRUE(status.ok()) << status;

  const std::vector<at::Tensor> expected = ParameterValues(*reference.model);
  const std::vector<at::Tensor> rank0 = ParameterValues(*ranks[0]->model);
  const std::vector<at::Tensor> rank1 = ParameterValues(*ranks[1]->model);
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_TRUE(at::equal(rank0[i], rank1[i])) << "parameter " << i;
    EXPECT_TRUE(at::allclose(rank0[i], expected[i], 1e-5, 1e-6)) << "parameter " << i;
  }
  EXPECT_GT(loss_shares[0], 0);
  EXPECT_GT(loss_shares[1], 0);
}

// Two ranks, several updates, with and without overlapping the backward
// pass, one bucket per parameter: the same parameters bitwise, and after
// every update each gradient is still a view into the same persistent
// buckets (its memory never moves).
TEST(UpdateStepTest, GradientsStayInTheirBucketsAndOverlapKeepsBitwiseParity) {
  const TinyTrainingSet set = MakeTinyTrainingSet(16);
  const EpochPlan plan = TinyPlan(16, {3, 5});
  std::vector<std::vector<at::Tensor>> final_params;
  for (bool overlap : {false, true}) {
    std::vector<std::unique_ptr<Rank>> ranks;
    std::vector<AllreduceSumReducer> reducers(
        2, *AllreduceSumReducer::Create(/*bucket_cap_bytes=*/1, overlap));
    for (int r = 0; r < 2; ++r) ranks.push_back(std::make_unique<Rank>(set, &reducers[r]));
    absl::Status status = RunOnLocalGroup(2, [&](int r, c10d::ProcessGroup& group) {
      ranks[r]->parts.group = &group;
      ranks[r]->parts.rank = r;
      UpdateStep step(ranks[r]->parts);
      std::vector<const void*> memory;
      for (int64_t u = 0; u < plan.num_updates(); ++u) {
        absl::StatusOr<UpdateResult> result = step.Run(plan, u, u, nullptr);
        if (!result.ok()) return result.status();
        std::vector<const void*> now;
        for (const at::Tensor& p : ranks[r]->model->parameters()) {
          if (!p.grad().defined()) return absl::InternalError("a gradient was set to none");
          now.push_back(p.grad().data_ptr());
        }
        if (u > 0 && now != memory) return absl::InternalError("a gradient moved");
        memory = now;
      }
      return absl::OkStatus();
    });
    ASSERT_TRUE(status.ok()) << status;
    const size_t params = ranks[0]->model->parameters().size();
    EXPECT_EQ(reducers[0].stats().collectives,
              static_cast<int64_t>(params) * plan.num_updates());
    EXPECT_TRUE(at::equal(ParameterValues(*ranks[0]->model)[0],
                          ParameterValues(*ranks[1]->model)[0]));
    final_params.push_back(ParameterValues(*ranks[0]->model));
  }
  for (size_t i = 0; i < final_params[0].size(); ++i) {
    EXPECT_TRUE(at::equal(final_params[0][i], final_params[1][i])) << "parameter " << i;
  }
}

// The parameters after update `update` of `plan` (one worker with
// `micro_batches`, or ranks over a real Gloo group), with `weighting`.
std::vector<at::Tensor> AfterOneUpdate(const TinyTrainingSet& set, const EpochPlan& plan,
                                       int64_t update, int micro_batches,
                                       const LossWeighting& weighting) {
  std::vector<std::unique_ptr<Rank>> ranks;
  for (int r = 0; r < plan.world_size(); ++r) ranks.push_back(std::make_unique<Rank>(set));
  absl::Status status = RunOnLocalGroup(plan.world_size(), [&](int r, c10d::ProcessGroup& group) {
    ranks[r]->parts.group = plan.world_size() > 1 ? &group : nullptr;
    ranks[r]->parts.rank = r;
    ranks[r]->parts.micro_batches = micro_batches;
    ranks[r]->parts.weighting = &weighting;
    return UpdateStep(ranks[r]->parts).Run(plan, update, update, nullptr).status();
  });
  EXPECT_TRUE(status.ok()) << status;
  return ParameterValues(*ranks[0]->model);
}

bool AllClose(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (!at::allclose(a[i], b[i], 1e-5, 1e-7)) return false;
  }
  return true;
}

// An update whose 16 slots hold 10 examples (a masked tail): 1 worker in
// 4 micro-batches, 2 in 2, 4 in 1 and 1 in 1 step alike with global_count;
// micro_batch_mean, each micro-batch's mean over 4, does not.
TEST(UpdateStepTest, AccumulationKeepsTheUpdateAndMicroBatchMeansDoNot) {
  const TinyTrainingSet set = MakeTinyTrainingSet(10);
  const GlobalCountWeighting global;
  const std::vector<at::Tensor> reference =
      AfterOneUpdate(set, TinyPlan(10, {16}), 0, 1, global);
  EXPECT_TRUE(AllClose(AfterOneUpdate(set, TinyPlan(10, {16}), 0, 4, global), reference));
  EXPECT_TRUE(AllClose(AfterOneUpdate(set, TinyPlan(10, {8, 8}), 0, 2, global), reference));
  EXPECT_TRUE(AllClose(AfterOneUpdate(set, TinyPlan(10, {4, 4, 4, 4}), 0, 1, global),
                       reference));
  const MicroBatchMeanWeighting micro_mean;
  EXPECT_TRUE(AllClose(AfterOneUpdate(set, TinyPlan(10, {16}), 0, 1, micro_mean), reference))
      << "one micro-batch: its mean is the update's";
  EXPECT_FALSE(AllClose(AfterOneUpdate(set, TinyPlan(10, {16}), 0, 4, micro_mean), reference));
}

// A schedule of factor 1 / (u + 1): each update steps at the base rate
// times its factor of the run's update index, whatever else happened.
class HarmonicSchedule : public LearningRateSchedule {
 public:
  double Factor(int64_t update) const override { return 1.0 / (update + 1); }
};

TEST(UpdateStepTest, EachUpdateStepsAtTheScheduledRateOfItsRunIndex) {
  const TinyTrainingSet set = MakeTinyTrainingSet(10);
  const EpochPlan plan = TinyPlan(10, {4});
  Rank rank(set);
  HarmonicSchedule schedule;
  rank.parts.schedule = &schedule;
  UpdateStep step(rank.parts);
  Recording observer;
  for (int64_t total : {7, 3}) {  // the index decides, not the order of calls
    observer.gradients.clear();
    observer.before.clear();
    absl::StatusOr<UpdateResult> result = step.Run(plan, 0, total, &observer);
    ASSERT_TRUE(result.ok()) << result.status();
    const double rate = kLearningRate / (total + 1);
    EXPECT_EQ(result->learning_rate, rate);
    EXPECT_EQ(rank.optimizer.param_groups()[0].options().get_lr(), rate);
    const std::vector<at::Tensor> after = ParameterValues(*rank.model);
    for (size_t i = 0; i < after.size(); ++i) {
      EXPECT_TRUE(at::allclose(after[i], observer.before[i] - rate * observer.gradients[i]));
    }
  }
  // Without a schedule: the base rate.
  Rank plain(set);
  absl::StatusOr<UpdateResult> result = UpdateStep(plain.parts).Run(plan, 0, 9, nullptr);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->learning_rate, kLearningRate);
  EXPECT_EQ(result->clip_factor, 1.0);
}

// The L2 norm of all of the model's gradients.
double GradientNorm(const std::vector<at::Tensor>& gradients) {
  double sum = 0;
  for (const at::Tensor& g : gradients) sum += g.pow(2).sum().item<double>();
  return std::sqrt(sum);
}

// Global clipping scales the reduced gradient by one factor on every rank:
// two ranks step as one worker clipping the whole update's gradient.
// Local clipping (each rank its own gradient) does not.
TEST(UpdateStepTest, GlobalClippingKeepsParityAndLocalClippingBreaksIt) {
  const TinyTrainingSet set = MakeTinyTrainingSet(16);
  const EpochPlan one_plan = TinyPlan(16, {8});
  const EpochPlan two_plan = TinyPlan(16, {6, 2});
  Rank unclipped(set);
  Recording raw;
  ASSERT_TRUE(UpdateStep(unclipped.parts).Run(one_plan, 0, 0, &raw).ok());
  const double max_norm = GradientNorm(raw.gradients) / 4;  // clips hard

  Rank reference(set);
  reference.parts.clipping = GradientClipping{max_norm, true};
  Recording clipped;
  absl::StatusOr<UpdateResult> one = UpdateStep(reference.parts).Run(one_plan, 0, 0, &clipped);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_NEAR(one->gradient_norm, GradientNorm(raw.gradients), 1e-6);
  EXPECT_NEAR(one->clip_factor, 0.25, 1e-5);
  EXPECT_NEAR(GradientNorm(clipped.gradients), max_norm, 1e-5);

  for (const bool global : {true, false}) {
    std::vector<std::unique_ptr<Rank>> ranks;
    ranks.push_back(std::make_unique<Rank>(set));
    ranks.push_back(std::make_unique<Rank>(set));
    std::vector<double> factors(2);
    absl::Status status = RunOnLocalGroup(2, [&](int r, c10d::ProcessGroup& group) {
      ranks[r]->parts.group = &group;
      ranks[r]->parts.rank = r;
      ranks[r]->parts.clipping = GradientClipping{max_norm, global};
      absl::StatusOr<UpdateResult> result =
          UpdateStep(ranks[r]->parts).Run(two_plan, 0, 0, nullptr);
      if (!result.ok()) return result.status();
      factors[r] = result->clip_factor;
      return absl::OkStatus();
    });
    ASSERT_TRUE(status.ok()) << status;
    const std::vector<at::Tensor> expected = ParameterValues(*reference.model);
    const std::vector<at::Tensor> rank0 = ParameterValues(*ranks[0]->model);
    bool all_close = true;
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_TRUE(at::equal(rank0[i], ParameterValues(*ranks[1]->model)[i]));
      all_close = all_close && at::allclose(rank0[i], expected[i], 1e-5, 1e-6);
    }
    if (global) {
      EXPECT_TRUE(all_close);
      EXPECT_EQ(factors[0], factors[1]);
      EXPECT_NEAR(factors[0], one->clip_factor, 1e-6);
    } else {
      EXPECT_FALSE(all_close) << "local clipping matched the one-worker update";
      EXPECT_NE(factors[0], factors[1]);
    }
  }
}

class FailingReducer : public GradientReducer {
 public:
  explicit FailingReducer(bool throws) : throws_(throws) {}
  absl::Status ReduceBucket(at::Tensor&, c10d::ProcessGroup&) override {
    TORCH_CHECK(!throws_, "reducer blew up");
    return absl::UnavailableError("peer gone");
  }
  ReduceStats stats() const override { return {}; }

 private:
  bool throws_;
};

absl::Status RunWithReducer(GradientReducer& reducer) {
  const TinyTrainingSet set = MakeTinyTrainingSet(8);
  const EpochPlan plan = TinyPlan(8, {4});
  Rank rank(set, &reducer);
  return RunOnLocalGroup(1, [&](int, c10d::ProcessGroup& group) {
    rank.parts.group = &group;
    return UpdateStep(rank.parts).Run(plan, 1, 5, nullptr).status();
  });
}

TEST(UpdateStepTest, ReducerErrorKeepsItsCodeAndNamesRankAndUpdate) {
  FailingReducer reducer(/*throws=*/false);
  absl::Status status = RunWithReducer(reducer);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("rank 0, update 5: peer gone"));
}

TEST(UpdateStepTest, LibTorchExceptionBecomesAnInternalStatus) {
  FailingReducer reducer(/*throws=*/true);
  absl::Status status = RunWithReducer(reducer);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal) << status;
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("rank 0, update 5: LibTorch: reducer blew up"));
}

TEST(UpdateStepTest, SlotsOutsideTheExamplesAreAStatusNotAnException) {
  const TinyTrainingSet set = MakeTinyTrainingSet(4);
  const EpochPlan plan = TinyPlan(12, {4});  // indexes up to 11
  Rank rank(set);
  std::vector<int> labels(12, 0);  // the weighting sees 12 labels
  rank.parts.labels = &labels;
  absl::Status status;
  for (int64_t u = 0; u < plan.num_updates() && status.ok(); ++u) {
    status = UpdateStep(rank.parts).Run(plan, u, u, nullptr).status();
  }
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal) << status;
  EXPECT_THAT(std::string(status.message()), StartsWith("rank 0, update "));
  EXPECT_THAT(std::string(status.message()),
              MatchesRegex(".*names dataset index [0-9]+, not one of the 4 examples"));
}

class FailingObserver : public UpdateObserver {
 public:
  absl::Status BeforeOptimizerStep(int64_t, const Classifier&) override {
    return absl::InternalError("disk full");
  }
  absl::Status AfterOptimizerStep(int64_t, const EpochPlan&, int64_t,
                                  const UpdateResult&, const Classifier&) override {
    ADD_FAILURE() << "the step went on after the observer failed";
    return absl::OkStatus();
  }
};

TEST(UpdateStepTest, ObserverErrorStopsTheUpdateBeforeTheStep) {
  const TinyTrainingSet set = MakeTinyTrainingSet(8);
  const EpochPlan plan = TinyPlan(8, {4});
  Rank rank(set);
  const std::vector<at::Tensor> before = ParameterValues(*rank.model);
  FailingObserver observer;
  absl::Status status = UpdateStep(rank.parts).Run(plan, 0, 0, &observer).status();
  EXPECT_EQ(status, absl::InternalError("disk full"));
  const std::vector<at::Tensor> after = ParameterValues(*rank.model);
  for (size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(at::equal(before[i], after[i]));
}


TEST(UpdateStepTest, ANanInTheExamplesStopsTheUpdateBeforeTheStepNamingIt) {
  TinyTrainingSet set = MakeTinyTrainingSet(8);
  set.examples.images[3].fill_(std::numeric_limits<float>::quiet_NaN());
  const EpochPlan plan = TinyPlan(8, {4});
  Rank rank(set);
  const std::vector<at::Tensor> before = ParameterValues(*rank.model);
  Recording observer;
  absl::Status status;
  int64_t failed_at = -1;
  for (int64_t u = 0; u < plan.num_updates() && status.ok(); ++u) {
    status = UpdateStep(rank.parts).Run(plan, u, u, &observer).status();
    failed_at = u;
  }
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_THAT(std::string(status.message()),
              StartsWith("rank 0, update " + std::to_string(failed_at) +
                         ": the reduced gradient of "));
  EXPECT_THAT(std::string(status.message()), HasSubstr("is not finite"));
  // The failing update never reached the observer's "before the step".
  EXPECT_EQ(observer.calls.size(), static_cast<size_t>(2 * failed_at));
}

TEST(UpdateStepTest, AParameterThatOverflowsStopsTheRunAfterTheStep) {
  const TinyTrainingSet set = MakeTinyTrainingSet(8);
  const EpochPlan plan = TinyPlan(8, {4});
  Rank rank(set);
  // Finite gradients, and a step that throws the parameters out of range:
  // the check for kept state sees it at once, the next update stops.
  rank.optimizer.param_groups()[0].options().set_lr(
      std::numeric_limits<double>::infinity());
  ASSERT_TRUE(CheckParametersFinite(*rank.model, 0, 0).ok());
  ASSERT_TRUE(UpdateStep(rank.parts).Run(plan, 0, 0, nullptr).ok());
  const absl::Status kept = CheckParametersFinite(*rank.model, 0, 1);
  EXPECT_EQ(kept.code(), absl::StatusCode::kFailedPrecondition) << kept;
  EXPECT_THAT(std::string(kept.message()), StartsWith("rank 0, update 1: parameter "));
  const absl::Status next = UpdateStep(rank.parts).Run(plan, 1, 1, nullptr).status();
  EXPECT_EQ(next.code(), absl::StatusCode::kFailedPrecondition) << next;
  EXPECT_THAT(std::string(next.message()), StartsWith("rank 0, update 1: "));
  EXPECT_THAT(std::string(next.message()), HasSubstr("is not finite"));
}

// run.fault's flipped bit lands on the largest-magnitude element across the
// layout, in place, and says what it did.
TEST(UpdateStepTest, AFlippedBitLandsOnTheLargestElementOfTheLayout) {
  std::vector<at::Tensor> layout = {at::tensor({0.5f, -0.25f}), at::tensor({0.125f, -3.0f})};
  absl::StatusOr<std::string> flipped = FlipLargestElementBit(layout, 31);
  ASSERT_TRUE(flipped.ok()) << flipped.status();
  EXPECT_EQ(*flipped, "element 3 of the reduced gradient (-3 -> 3)");
  EXPECT_EQ(layout[1][1].item<float>(), 3.0f);
  EXPECT_EQ(layout[0][0].item<float>(), 0.5f);
  // An exponent bit and a mantissa bit: 3 = 1.5 x 2^1.
  ASSERT_TRUE(FlipLargestElementBit(layout, 22).ok());  // the mantissa's top: 1.5 -> 1.0
  EXPECT_EQ(layout[1][1].item<float>(), 2.0f);
  const absl::StatusOr<std::string> empty = FlipLargestElementBit({}, 3);
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<at::Tensor> doubles = {at::ones({2}, at::kDouble)};
  EXPECT_EQ(FlipLargestElementBit(doubles, 3).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace receipt_parity

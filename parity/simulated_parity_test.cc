#include "parity/simulated_parity.h"

#include <random>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/json_file.h"
#include "plugins/plugin_registry.h"
#include "weighting/loss_weighting_options.pb.h"
#include "weighting/rank_mean_weighting.h"

namespace receipt_parity {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct Batch {
  at::Tensor inputs;
  at::Tensor labels;
  std::vector<int64_t> class_counts;
  ModelConfig model;
  std::vector<int64_t> input_shape;
  int classes = 0;
  uint64_t init_seed = 0;
};

// The seed's example: Linear(3, 2), init seed 37, four receipts.
Batch SeedExample() {
  Batch b;
  b.inputs = at::tensor({0.7f, 0.2f, 0.1f, 0.1f, 0.8f, 0.1f, 0.2f, 0.3f,
                         0.5f, 0.6f, 0.1f, 0.3f})
                 .reshape({4, 3});
  b.labels = at::tensor({0, 1, 1, 0}, at::kLong);
  b.class_counts = {2, 2};
  b.model.set_architecture("linear");
  b.input_shape = {3};
  b.classes = 2;
  b.init_seed = 37;
  return b;
}

// n random receipts of 6 features for an mlp with one hidden layer; the
// third class is rare in the training counts.
Batch RandomBatch(int n, uint64_t seed) {
  Batch b;
  at::manual_seed(seed);
  b.inputs = at::rand({n, 6});
  b.labels = at::randint(0, 3, {n}, at::kLong);
  b.class_counts = {120, 60, 7};
  b.model.set_architecture("mlp");
  b.model.add_hidden_units(5);
  b.input_shape = {6};
  b.classes = 3;
  b.init_seed = seed + 1;
  return b;
}

std::unique_ptr<LossWeighting> WeightingByName(
    const std::string& name,
    const google::protobuf::Message* options = nullptr) {
  auto factory = FindFactory<LossWeighting>(name);
  EXPECT_TRUE(factory.ok()) << factory.status();
  auto defaults = (*factory)->CreateEmptyOptions();
  auto weighting = (*factory)->Create(options ? *options : *defaults);
  EXPECT_TRUE(weighting.ok()) << weighting.status();
  return *std::move(weighting);
}

struct Check {
  std::string weighting = "global_count";
  std::string reducer = "allreduce_sum";
  bool partition_matched = false;
  const google::protobuf::Message* weighting_options = nullptr;
};

absl::StatusOr<ParityReport> RunParity(const Batch& batch,
                                       const std::vector<int>& split,
                                       const Check& check) {
  std::unique_ptr<LossWeighting> weighting =
      WeightingByName(check.weighting, check.weighting_options);
  SimulatedParityRequest request;
  request.make_model = [&batch] {
    return BuildClassifier(batch.model, batch.input_shape, batch.classes,
                           batch.init_seed);
  };
  request.inputs = batch.inputs;
  request.labels = batch.labels;
  request.split = split;
  request.class_counts = batch.class_counts;
  request.weighting = weighting.get();
  request.weighting_name = check.weighting;
  // Looked up on every call, so a ScopedFactoryOverride takes effect.
  request.make_reducer =
      [name = check.reducer]()
      -> absl::StatusOr<std::unique_ptr<GradientReducer>> {
    auto factory = FindFactory<GradientReducer>(name);
    if (!factory.ok()) return factory.status();
    return (*factory)->Create(*(*factory)->CreateEmptyOptions());
  };
  request.reducer_name = check.reducer;
  request.partition_matched = check.partition_matched;
  request.collective_timeout = absl::Seconds(20);
  return RunSimulatedParity(request);
}

ParityReport MustRun(const Batch& batch, const std::vector<int>& split,
                     const Check& check) {
  absl::StatusOr<ParityReport> report = RunParity(batch, split, check);
  EXPECT_TRUE(report.ok()) << report.status();
  return report.ok() ? *report : ParityReport();
}

std::string Describe(const std::vector<int>& split, const ParityReport& r) {
  return absl::StrCat("split ", absl::StrJoin(split, "+"), " ", r.weighting(),
                      " + ", r.reducer(), ": pass ", r.pass(),
                      ", max abs diff ", r.max_abs_diff(), ", max rel diff ",
                      r.max_rel_diff(), ", failures: ",
                      absl::StrJoin(r.failures(), "; "));
}

// A random split of n examples over `world` ranks (zeros allowed).
std::vector<int> RandomSplit(std::mt19937& rng, int n, int world) {
  std::vector<int> split(world, 0);
  for (int i = 0; i < n; ++i) ++split[rng() % world];
  return split;
}

TEST(SimulatedParityTest, SeedExamplePassesAndSaysItIsSimulated) {
  const std::vector<int> split = {3, 1};
  ParityReport report = MustRun(SeedExample(), split, Check());
  EXPECT_TRUE(report.pass()) << Describe(split, report);
  EXPECT_TRUE(report.simulated());
  EXPECT_EQ(report.note(), kSimulatedParityNote);
  EXPECT_THAT(report.split(), ElementsAre(3, 1));
  EXPECT_EQ(report.world_size(), 2);
  EXPECT_EQ(report.weighting(), "global_count");
  EXPECT_EQ(report.reducer(), "allreduce_sum");
  EXPECT_EQ(report.rtol(), 1e-6);
  EXPECT_EQ(report.atol(), 1e-7);
  EXPECT_EQ(report.accepted_examples(), 4);
  EXPECT_TRUE(report.ranks_agree());
  EXPECT_THAT(report.rank_weight_sums(), ElementsAre(0.75, 0.25));
  EXPECT_EQ(report.reducer_collectives(), 1);
  EXPECT_EQ(report.reducer_bytes(), (6 + 2) * 4);
  ASSERT_EQ(report.gradients_size(), 2);
  EXPECT_EQ(report.gradients(0).name(), "out.weight");
  EXPECT_THAT(report.gradients(0).shape(), ElementsAre(2, 3));
  EXPECT_EQ(report.gradients(1).name(), "out.bias");
  EXPECT_THAT(report.gradients(1).shape(), ElementsAre(2));
  // A vanishing reference would make the comparison vacuous.
  EXPECT_GT(report.gradients(0).max_abs_reference(), 1e-3);
  EXPECT_TRUE(report.failures().empty());

  const std::string json = ToJson(report);
  for (const char* key :
       {"\"simulated\": true", "\"pass\": true", "\"bitwise_equal\"",
        "\"partition_matched\": false", "\"max_abs_diff\"",
        "\"max_rel_diff\"", "\"parameters_after_step\"", "\"note\""}) {
    EXPECT_THAT(json, HasSubstr(key));
  }
}

// n random 8x8 receipts for a cnn with two synchronized batch norms.
Batch SyncBatchNormBatch(int n, uint64_t seed) {
  Batch b;
  at::manual_seed(seed);
  b.inputs = at::rand({n, 1, 8, 8});
  b.labels = at::randint(0, 3, {n}, at::kLong);
  b.class_counts = {10, 10, 10};
  b.model.set_architecture("cnn");
  b.model.add_conv_channels(4);
  b.model.add_conv_channels(6);
  b.model.add_hidden_units(8);
  b.model.set_batch_norm("sync");
  b.input_shape = {1, 8, 8};
  b.classes = 3;
  b.init_seed = seed + 1;
  return b;
}

// The ranks' statistics are summed over the Gloo group of threads, so each
// rank's batch norm normalizes by the whole update's; the tolerance is
// derived against fp64, per tensor. Per-rank batch norm on the same split
// does not pass.
TEST(SimulatedParityTest, SynchronizedBatchNormPassesOnUnevenSplits) {
  for (const std::vector<int>& split : {std::vector<int>{3, 1}, std::vector<int>{2, 1, 1}}) {
    ParityReport report = MustRun(SyncBatchNormBatch(4, 5), split, Check());
    EXPECT_TRUE(report.pass()) << Describe(split, report);
    EXPECT_THAT(report.tolerance_reason(), HasSubstr("derived (synchronized batch norm)"));
    ASSERT_GT(report.gradients_size(), 0);
    EXPECT_TRUE(report.gradients(0).has_atol());
    EXPECT_GE(report.gradients(0).atol(), 1e-7);
  }
  Batch per_rank = SyncBatchNormBatch(4, 5);
  per_rank.model.set_batch_norm("per_rank");
  ParityReport report = MustRun(per_rank, {3, 1}, Check());
  EXPECT_FALSE(report.pass()) << Describe({3, 1}, report);
  // The partition-matched reference does not apply to it.
  absl::StatusOr<ParityReport> matched =
      RunParity(SyncBatchNormBatch(4, 5), {3, 1}, {"global_count", "allreduce_sum", true});
  EXPECT_EQ(matched.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(matched.status().message(), HasSubstr("synchronized batch norm"));
}

TEST(SimulatedParityTest, SeedExampleWithDdpAveragingFails) {
  const std::vector<int> split = {3, 1};
  ParityReport report = MustRun(
      SeedExample(), split, {"rank_mean", "rank_average", false, nullptr});
  EXPECT_FALSE(report.pass()) << Describe(split, report);
  EXPECT_THAT(report.failures(), ElementsAre(HasSubstr("beyond atol")));
  EXPECT_THAT(report.rank_weight_sums(), ElementsAre(1.0, 1.0));
}

TEST(SimulatedParityTest, GlobalCountAllreduceSumPassesForNamedSplits) {
  for (const Batch& batch : {SeedExample(), RandomBatch(4, 11)}) {
    for (const std::vector<int>& split :
         std::vector<std::vector<int>>{{3, 1}, {2, 2}, {1, 3}, {4, 0}}) {
      ParityReport report = MustRun(batch, split, Check());
      EXPECT_TRUE(report.pass()) << Describe(split, report);
    }
  }
}

TEST(SimulatedParityTest, GlobalCountAllreduceSumPassesForRandomisedSplits) {
  std::mt19937 rng(20240611);
  int wider_than_two = 0;
  for (int trial = 0; trial < 14; ++trial) {
    const int world = 1 + static_cast<int>(rng() % 5);
    const int n = 1 + static_cast<int>(rng() % 24);
    wider_than_two += world > 2 ? 1 : 0;
    const std::vector<int> split = RandomSplit(rng, n, world);
    ParityReport report = MustRun(RandomBatch(n, 100 + trial), split, Check());
    EXPECT_TRUE(report.pass()) << "trial " << trial << ": "
                               << Describe(split, report);
  }
  EXPECT_GE(wider_than_two, 3);
}

TEST(SimulatedParityTest, RankMeanWithRankAverageFailsUnequalPassesEqual) {
  const Check ddp = {"rank_mean", "rank_average", false, nullptr};
  const Batch batch = RandomBatch(12, 5);
  for (const std::vector<int>& split : std::vector<std::vector<int>>{
           {9, 3}, {3, 9}, {12, 0}, {0, 12}, {7, 5}, {2, 5, 5}, {1, 2, 3, 6},
           {6, 6, 0}, {6, 6, 0, 0}}) {
    ParityReport report = MustRun(batch, split, ddp);
    EXPECT_FALSE(report.pass()) << Describe(split, report);
  }
  for (const std::vector<int>& split : std::vector<std::vector<int>>{
           {6, 6}, {4, 4, 4}, {3, 3, 3, 3}, {2, 2, 2, 2, 2, 2}, {12}}) {
    ParityReport report = MustRun(batch, split, ddp);
    EXPECT_TRUE(report.pass()) << Describe(split, report);
  }
  // The seed example too: 3+1 fails (above), 2+2 passes.
  EXPECT_TRUE(MustRun(SeedExample(), {2, 2}, ddp).pass());
}

TEST(SimulatedParityTest, MixingTheRulesFails) {
  const Batch batch = RandomBatch(8, 6);
  for (const std::vector<int>& split :
       std::vector<std::vector<int>>{{6, 2}, {4, 4}}) {
    // Own means summed: weights add up to the number of ranks.
    ParityReport sum_of_means =
        MustRun(batch, split, {"rank_mean", "allreduce_sum", false, nullptr});
    EXPECT_FALSE(sum_of_means.pass()) << Describe(split, sum_of_means);
    // Global weights averaged: the gradient shrinks by the world size.
    ParityReport averaged_global = MustRun(
        batch, split, {"global_count", "rank_average", false, nullptr});
    EXPECT_FALSE(averaged_global.pass()) << Describe(split, averaged_global);
  }
}

TEST(SimulatedParityTest, PartitionMatchedTwoRanksIsBitwiseEqual) {
  const Check matched = {"global_count", "allreduce_sum", true, nullptr};
  std::vector<std::pair<Batch, std::vector<int>>> cases;
  for (const std::vector<int>& split : std::vector<std::vector<int>>{
           {3, 1}, {2, 2}, {1, 3}, {4, 0}, {0, 4}}) {
    cases.push_back({SeedExample(), split});
  }
  std::mt19937 rng(99);
  for (int trial = 0; trial < 6; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 20);
    cases.push_back({RandomBatch(n, 300 + trial), RandomSplit(rng, n, 2)});
  }
  for (const auto& [batch, split] : cases) {
    ParityReport report = MustRun(batch, split, matched);
    EXPECT_TRUE(report.partition_matched());
    EXPECT_TRUE(report.bitwise_equal()) << Describe(split, report);
    EXPECT_TRUE(report.pass()) << Describe(split, report);
    EXPECT_EQ(report.max_abs_diff(), 0) << Describe(split, report);
  }
}

TEST(SimulatedParityTest, PartitionMatchedCatchesTheWrongReducer) {
  ParityReport report =
      MustRun(SeedExample(), {2, 2},
              {"global_count", "rank_average", true, nullptr});
  EXPECT_FALSE(report.bitwise_equal());
  EXPECT_FALSE(report.pass());
  EXPECT_THAT(report.failures(), testing::Contains(HasSubstr("bitwise")));
}

TEST(SimulatedParityTest, PartitionMatchedMoreRanksPassWithinTolerance) {
  const Batch batch = RandomBatch(10, 8);
  ParityReport report = MustRun(
      batch, {3, 3, 4}, {"global_count", "allreduce_sum", true, nullptr});
  EXPECT_TRUE(report.pass()) << Describe({3, 3, 4}, report);
}

TEST(SimulatedParityTest, ClassBalancedAllreduceSumPasses) {
  std::mt19937 rng(4242);
  for (int trial = 0; trial < 6; ++trial) {
    const int world = 2 + static_cast<int>(rng() % 3);
    const int n = 2 + static_cast<int>(rng() % 16);
    const std::vector<int> split = RandomSplit(rng, n, world);
    ParityReport report =
        MustRun(RandomBatch(n, 500 + trial), split,
                {"class_balanced", "allreduce_sum", false, nullptr});
    EXPECT_TRUE(report.pass()) << Describe(split, report);
    double weight_sum = 0;
    for (double w : report.rank_weight_sums()) weight_sum += w;
    EXPECT_NEAR(weight_sum, 1.0, 1e-12);
  }
  ClassBalancedOptions sqrt_options;
  sqrt_options.set_power(0.5);
  sqrt_options.set_smoothing(1);
  EXPECT_TRUE(MustRun(RandomBatch(9, 77), {5, 4},
                      {"class_balanced", "allreduce_sum", false, &sqrt_options})
                  .pass());
  EXPECT_FALSE(MustRun(RandomBatch(9, 77), {6, 3},
                       {"class_balanced", "rank_average", false, nullptr})
                   .pass());
}

// A swapped-in wrong rule under the right name is caught.
class WrongGlobalCountFactory
    : public TypedFactory<LossWeighting, GlobalCountOptions> {
 public:
  std::string name() const override { return "global_count"; }

 private:
  absl::StatusOr<std::unique_ptr<LossWeighting>> CreateTyped(
      const GlobalCountOptions&) const override {
    return std::make_unique<RankMeanWeighting>();
  }
};

// Leaves every rank's gradient alone and returns `result`: with OK, a
// reducer that forgets to reduce; otherwise one that fails.
class StubReducer : public GradientReducer {
 public:
  explicit StubReducer(absl::Status result) : result_(std::move(result)) {}
  absl::Status ReduceBucket(at::Tensor&, c10d::ProcessGroup&) override {
    return result_;
  }
  ReduceStats stats() const override { return {}; }

 private:
  absl::Status result_;
};

class NoReductionFactory
    : public TypedFactory<GradientReducer, GlobalCountOptions> {
 public:
  std::string name() const override { return "allreduce_sum"; }

 private:
  absl::StatusOr<std::unique_ptr<GradientReducer>> CreateTyped(
      const GlobalCountOptions&) const override {
    return std::make_unique<StubReducer>(absl::OkStatus());
  }
};

TEST(SimulatedParityTest, SwappedInWrongPluginsFail) {
  {
    WrongGlobalCountFactory wrong;
    ScopedFactoryOverride<LossWeighting> swap(&wrong);
    EXPECT_FALSE(MustRun(SeedExample(), {3, 1}, Check()).pass());
  }
  {
    NoReductionFactory wrong;
    ScopedFactoryOverride<GradientReducer> swap(&wrong);
    ParityReport report = MustRun(SeedExample(), {2, 2}, Check());
    EXPECT_FALSE(report.pass());
    EXPECT_FALSE(report.ranks_agree());
  }
  EXPECT_TRUE(MustRun(SeedExample(), {3, 1}, Check()).pass());
}

TEST(SimulatedParityTest, ReducerErrorsComeBackAsStatus) {
  const Batch batch = SeedExample();
  auto weighting = WeightingByName("global_count");
  SimulatedParityRequest request;
  request.make_model = [&batch] {
    return BuildClassifier(batch.model, batch.input_shape, batch.classes,
                           batch.init_seed);
  };
  request.inputs = batch.inputs;
  request.labels = batch.labels;
  request.split = {3, 1};
  request.class_counts = batch.class_counts;
  request.weighting = weighting.get();
  request.make_reducer =
      []() -> absl::StatusOr<std::unique_ptr<GradientReducer>> {
    return std::make_unique<StubReducer>(absl::UnavailableError("peer lost"));
  };
  request.reducer_name = "failing";
  absl::StatusOr<ParityReport> report = RunSimulatedParity(request);
  EXPECT_EQ(report.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(report.status().message(),
              HasSubstr("reducer 'failing': rank 0 of 2: peer lost"));
}

TEST(SimulatedParityTest, BadRequestsNameTheField) {
  const Batch batch = SeedExample();
  auto expect_invalid = [&](std::vector<int> split, const Batch& b,
                            const std::string& field) {
    absl::StatusOr<ParityReport> report = RunParity(b, split, Check());
    EXPECT_EQ(report.status().code(), absl::StatusCode::kInvalidArgument)
        << field;
    EXPECT_THAT(report.status().message(), HasSubstr(field));
  };
  expect_invalid({3, 2}, batch, "inputs: the split 3,2 adds up to 5");
  expect_invalid({}, batch, "split: needs at least one rank");
  expect_invalid({5, -1}, batch, "split: rank 1 holds -1");
  expect_invalid({0, 0}, batch, "split: 0,0 holds no example");
  Batch bad_label = batch;
  bad_label.labels = at::tensor({0, 1, 2, 0}, at::kLong);
  expect_invalid({3, 1}, bad_label, "labels: example 2 has label 2");
  Batch absent_class = batch;
  absent_class.class_counts = {4, 0};
  expect_invalid({3, 1}, absent_class, "labels: example 1 has label 1");
  Batch float_labels = batch;
  float_labels.labels = batch.labels.to(at::kFloat);
  expect_invalid({3, 1}, float_labels, "labels: must be int64");

  SimulatedParityRequest empty;
  EXPECT_EQ(RunSimulatedParity(empty).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace receipt_parity

#include "bench/scaling_plan.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "model/model_options.pb.h"
#include "reducers/reducer_options.pb.h"

namespace receipt_parity {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

constexpr char kBase[] = R"pb(
  data {
    synthetic { num_identities: 400 rare_class_fraction: 0.04 seed: 11 }
    views_per_identity: 2
    validation_fraction: 0.2
    image_size: 32
  }
  model { architecture: "cnn" conv_channels: [ 8, 16 ] hidden_units: [ 32 ] }
  optimizer { sgd { learning_rate: 0.05 momentum: 0.9 } }
  seeds { model_init: 37 sampler: 1234 }
  global_batch: 32
  world_size: 1
  epochs: 2
  sampler { name: "masked_tail" }
  checkpoint { every_updates: 10 keep_last: 2 }
  run { output_dir: "out/x" log_every_updates: 10 fault { kill_rank: 1 } }
)pb";

TrainingConfig Base() {
  absl::StatusOr<TrainingConfig> base = ParseBaseConfig(kBase, "base.pbtxt");
  EXPECT_TRUE(base.ok()) << base.status();
  return *base;
}

TEST(ParseBaseConfigTest, SyntaxErrorNamesFileLineAndColumn) {
  absl::StatusOr<TrainingConfig> base =
      ParseBaseConfig("world_size: 1\nglobal_batch: [\n", "base.pbtxt");
  ASSERT_FALSE(base.ok());
  EXPECT_EQ(base.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(base.status().message(), HasSubstr("base.pbtxt:2:"));
}

TEST(ParseBaseConfigTest, RefusesWhatCannotBeBenchmarked) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"pb(data { manifest_path: "x.csv" } model { architecture: "mlp" }
            optimizer { sgd {} } global_batch: 4)pb",
       "data"},
      {R"pb(data { synthetic { num_identities: 10 } }
            optimizer { sgd {} } global_batch: 4)pb",
       "model"},
      {R"pb(data { synthetic { num_identities: 10 } } model { architecture: "mlp" }
            optimizer { adamw {} } global_batch: 4)pb",
       "optimizer"},
      {R"pb(data { synthetic { num_identities: 10 } } model { architecture: "mlp" }
            optimizer { sgd {} } global_batch: 5 world_size: 2)pb",
       "global_batch"},
      // 6 per rank do not cut into 4 micro-batches.
      {R"pb(data { synthetic { num_identities: 10 } } model { architecture: "mlp" }
            optimizer { sgd {} } global_batch: 12 world_size: 2)pb",
       "global_batch: each rank's 6 examples"},
  };
  for (const auto& [text, field] : cases) {
    absl::StatusOr<TrainingConfig> base = ParseBaseConfig(text, "b.pbtxt");
    ASSERT_FALSE(base.ok()) << text;
    EXPECT_EQ(base.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(base.status().message(), HasSubstr(absl::StrCat("b.pbtxt: ", field)));
  }
}

TEST(BenchmarkModelsTest, ComputeBoundIsTheBaseModelAndMlpIsAboutQuarterMillion) {
  TrainingConfig base = Base();
  base.set_world_size(2);  // per-rank batch = global / world
  const std::vector<BenchmarkModel> models = BenchmarkModels(base);
  ASSERT_EQ(models.size(), 2u);
  EXPECT_EQ(models[0].name, "compute_bound");
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(models[0].model,
                                                                 base.model()));
  EXPECT_EQ(models[0].batch_per_rank, base.global_batch() / 2);
  EXPECT_EQ(models[0].image_size, base.data().image_size());

  const BenchmarkModel& mlp = models[1];
  EXPECT_EQ(mlp.name, "communication_bound");
  EXPECT_EQ(mlp.model.architecture(), "mlp");
  EXPECT_EQ(mlp.image_size, 32);
  EXPECT_EQ(mlp.batch_per_rank, 32);
  // Parameters of flatten -> hidden (ReLU) ... -> 4 classes.
  int64_t features = mlp.image_size * mlp.image_size;
  int64_t parameters = 0;
  for (int h : mlp.model.hidden_units()) {
    parameters += features * h + h;
    features = h;
  }
  parameters += features * 4 + 4;
  EXPECT_GE(parameters, 225000);
  EXPECT_LE(parameters, 275000);
}

TEST(TrainerConfigTest, SetsTheRunAndKeepsDataOptimizerSeedsPlugins) {
  const TrainingConfig base = Base();
  const BenchmarkModel mlp = CommunicationBoundMlp();
  const TrainingConfig c = TrainerConfig(base, mlp, 2, 300);
  EXPECT_EQ(c.world_size(), 2);
  EXPECT_EQ(c.global_batch(), 2 * mlp.batch_per_rank);
  EXPECT_TRUE(c.local_batch_sizes().empty());
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(c.model(), mlp.model));
  EXPECT_EQ(c.run().max_updates(), 300);
  EXPECT_EQ(c.run().intra_op_threads(), 1);
  EXPECT_TRUE(c.run().output_dir().empty());
  EXPECT_FALSE(c.run().has_fault());
  EXPECT_EQ(c.checkpoint().every_updates(), 0);
  EXPECT_GE(c.run().collective_timeout_seconds(), 1);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(c.optimizer(),
                                                                 base.optimizer()));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(c.seeds(), base.seeds()));
  EXPECT_EQ(c.sampler().name(), base.sampler().name());
  EXPECT_EQ(c.data().synthetic().num_identities(),
            base.data().synthetic().num_identities());
}

TEST(EpochsForTest, HoldsTheUpdatesEvenWithTheSmallestSplit) {
  for (int ids : {40, 400, 1000}) {
    for (double val : {0.0, 0.2, 0.5}) {
      for (int batch : {8, 32, 64}) {
        for (int updates : {1, 12, 4000}) {
          DataConfig data;
          data.mutable_synthetic()->set_num_identities(ids);
          data.set_views_per_identity(2);
          data.set_validation_fraction(val);
          // The fewest training views the split can leave, and the fewest
          // updates an epoch then holds (drop_tail: floor).
          const int64_t views = (static_cast<int64_t>(std::floor(ids * (1 - val))) - 1) * 2;
          const int64_t per_epoch = std::max<int64_t>(1, views / batch);
          const int epochs = EpochsFor(data, batch, updates);
          EXPECT_GE((epochs - 1) * per_epoch, updates)
              << ids << " ids, val " << val << ", batch " << batch;
          EXPECT_LE((epochs - 2) * per_epoch, updates) << "not needlessly many";
        }
      }
    }
  }
}

TEST(ArgumentsTest, BaselinesGetTheSameModelBatchAndOptimizer) {
  const TrainingConfig base = Base();
  const BenchmarkModel cnn = BenchmarkModels(base)[0];
  const std::vector<std::string> ddp =
      DdpArguments("ddp.py", cnn, base.optimizer(), {"p.f32", "p.i64"}, 2, 100, 33,
                   "r.json");
  EXPECT_EQ(ddp[0], "ddp.py");
  for (const char* arg :
       {"--architecture=cnn", "--conv-channels=8,16", "--hidden-units=32",
        "--image-size=32", "--batch-per-rank=32", "--world-size=2",
        "--updates=100", "--no-sync-updates=33", "--learning-rate=0.05",
        "--momentum=0.9", "--pool-images=p.f32", "--pool-labels=p.i64",
        "--out=r.json"}) {
    EXPECT_THAT(ddp, Contains(arg));
  }
  const std::vector<std::string> bare =
      BareArguments(cnn, base.optimizer(), {"p.f32", "p.i64"}, 5, 100, 2.5, "b.json");
  ModelConfig parsed;
  ASSERT_TRUE(absl::StartsWith(bare[0], "--model="));
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(bare[0].substr(8), &parsed));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(parsed, cnn.model));
  for (const char* arg : {"--image_size=32", "--batch=32", "--warmup_updates=5",
                          "--updates=100", "--max_seconds=2.5",
                          "--learning_rate=0.05", "--momentum=0.9",
                          "--pool_images=p.f32", "--pool_labels=p.i64", "--out=b.json"}) {
    EXPECT_THAT(bare, Contains(arg));
  }
}

TEST(UpdatesForTest, AimsAtTheSecondsWithinBounds) {
  EXPECT_EQ(UpdatesFor(6, 0.00390625, 100, 4000), 1536);  // 6 s / 2^-8 s
  EXPECT_EQ(UpdatesFor(6, 0.0001, 100, 4000), 4000);
  EXPECT_EQ(UpdatesFor(6, 1.0, 100, 4000), 100);
  EXPECT_EQ(UpdatesFor(6, 0, 100, 4000), 4000);
}

TEST(ScalingPlanTest, ReducerVariantsSetTheReducerAndLauncher) {
  TrainingConfig base;
  base.mutable_reducer()->set_name("allreduce_sum");
  base.mutable_run()->set_launcher("local");
  const TrainingConfig same = WithTrainerVariant(base, TrainerVariant::kAsConfigured, 64);
  EXPECT_EQ(same.SerializeAsString(), base.SerializeAsString());

  const TrainingConfig overlapped =
      WithTrainerVariant(base, TrainerVariant::kBucketsOverlapped, 1000);
  AllreduceSumOptions options;
  ASSERT_TRUE(overlapped.reducer().options().UnpackTo(&options));
  EXPECT_EQ(options.bucket_cap_bytes(), 1000);
  EXPECT_TRUE(options.overlap_backward());
  const TrainingConfig after =
      WithTrainerVariant(base, TrainerVariant::kBucketsNotOverlapped, 1000);
  ASSERT_TRUE(after.reducer().options().UnpackTo(&options));
  EXPECT_FALSE(options.overlap_backward());
  EXPECT_EQ(after.run().launcher(), "local");

  const TrainingConfig mpi = WithTrainerVariant(overlapped, TrainerVariant::kOverMpi, 1000);
  EXPECT_EQ(mpi.reducer().name(), "mpi_allreduce");
  EXPECT_FALSE(mpi.reducer().has_options());
  EXPECT_EQ(mpi.run().launcher(), "mpirun");
}

TEST(ScalingPlanTest, AccumulationVariantsCutTheSameGlobalBatch) {
  TrainingConfig base;
  base.set_global_batch(32);
  base.set_world_size(2);
  base.mutable_reducer()->set_name("allreduce_sum");
  for (const auto& [how, steps] :
       {std::pair{TrainerVariant::kAccumulation2, 2},
        std::pair{TrainerVariant::kAccumulation4, 4}}) {
    const TrainingConfig cut = WithTrainerVariant(base, how, 1000);
    EXPECT_EQ(cut.accumulation_steps(), steps);
    EXPECT_EQ(cut.global_batch(), 32);
    EXPECT_EQ(cut.reducer().SerializeAsString(), base.reducer().SerializeAsString());
    EXPECT_EQ(AccumulationStepsOf(how), steps);
  }
  EXPECT_FALSE(WithTrainerVariant(base, TrainerVariant::kOverMpi, 1000)
                   .has_accumulation_steps());
  EXPECT_EQ(AccumulationStepsOf(TrainerVariant::kAsConfigured), 1);
  EXPECT_EQ(VariantLabel(TrainerVariant::kAccumulation4, 8),
            ", 4 micro-batches per update (accumulation_steps 4, the same "
            "global batch)");
}

TEST(ScalingPlanTest, OrderedSumVariantChunksHalfARanksBatch) {
  TrainingConfig base;
  base.set_global_batch(64);
  base.set_world_size(2);
  base.mutable_sampler()->set_name("masked_tail");
  base.mutable_reducer()->set_name("allreduce_sum");
  const TrainingConfig ordered = WithTrainerVariant(base, TrainerVariant::kOrderedSum, 1000);
  EXPECT_EQ(ordered.reducer().name(), "ordered_sum");
  OrderedSumOptions options;
  ASSERT_TRUE(ordered.reducer().options().UnpackTo(&options));
  // 32 per rank: chunks of 16, two per rank, four per update.
  EXPECT_EQ(options.chunk_slots(), 16);
  EXPECT_EQ(ordered.global_batch(), 64);
  EXPECT_FALSE(ordered.has_accumulation_steps());
  EXPECT_EQ(ordered.sampler().name(), "masked_tail");  // only the reducer differs
  EXPECT_EQ(OrderedSumChunkSlots(1), 1);
  EXPECT_EQ(OrderedSumChunkSlots(7), 3);
  EXPECT_EQ(VariantTag(TrainerVariant::kOrderedSum), "_ordered_sum");
  // One chunk a rank: its whole batch.
  const TrainingConfig whole =
      WithTrainerVariant(base, TrainerVariant::kOrderedSumWholeShares, 1000);
  ASSERT_TRUE(whole.reducer().options().UnpackTo(&options));
  EXPECT_EQ(options.chunk_slots(), 32);
  EXPECT_EQ(whole.reducer().name(), "ordered_sum");
}

TEST(ScalingPlanTest, BatchNormVariantsSetTheNormAndTheMicroBatchesOnly) {
  TrainingConfig base;
  base.set_global_batch(64);
  base.set_world_size(2);
  base.mutable_model()->set_architecture("cnn");
  base.mutable_model()->add_conv_channels(8);
  base.mutable_reducer()->set_name("allreduce_sum");
  const struct {
    TrainerVariant how;
    const char* norm;
    int steps;
  } cases[] = {{TrainerVariant::kPerRankBatchNorm, "per_rank", 1},
               {TrainerVariant::kSyncBatchNorm, "sync", 1},
               {TrainerVariant::kPerRankBatchNormAccumulation2, "per_rank", 2},
               {TrainerVariant::kSyncBatchNormAccumulation2, "sync", 2},
               {TrainerVariant::kPerRankBatchNormAccumulation4, "per_rank", 4},
               {TrainerVariant::kSyncBatchNormAccumulation4, "sync", 4}};
  for (const auto& c : cases) {
    const TrainingConfig normed = WithTrainerVariant(base, c.how, 1000);
    EXPECT_EQ(normed.model().batch_norm(), c.norm);
    EXPECT_EQ(normed.has_accumulation_steps(), c.steps > 1);
    if (c.steps > 1) EXPECT_EQ(normed.accumulation_steps(), c.steps);
    EXPECT_EQ(AccumulationStepsOf(c.how), c.steps);
    EXPECT_EQ(normed.global_batch(), 64);
    EXPECT_EQ(normed.reducer().SerializeAsString(), base.reducer().SerializeAsString());
    // Per-rank batch norm fails parity, as it should: trained to its end.
    const bool per_rank = std::string(c.norm) == "per_rank";
    EXPECT_EQ(normed.parity().has_stop_on_failure(), per_rank);
    EXPECT_EQ(ExpectedExitCode(c.how), per_rank ? 3 : 0);
  }
  EXPECT_EQ(BatchNormOf(TrainerVariant::kAccumulation2), "");
  EXPECT_EQ(ExpectedExitCode(TrainerVariant::kOrderedSum), 0);
  EXPECT_EQ(VariantLabel(TrainerVariant::kSyncBatchNormAccumulation2, 8),
            ", batch_norm \"sync\", 2 micro-batch(es) per update");
  BenchmarkModel cnn;
  cnn.model = base.model();
  EXPECT_TRUE(TakesBatchNorm(cnn));
  EXPECT_FALSE(TakesBatchNorm(CommunicationBoundMlp()));
}

TEST(ScalingPlanTest, VariantsHaveDistinctRunNames) {
  const std::vector<TrainerVariant> all = {
      TrainerVariant::kAsConfigured, TrainerVariant::kBucketsOverlapped,
      TrainerVariant::kBucketsNotOverlapped, TrainerVariant::kOverMpi,
      TrainerVariant::kAccumulation2, TrainerVariant::kAccumulation4,
      TrainerVariant::kOrderedSum, TrainerVariant::kOrderedSumWholeShares,
      TrainerVariant::kChecksOff,
      TrainerVariant::kChecksOffOverMpi, TrainerVariant::kPerRankBatchNorm,
      TrainerVariant::kSyncBatchNorm, TrainerVariant::kPerRankBatchNormAccumulation2,
      TrainerVariant::kSyncBatchNormAccumulation2, TrainerVariant::kPerRankBatchNormAccumulation4,
      TrainerVariant::kSyncBatchNormAccumulation4};
  std::set<std::string> tags;
  for (TrainerVariant how : all) tags.insert(VariantTag(how));
  EXPECT_EQ(tags.size(), all.size());
  EXPECT_EQ(VariantTag(TrainerVariant::kOverMpi), "_mpi");
  EXPECT_EQ(VariantLabel(TrainerVariant::kAsConfigured, 8), "");
  EXPECT_EQ(VariantLabel(TrainerVariant::kBucketsNotOverlapped, 8),
            " (allreduce_sum, buckets of <= 8 bytes, after backward)");
}

TEST(ScalingPlanTest, TheChecksOffVariantsChangeOnlyTheChecks) {
  TrainingConfig base;
  base.set_world_size(2);
  base.set_global_batch(8);
  base.mutable_reducer()->set_name("allreduce_sum");
  base.mutable_parity()->set_rtol(1e-6);
  const TrainingConfig off = WithTrainerVariant(base, TrainerVariant::kChecksOff, 1000);
  EXPECT_FALSE(off.parity().every_update());
  TrainingConfig back = off;
  back.mutable_parity()->clear_every_update();
  EXPECT_EQ(back.SerializeAsString(), base.SerializeAsString());
  const TrainingConfig mpi = WithTrainerVariant(base, TrainerVariant::kChecksOffOverMpi, 1000);
  EXPECT_FALSE(mpi.parity().every_update());
  EXPECT_EQ(mpi.reducer().name(), "mpi_allreduce");
  EXPECT_EQ(mpi.run().launcher(), "mpirun");
  EXPECT_EQ(VariantLabel(TrainerVariant::kChecksOff, 8), ", the every-update checks off");
}

TEST(ScalingPlanTest, ModelRoutesNameTheSameLayersAnotherWay) {
  TrainingConfig base;
  base.mutable_model()->set_architecture("mlp");
  base.mutable_model()->add_hidden_units(244);
  const BenchmarkModel mlp = CommunicationBoundMlp();
  EXPECT_EQ(BenchmarkModelKwargs(mlp),
            "{\"architecture\": \"mlp\", \"conv_channels\": [], \"hidden_units\": [244], "
            "\"image_size\": 32}");
  const TrainingConfig same = WithModelRoute(base, mlp, ModelRoute::kBuiltIn, "x");
  EXPECT_EQ(same.SerializeAsString(), base.SerializeAsString());

  const TrainingConfig script = WithModelRoute(base, mlp, ModelRoute::kTorchScript, "/m/a.pt");
  EXPECT_EQ(script.model().name(), "torchscript");
  EXPECT_EQ(script.model().hidden_units_size(), 0);
  TorchScriptModelOptions script_options;
  ASSERT_TRUE(script.model().options().UnpackTo(&script_options));
  EXPECT_EQ(script_options.path(), "/m/a.pt");

  const TrainingConfig python =
      WithModelRoute(base, mlp, ModelRoute::kPythonModule, "/b/ddp_baseline.py");
  EXPECT_EQ(python.model().name(), "python_module");
  PythonModuleOptions python_options;
  ASSERT_TRUE(python.model().options().UnpackTo(&python_options));
  EXPECT_EQ(python_options.path(), "/b/ddp_baseline.py");
  EXPECT_EQ(python_options.factory(), "benchmark_model");
  EXPECT_EQ(python_options.kwargs_json(), BenchmarkModelKwargs(mlp));

  EXPECT_THAT(ScriptModelArguments("d.py", mlp, 37, "/m/a.pt"),
              ::testing::ElementsAre("d.py", "--architecture=mlp", "--conv-channels=",
                                     "--hidden-units=244", "--image-size=32", "--updates=1",
                                     "--seed=37", "--script-to=/m/a.pt"));
  EXPECT_EQ(RouteTag(ModelRoute::kPythonModule), "_python_module");
  EXPECT_EQ(RouteTag(ModelRoute::kBuiltIn), "");
}

}  // namespace
}  // namespace receipt_parity

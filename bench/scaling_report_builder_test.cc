#include "bench/scaling_report_builder.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::ElementsAre;

RankTiming Timing(int rank, std::vector<double> update_seconds, double rss) {
  RankTiming t;
  t.set_rank(rank);
  for (double s : update_seconds) t.add_update_seconds(s);
  t.set_peak_rss_mib(rss);
  return t;
}

TEST(FromRunSummaryTest, MedianOfTheSlowestRankPerUpdateAndRssPerRank) {
  RunSummary summary;
  summary.set_world_size(2);
  summary.set_updates(7);
  summary.set_examples_per_second(1234.5);
  summary.set_sync_seconds_per_update(0.002);
  summary.set_sync_share(0.25);
  // Slowest per update: 0.010, 0.030, 0.020, 0.050, 0.040 -> median 0.030.
  *summary.add_timing() = Timing(0, {0.010, 0.005, 0.020, 0.050, 0.001}, 150);
  *summary.add_timing() = Timing(1, {0.001, 0.030, 0.002, 0.003, 0.040}, 160);
  const SystemRun run = FromRunSummary(summary);
  EXPECT_EQ(run.system(), "this_project");
  EXPECT_EQ(run.world_size(), 2);
  EXPECT_EQ(run.updates(), 7);
  EXPECT_DOUBLE_EQ(run.examples_per_second(), 1234.5);
  EXPECT_DOUBLE_EQ(run.median_update_seconds(), 0.030);
  EXPECT_DOUBLE_EQ(run.sync_seconds_per_update(), 0.002);
  EXPECT_DOUBLE_EQ(run.sync_share(), 0.25);
  EXPECT_THAT(run.peak_rss_mib(), ::testing::ElementsAre(150, 160));
  EXPECT_EQ(run.bytes_reduced_per_update(), 0);  // no bytes reported
}

TEST(FromRunSummaryTest, BytesReducedPerUpdateAreRankZerosOverTheUpdates) {
  RunSummary summary;
  summary.set_world_size(2);
  summary.set_updates(8);
  *summary.add_timing() = Timing(0, {0.01}, 150);
  *summary.add_timing() = Timing(1, {0.01}, 160);
  summary.mutable_timing(0)->set_bytes_reduced(8 * 4096.0);
  summary.mutable_timing(1)->set_bytes_reduced(8 * 4096.0);
  EXPECT_DOUBLE_EQ(FromRunSummary(summary).bytes_reduced_per_update(), 4096);
}

TEST(FromBaselinesTest, CarryTheirFigures) {
  DdpBaselineResult ddp;
  ddp.set_world_size(2);
  ddp.set_updates(40);
  ddp.set_examples_per_second(900);
  ddp.set_median_update_seconds(0.07);
  ddp.set_sync_seconds_per_update(0.01);
  ddp.set_sync_share(0.14);
  ddp.add_peak_rss_mib(250);
  ddp.add_peak_rss_mib(251);
  const SystemRun d = FromDdp(ddp);
  EXPECT_EQ(d.system(), "pytorch_ddp");
  EXPECT_EQ(d.world_size(), 2);
  EXPECT_DOUBLE_EQ(d.examples_per_second(), 900);
  EXPECT_DOUBLE_EQ(d.median_update_seconds(), 0.07);
  EXPECT_DOUBLE_EQ(d.sync_share(), 0.14);
  EXPECT_THAT(d.peak_rss_mib(), ::testing::ElementsAre(250, 251));

  BareStepResult bare;
  bare.set_warmup_updates(5);
  bare.set_updates(95);
  bare.set_median_update_seconds(0.002);
  bare.set_examples_per_second(16000);
  bare.set_peak_rss_mib(120);
  const SystemRun b = FromBare(bare);
  EXPECT_EQ(b.system(), "bare_libtorch");
  EXPECT_EQ(b.world_size(), 1);
  EXPECT_EQ(b.updates(), 100);
  EXPECT_DOUBLE_EQ(b.median_update_seconds(), 0.002);
  EXPECT_THAT(b.peak_rss_mib(), ::testing::ElementsAre(120));
}

TEST(FromBarePairTest, BothBatchesOverTheSlowerUpdate) {
  BareStepResult fast, slow;
  fast.set_batch(32);
  fast.set_warmup_updates(5);
  fast.set_updates(100);
  fast.set_median_update_seconds(0.002);
  fast.set_peak_rss_mib(120);
  slow = fast;
  slow.set_median_update_seconds(0.004);
  slow.set_peak_rss_mib(121);
  const SystemRun pair = FromBarePair(fast, slow);
  EXPECT_EQ(pair.system(), "bare_libtorch");
  EXPECT_EQ(pair.world_size(), 2);
  EXPECT_EQ(pair.updates(), 105);
  EXPECT_DOUBLE_EQ(pair.median_update_seconds(), 0.004);
  EXPECT_DOUBLE_EQ(pair.examples_per_second(), 64 / 0.004);
  EXPECT_THAT(pair.peak_rss_mib(), ::testing::ElementsAre(120, 121));
}

TEST(KeepBestRoundTest, KeepsTheFastestRoundAndEveryRoundsRate) {
  SystemRun best;
  for (double rate : {900.0, 1200.0, 1000.0}) {
    SystemRun round;
    round.set_examples_per_second(rate);
    round.set_log_path(absl::StrCat("round-", rate));
    KeepBestRound(round, &best);
  }
  EXPECT_DOUBLE_EQ(best.examples_per_second(), 1200);
  EXPECT_EQ(best.log_path(), "round-1200");
  EXPECT_THAT(best.round_examples_per_second(), ::testing::ElementsAre(900, 1200, 1000));
}

TEST(KeepFastestAllreduceTest, SmallestNonZeroTimes) {
  ModelScaling m;
  DdpBaselineResult round;
  for (const auto& [gradient, small] :
       std::vector<std::pair<double, double>>{{0.004, 0}, {0.002, 0.0003}, {0.003, 0.0002}}) {
    round.set_allreduce_seconds_gradient(gradient);
    round.set_allreduce_seconds_1kib(small);
    KeepFastestAllreduce(round, &m);
  }
  EXPECT_DOUBLE_EQ(m.allreduce_seconds_gradient(), 0.002);
  EXPECT_DOUBLE_EQ(m.allreduce_seconds_1kib(), 0.0002);
}

SystemRun Run(double examples_per_second, double update_seconds,
              std::vector<double> rss, double sync_share = 0) {
  SystemRun r;
  r.set_examples_per_second(examples_per_second);
  r.set_median_update_seconds(update_seconds);
  r.set_sync_share(sync_share);
  for (double v : rss) r.add_peak_rss_mib(v);
  return r;
}

ModelScaling Model(const std::string& name, double ours1, double ours2,
                   double ddp1, double ddp2, double ours_update,
                   double bare_update, double ours_rss, double ddp_rss,
                   double sync_share) {
  ModelScaling m;
  m.set_name(name);
  *m.mutable_ours_one_worker() = Run(ours1, ours_update, {ours_rss});
  *m.mutable_ours_two_workers() =
      Run(ours2, 0, {ours_rss - 1, ours_rss}, sync_share);
  *m.mutable_ddp_one_worker() = Run(ddp1, 0, {ddp_rss});
  *m.mutable_ddp_two_workers() = Run(ddp2, 0, {ddp_rss, ddp_rss - 2});
  *m.mutable_bare_libtorch() = Run(1000, bare_update, {100});
  *m.mutable_bare_two_processes() = Run(1700, bare_update, {100, 100});
  FillRatios(&m);
  return m;
}

TEST(FillRatiosTest, RatiosOfTheRuns) {
  const ModelScaling m =
      Model("compute_bound", 1000, 1900, 800, 1500, 0.0022, 0.002, 180, 300, 0.1);
  EXPECT_DOUBLE_EQ(m.ours_scaling(), 1900.0 / 1000);
  EXPECT_DOUBLE_EQ(m.ddp_scaling(), 1500.0 / 800);
  EXPECT_DOUBLE_EQ(m.ours_over_ddp_two_workers(), 1900.0 / 1500);
  EXPECT_DOUBLE_EQ(m.harness_over_bare_update_time(), 0.0022 / 0.002);
  // Largest rank of each: 180 over 300.
  EXPECT_DOUBLE_EQ(m.rss_ratio_to_ddp(), 180.0 / 300);
  EXPECT_DOUBLE_EQ(m.two_process_ceiling(), 1700.0 / 1000);
}

// `m` with our two workers over MPI at that rate and peak RSS per rank.
ModelScaling WithMpi(ModelScaling m, double examples_per_second, double rss) {
  *m.mutable_ours_two_workers_mpi() = Run(examples_per_second, 0, {rss - 1, rss});
  FillRatios(&m);
  return m;
}

TEST(FillRatiosTest, Issue13RatiosOfTheRuns) {
  const ModelScaling gloo =
      Model("compute_bound", 1000, 1600, 800, 1500, 0.0022, 0.002, 180, 300, 0.1);
  // Two bare processes 1700/s over one bare step 1000/s: the ceiling 1.7.
  EXPECT_DOUBLE_EQ(gloo.ours_over_ceiling(), (1600.0 / 1000) / (1700.0 / 1000));
  // Largest rank of our two workers (180) over the bare step's (100).
  EXPECT_DOUBLE_EQ(gloo.rss_ratio_to_bare(), 1.8);
  EXPECT_EQ(gloo.ours_mpi_scaling(), 0);
  EXPECT_EQ(gloo.ours_mpi_over_ceiling(), 0);
  EXPECT_EQ(gloo.rss_ratio_to_bare_mpi(), 0);

  const ModelScaling mpi = WithMpi(gloo, 1500, 120);
  EXPECT_DOUBLE_EQ(mpi.ours_mpi_over_ddp_two_workers(), 1500.0 / 1500);
  EXPECT_DOUBLE_EQ(mpi.ours_mpi_scaling(), 1500.0 / 1000);
  EXPECT_DOUBLE_EQ(mpi.ours_mpi_over_ceiling(), (1500.0 / 1000) / 1.7);
  EXPECT_DOUBLE_EQ(mpi.rss_ratio_to_bare_mpi(), 1.2);
}

TEST(FillRatiosTest, AccumulationRunsOverTheOneStepRun) {
  ModelScaling m =
      Model("compute_bound", 1000, 1900, 800, 1500, 0.0022, 0.002, 180, 300, 0.1);
  EXPECT_EQ(m.accumulation_2_examples_per_second_ratio(), 0);  // not run
  *m.mutable_ours_two_workers_accumulation_2() = receipt_parity::Run(1710, 0, {170, 171});
  *m.mutable_ours_two_workers_accumulation_4() = receipt_parity::Run(1520, 0, {160, 162});
  FillRatios(&m);
  // ours_two_workers (accumulation 1): 1900 examples/s, largest rank 180.
  EXPECT_DOUBLE_EQ(m.accumulation_2_examples_per_second_ratio(), 1710.0 / 1900);
  EXPECT_DOUBLE_EQ(m.accumulation_4_examples_per_second_ratio(), 1520.0 / 1900);
  EXPECT_DOUBLE_EQ(m.accumulation_2_peak_rss_ratio(), 171.0 / 180);
  EXPECT_DOUBLE_EQ(m.accumulation_4_peak_rss_ratio(), 162.0 / 180);
}

TEST(FillRatiosTest, ModelRoutesOverTheBuiltInModel) {
  ModelScaling m =
      Model("compute_bound", 1000, 1900, 800, 1500, 0.0022, 0.002, 180, 300, 0.1);
  EXPECT_EQ(m.python_module_examples_per_second_ratio(), 0);  // not run
  *m.mutable_ours_two_workers_torchscript() = receipt_parity::Run(1805, 0, {190, 189});
  *m.mutable_ours_two_workers_python_module() = receipt_parity::Run(1330, 0, {420, 450});
  FillRatios(&m);
  // ours_two_workers (the built-in model): 1900 examples/s, largest rank 180.
  EXPECT_DOUBLE_EQ(m.torchscript_examples_per_second_ratio(), 1805.0 / 1900);
  EXPECT_DOUBLE_EQ(m.python_module_examples_per_second_ratio(), 1330.0 / 1900);
  EXPECT_DOUBLE_EQ(m.torchscript_peak_rss_ratio(), 190.0 / 180);
  EXPECT_DOUBLE_EQ(m.python_module_peak_rss_ratio(), 450.0 / 180);
}

TEST(FillRatiosTest, OrderedSumOverAllreduceSum) {
  ModelScaling m =
      Model("communication_bound", 1000, 1900, 800, 1500, 0.0022, 0.002, 180, 300, 0.1);
  EXPECT_EQ(m.ordered_sum_examples_per_second_ratio(), 0);  // not run
  m.mutable_ours_two_workers()->set_bytes_reduced_per_update(1000);
  *m.mutable_ours_two_workers_ordered_sum() = receipt_parity::Run(1520, 0, {185, 190});
  m.mutable_ours_two_workers_ordered_sum()->set_bytes_reduced_per_update(4000);
  FillRatios(&m);
  // ours_two_workers (allreduce_sum): 1900 examples/s, largest rank 180.
  EXPECT_DOUBLE_EQ(m.ordered_sum_examples_per_second_ratio(), 1520.0 / 1900);
  EXPECT_DOUBLE_EQ(m.ordered_sum_bytes_per_update_ratio(), 4);
  EXPECT_DOUBLE_EQ(m.ordered_sum_peak_rss_ratio(), 190.0 / 180);

  std::vector<ModelScaling> rounds = {m, m};
  rounds[1].mutable_ours_two_workers_ordered_sum()->set_examples_per_second(1710);
  FillRatios(&rounds[1]);
  ModelScaling both;
  FillRoundRatios(rounds, &both);
  EXPECT_THAT(both.ordered_sum_examples_per_second_ratio_spread().rounds(),
              ElementsAre(1520.0 / 1900, 1710.0 / 1900));
  EXPECT_DOUBLE_EQ(both.ordered_sum_bytes_per_update_ratio(), 4);
  EXPECT_THAT(both.ordered_sum_peak_rss_ratio_spread().rounds(),
              ElementsAre(190.0 / 180, 190.0 / 180));
}

TEST(FillRoundRatiosTest, AccumulationRatiosPerRoundThenTheMedian) {
  std::vector<ModelScaling> rounds;
  const double rates[3] = {900, 950, 800};  // over 1000: 0.9, 0.95, 0.8
  for (int r = 0; r < 3; ++r) {
    ModelScaling m = Model("compute_bound", 500, 1000, 1, 1, 0.001, 0.001, 200, 300, 0);
    *m.mutable_ours_two_workers_accumulation_2() = receipt_parity::Run(rates[r], 0, {190});
    *m.mutable_ours_two_workers_accumulation_4() = receipt_parity::Run(rates[r] - 100, 0, {180.0 - r});
    FillRatios(&m);
    rounds.push_back(m);
  }
  ModelScaling m;
  FillRoundRatios(rounds, &m);
  EXPECT_THAT(m.accumulation_2_examples_per_second_ratio_spread().rounds(),
              ElementsAre(0.9, 0.95, 0.8));
  EXPECT_DOUBLE_EQ(m.accumulation_2_examples_per_second_ratio(), 0.9);
  EXPECT_DOUBLE_EQ(m.accumulation_4_examples_per_second_ratio(), 0.8);
  EXPECT_THAT(m.accumulation_4_peak_rss_ratio_spread().rounds(),
              ElementsAre(0.9, 179.0 / 200, 178.0 / 200));
  EXPECT_DOUBLE_EQ(m.accumulation_2_peak_rss_ratio(), 0.95);
}

TEST(FillRatiosTest, ZeroDenominatorGivesZero) {
  const ModelScaling m = Model("compute_bound", 0, 1900, 0, 0, 0.002, 0, 180, 0, 0);
  EXPECT_EQ(m.ours_scaling(), 0);
  EXPECT_EQ(m.ddp_scaling(), 0);
  EXPECT_EQ(m.ours_over_ddp_two_workers(), 0);
  EXPECT_EQ(m.harness_over_bare_update_time(), 0);
  EXPECT_EQ(m.rss_ratio_to_ddp(), 0);
  EXPECT_EQ(m.ours_over_ceiling(), 0);
}

const TargetCheck* Find(const std::vector<TargetCheck>& checks,
                        const std::string& model, const std::string& prefix) {
  for (const TargetCheck& c : checks) {
    if (c.model() == model && c.target().rfind(prefix, 0) == 0) return &c;
  }
  return nullptr;
}

TEST(FillRoundRatiosTest, EachRatioIsTheMedianOfTheRoundsWithItsSpread) {
  std::vector<ModelScaling> rounds(3);
  const double two_worker_rates[3] = {150, 190, 120};
  for (int r = 0; r < 3; ++r) {
    rounds[r].mutable_ours_one_worker()->set_examples_per_second(100);
    rounds[r].mutable_ours_two_workers()->set_examples_per_second(two_worker_rates[r]);
    rounds[r].mutable_ours_two_workers_buckets_overlap()->set_examples_per_second(110);
    rounds[r].mutable_ours_two_workers_buckets_no_overlap()->set_examples_per_second(100);
    FillRatios(&rounds[r]);
  }
  ModelScaling m;
  FillRoundRatios(rounds, &m);
  EXPECT_DOUBLE_EQ(m.ours_scaling(), 1.5);
  EXPECT_DOUBLE_EQ(m.ours_scaling_spread().median(), 1.5);
  EXPECT_DOUBLE_EQ(m.ours_scaling_spread().min(), 1.2);
  EXPECT_DOUBLE_EQ(m.ours_scaling_spread().max(), 1.9);
  EXPECT_THAT(m.ours_scaling_spread().rounds(), ElementsAre(1.5, 1.9, 1.2));
  EXPECT_DOUBLE_EQ(m.overlap_gain(), 1.1);
  EXPECT_EQ(m.ddp_scaling(), 0);  // no DDP runs: a zero ratio in every round
  EXPECT_EQ(m.ddp_scaling_spread().rounds_size(), 3);
}

// Rounds whose ours_scaling over the ceiling is not the medians' ratio: the
// ratio is taken in each round, then its median.
std::vector<ModelScaling> CeilingRounds(bool with_mpi) {
  const double ours2[3] = {1500, 1800, 1400};
  const double bare2[3] = {1900, 1800, 1600};  // ceilings 1.9, 1.8, 1.6
  const double rss[3] = {110, 104, 130};       // largest rank; bare 100
  std::vector<ModelScaling> rounds;
  for (int r = 0; r < 3; ++r) {
    ModelScaling m =
        Model("compute_bound", 1000, ours2[r], 1, 1, 0.001, 0.001, rss[r], 300, 0);
    m.mutable_bare_two_processes()->set_examples_per_second(bare2[r]);
    FillRatios(&m);
    rounds.push_back(with_mpi ? WithMpi(m, ours2[r] - 100, rss[r] + 10) : m);
  }
  return rounds;
}

TEST(FillRoundRatiosTest, Issue13RatiosPerRoundThenTheMedian) {
  ModelScaling m;
  FillRoundRatios(CeilingRounds(/*with_mpi=*/false), &m);
  // Per round: 1.5/1.9, 1.8/1.8, 1.4/1.6; the median 1.4/1.6 = 0.875.
  EXPECT_THAT(m.ours_over_ceiling_spread().rounds(),
              ElementsAre(1.5 / 1.9, 1.0, 1.4 / 1.6));
  EXPECT_DOUBLE_EQ(m.ours_over_ceiling(), 1.4 / 1.6);
  EXPECT_DOUBLE_EQ(m.ours_over_ceiling_spread().min(), 1.5 / 1.9);
  EXPECT_DOUBLE_EQ(m.ours_over_ceiling_spread().max(), 1.0);
  EXPECT_THAT(m.rss_ratio_to_bare_spread().rounds(), ElementsAre(1.1, 1.04, 1.3));
  EXPECT_DOUBLE_EQ(m.rss_ratio_to_bare(), 1.1);
  // No MPI run: its ratios stay 0 without a spread.
  EXPECT_FALSE(m.has_ours_mpi_scaling_spread());
  EXPECT_FALSE(m.has_ours_mpi_over_ceiling_spread());
  EXPECT_FALSE(m.has_rss_ratio_to_bare_mpi_spread());
  EXPECT_EQ(m.ours_mpi_over_ceiling(), 0);
}

TEST(FillRoundRatiosTest, MpiRatiosPerRoundWhenMeasured) {
  ModelScaling m;
  FillRoundRatios(CeilingRounds(/*with_mpi=*/true), &m);
  EXPECT_THAT(m.ours_mpi_scaling_spread().rounds(), ElementsAre(1.4, 1.7, 1.3));
  EXPECT_DOUBLE_EQ(m.ours_mpi_scaling(), 1.4);
  // Per round: 1.4/1.9, 1.7/1.8, 1.3/1.6; the median 1.3/1.6.
  EXPECT_THAT(m.ours_mpi_over_ceiling_spread().rounds(),
              ElementsAre(1.4 / 1.9, 1.7 / 1.8, 1.3 / 1.6));
  EXPECT_DOUBLE_EQ(m.ours_mpi_over_ceiling(), 1.3 / 1.6);
  EXPECT_THAT(m.rss_ratio_to_bare_mpi_spread().rounds(), ElementsAre(1.2, 1.14, 1.4));
  EXPECT_DOUBLE_EQ(m.rss_ratio_to_bare_mpi(), 1.2);
}

TEST(CheckTargetsTest, EveryTargetOnItsModelMetOrMissedByItsThreshold) {
  // compute_bound meets everything; communication_bound misses everything.
  const ModelScaling compute =
      Model("compute_bound", 1000, 1960, 900, 1700, 0.00205, 0.002, 150, 300, 0.04);
  const ModelScaling comm =
      Model("communication_bound", 1000, 700, 1000, 400, 0.003, 0.002, 200, 300, 0.6);
  const std::vector<TargetCheck> checks = CheckTargets({compute, comm});
  ASSERT_EQ(checks.size(), 7u);

  const TargetCheck* scaling = Find(checks, "compute_bound", "two workers / one");
  ASSERT_NE(scaling, nullptr);
  EXPECT_DOUBLE_EQ(scaling->measured(), compute.ours_scaling());
  EXPECT_EQ(scaling->comparison(), ">=");
  EXPECT_DOUBLE_EQ(scaling->threshold(), kComputeBoundScalingTarget);
  EXPECT_TRUE(scaling->met());

  const TargetCheck* sync = Find(checks, "compute_bound", "share of");
  ASSERT_NE(sync, nullptr);
  EXPECT_DOUBLE_EQ(sync->measured(), 0.04);
  EXPECT_TRUE(sync->met());

  const TargetCheck* vs_ddp = Find(checks, "communication_bound", "our two workers");
  ASSERT_NE(vs_ddp, nullptr);
  EXPECT_DOUBLE_EQ(vs_ddp->measured(), 700.0 / 400);
  EXPECT_DOUBLE_EQ(vs_ddp->threshold(), kOursOverDdpTarget);
  EXPECT_FALSE(vs_ddp->met());

  for (const std::string model : {"compute_bound", "communication_bound"}) {
    const bool good = model == "compute_bound";
    const TargetCheck* harness = Find(checks, model, "harness");
    ASSERT_NE(harness, nullptr) << model;
    EXPECT_EQ(harness->comparison(), "<=");
    EXPECT_EQ(harness->met(), good) << model;
    const TargetCheck* rss = Find(checks, model, "peak RSS");
    ASSERT_NE(rss, nullptr) << model;
    EXPECT_DOUBLE_EQ(rss->threshold(), kRssRatioTarget);
    EXPECT_EQ(rss->met(), good) << model;
  }
  EXPECT_EQ(Find(checks, "communication_bound", "two workers / one"), nullptr);
}

TEST(CheckTargetsTest, EveryCheckIsIssue7s) {
  const ModelScaling m =
      WithMpi(Model("communication_bound", 1000, 700, 1000, 400, 0.003, 0.002, 200,
                    300, 0.6),
              1500, 200);
  const std::vector<TargetCheck> checks = CheckTargets({m});
  ASSERT_EQ(checks.size(), 3u);  // MPI adds none of issue 7's
  for (const TargetCheck& c : checks) EXPECT_EQ(c.issue(), 7) << c.target();
}

const TargetCheck* FindExactly(const std::vector<TargetCheck>& checks,
                               const std::string& model, const std::string& target) {
  for (const TargetCheck& c : checks) {
    if (c.model() == model && c.target() == target) return &c;
  }
  return nullptr;
}

constexpr char kCeiling[] = "two workers / one worker over the two-process ceiling";
constexpr char kMpiCeiling[] =
    "two workers over MPI / one worker over the two-process ceiling";
constexpr char kMpiOverDdp[] =
    "our two workers over MPI / PyTorch DDP two workers examples/s";
constexpr char kGlooOverDdp[] = "our two workers / PyTorch DDP two workers examples/s";
constexpr char kHarness[] = "harness per-update time / bare LibTorch step";
constexpr char kRss[] = "peak RSS per rank / bare LibTorch step's (two workers)";
constexpr char kMpiRss[] =
    "peak RSS per rank / bare LibTorch step's (two workers over MPI)";

// compute_bound meets every issue-13 target; communication_bound misses all.
std::vector<ModelScaling> Issue13Models(bool with_mpi) {
  // Ceiling 1.7 (bare 1000/s, two bare 1700/s); bare RSS 100; bare update 1 ms.
  ModelScaling compute =
      Model("compute_bound", 1000, 1700, 900, 1500, 0.00102, 0.001, 104, 300, 0.04);
  ModelScaling comm =
      Model("communication_bound", 1000, 500, 1000, 400, 0.003, 0.002, 200, 300, 0.6);
  if (with_mpi) {
    compute = WithMpi(compute, 1660, 103);  // 1.66 / 1.7 = 0.976 of the ceiling
    comm = WithMpi(comm, 1100, 150);        // 2.75x DDP
  }
  return {compute, comm};
}

TEST(CheckIssue13TargetsTest, EveryTargetMetOrMissedWithMpiMeasured) {
  const std::vector<TargetCheck> checks = CheckIssue13Targets(Issue13Models(true));
  ASSERT_EQ(checks.size(), 10u);
  for (const TargetCheck& c : checks) EXPECT_EQ(c.issue(), 13) << c.target();
  struct Expected {
    const char* model;
    const char* target;
    double measured;
    const char* comparison;
    double threshold;
  };
  const Expected expected[] = {
      {"compute_bound", kCeiling, 1.0, ">=", kScalingOverCeilingTarget},
      {"compute_bound", kMpiCeiling, 1.66 / 1.7, ">=", kScalingOverCeilingTarget},
      {"compute_bound", kHarness, 1.02, "<=", kHarnessOverBareTightTarget},
      {"compute_bound", kRss, 1.04, "<=", kRssRatioToBareTarget},
      {"compute_bound", kMpiRss, 1.03, "<=", kRssRatioToBareTarget},
      {"communication_bound", kMpiOverDdp, 2.75, ">=", kOursMpiOverDdpTarget},
      {"communication_bound", kGlooOverDdp, 1.25, ">=", kOursGlooOverDdpTarget},
      {"communication_bound", kHarness, 1.5, "<=", kHarnessOverBareTightTarget},
      {"communication_bound", kRss, 2.0, "<=", kRssRatioToBareTarget},
      {"communication_bound", kMpiRss, 1.5, "<=", kRssRatioToBareTarget},
  };
  for (const Expected& e : expected) {
    const TargetCheck* c = FindExactly(checks, e.model, e.target);
    ASSERT_NE(c, nullptr) << e.model << ": " << e.target;
    EXPECT_NEAR(c->measured(), e.measured, 1e-12) << e.target;
    EXPECT_EQ(c->comparison(), e.comparison) << e.target;
    EXPECT_DOUBLE_EQ(c->threshold(), e.threshold) << e.target;
    EXPECT_EQ(c->met(), std::string(e.model) == "compute_bound") << e.target;
  }
  EXPECT_EQ(kOursMpiOverDdpTarget, 3.0);
  EXPECT_EQ(kOursGlooOverDdpTarget, 1.3);
  EXPECT_EQ(kScalingOverCeilingTarget, 0.97);
  EXPECT_EQ(kHarnessOverBareTightTarget, 1.05);
  EXPECT_EQ(kRssRatioToBareTarget, 1.05);
}

TEST(CheckIssue13TargetsTest, MpiChecksAbsentWhenMpiNotMeasured) {
  const std::vector<TargetCheck> checks = CheckIssue13Targets(Issue13Models(false));
  ASSERT_EQ(checks.size(), 6u);
  for (const std::string model : {"compute_bound", "communication_bound"}) {
    EXPECT_EQ(FindExactly(checks, model, kMpiCeiling), nullptr);
    EXPECT_EQ(FindExactly(checks, model, kMpiOverDdp), nullptr);
    EXPECT_EQ(FindExactly(checks, model, kMpiRss), nullptr);
    EXPECT_NE(FindExactly(checks, model, kHarness), nullptr);
    EXPECT_NE(FindExactly(checks, model, kRss), nullptr);
  }
  EXPECT_NE(FindExactly(checks, "compute_bound", kCeiling), nullptr);
  EXPECT_NE(FindExactly(checks, "communication_bound", kGlooOverDdp), nullptr);
  EXPECT_EQ(FindExactly(checks, "communication_bound", kCeiling), nullptr);
}

TEST(CheckIssue13TargetsTest, ThresholdItselfCountsAsMet) {
  ModelScaling compute = Issue13Models(true)[0];
  compute.set_ours_over_ceiling(kScalingOverCeilingTarget);
  compute.set_ours_mpi_over_ceiling(kScalingOverCeilingTarget);
  compute.set_harness_over_bare_update_time(kHarnessOverBareTightTarget);
  compute.set_rss_ratio_to_bare(kRssRatioToBareTarget);
  compute.set_rss_ratio_to_bare_mpi(kRssRatioToBareTarget);
  ModelScaling comm = Issue13Models(true)[1];
  comm.set_ours_mpi_over_ddp_two_workers(kOursMpiOverDdpTarget);
  comm.set_ours_over_ddp_two_workers(kOursGlooOverDdpTarget);
  comm.set_harness_over_bare_update_time(kHarnessOverBareTightTarget);
  comm.set_rss_ratio_to_bare(kRssRatioToBareTarget);
  comm.set_rss_ratio_to_bare_mpi(kRssRatioToBareTarget);
  for (const TargetCheck& c : CheckIssue13Targets({compute, comm})) {
    EXPECT_TRUE(c.met()) << c.model() << ": " << c.target();
  }
}

TEST(CheckIssue46TargetsTest, TheChecksShareAndTheExamplesPerSecondOnOverOff) {
  ModelScaling comm = WithMpi(Issue13Models(false)[1], 1100, 150);
  comm.mutable_ours_two_workers()->set_check_share(0.02);
  comm.mutable_ours_two_workers_mpi()->set_check_share(0.04);
  *comm.mutable_ours_two_workers_checks_off() = receipt_parity::Run(495, 0, {200});  // 500 on
  *comm.mutable_ours_two_workers_mpi_checks_off() = receipt_parity::Run(1100, 0, {150});
  FillRatios(&comm);
  EXPECT_DOUBLE_EQ(comm.every_update_examples_per_second_ratio(), 500.0 / 495);
  EXPECT_DOUBLE_EQ(comm.every_update_mpi_examples_per_second_ratio(), 1.0);
  const std::vector<TargetCheck> checks = CheckIssue46Targets({comm});
  ASSERT_EQ(checks.size(), 4u);
  for (const TargetCheck& c : checks) EXPECT_EQ(c.issue(), 46) << c.target();
  EXPECT_TRUE(checks[0].met());   // 2 % <= 3 %
  EXPECT_TRUE(checks[1].met());   // 1.01 >= 0.97
  EXPECT_FALSE(checks[2].met());  // 4 % over MPI
  EXPECT_TRUE(checks[3].met());
  EXPECT_DOUBLE_EQ(checks[1].threshold(), 1 - kEveryUpdateShareTarget);
  EXPECT_EQ(kEveryUpdateShareTarget, 0.03);
  // Without the MPI runs, only the Gloo figures are checked.
  EXPECT_EQ(CheckIssue46Targets({Issue13Models(false)[0]}).size(), 2u);
}

TEST(FromRunSummaryTest, TheChecksCostIsTheRunsOwnMeasure) {
  RunSummary summary;
  summary.set_check_seconds_per_update(0.0004);
  summary.set_check_share(0.015);
  const SystemRun run = FromRunSummary(summary);
  EXPECT_DOUBLE_EQ(run.check_seconds_per_update(), 0.0004);
  EXPECT_DOUBLE_EQ(run.check_share(), 0.015);
}

TEST(CheckTargetsTest, ThresholdItselfCountsAsMet) {
  ModelScaling m = Model("compute_bound", 1000, 1950, 1, 1, 0.0011, 0.001, 60, 100,
                         kComputeBoundSyncShareTarget);
  m.set_ours_scaling(kComputeBoundScalingTarget);
  m.set_harness_over_bare_update_time(kHarnessOverBareTarget);
  m.set_rss_ratio_to_ddp(kRssRatioTarget);
  for (const TargetCheck& c : CheckTargets({m})) EXPECT_TRUE(c.met()) << c.target();
}

TEST(CheckIssue49TargetsTest, SyncOverPerRankBatchNormAtEachMicroBatchCount) {
  ModelScaling compute = Issue13Models(false)[0];
  // Without batch-norm runs: the replay's check alone.
  ASSERT_EQ(CheckIssue49Targets({compute}).size(), 1u);
  *compute.mutable_ours_two_workers_per_rank_batch_norm() = receipt_parity::Run(1000, 0, {300});
  *compute.mutable_ours_two_workers_sync_batch_norm() = receipt_parity::Run(850, 0, {360});
  *compute.mutable_ours_two_workers_per_rank_batch_norm_accumulation_2() =
      receipt_parity::Run(1000, 0, {300});
  *compute.mutable_ours_two_workers_sync_batch_norm_accumulation_2() =
      receipt_parity::Run(800, 0, {300});
  *compute.mutable_ours_two_workers_per_rank_batch_norm_accumulation_4() =
      receipt_parity::Run(1000, 0, {300});
  *compute.mutable_ours_two_workers_sync_batch_norm_accumulation_4() =
      receipt_parity::Run(790, 0, {300});
  FillRatios(&compute);
  EXPECT_DOUBLE_EQ(compute.sync_batch_norm_examples_per_second_ratio(), 0.85);
  EXPECT_DOUBLE_EQ(compute.sync_batch_norm_accumulation_4_examples_per_second_ratio(), 0.79);
  EXPECT_DOUBLE_EQ(compute.sync_batch_norm_peak_rss_ratio(), 1.2);
  const std::vector<TargetCheck> checks = CheckIssue49Targets({compute});
  ASSERT_EQ(checks.size(), 4u);
  EXPECT_TRUE(checks[0].met());
  EXPECT_TRUE(checks[1].met());  // 0.8 itself is met
  EXPECT_FALSE(checks[2].met());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(checks[i].threshold(), kSyncBatchNormTarget);
  for (const TargetCheck& c : checks) EXPECT_EQ(c.issue(), 49);
}

TEST(CheckIssue49TargetsTest, TheReplayOverTwoOneWorkerUpdates) {
  ModelScaling comm = Issue13Models(false)[1];
  comm.mutable_ours_one_worker()->set_median_update_seconds(0.004);
  comm.mutable_ours_two_workers()->set_replay_seconds_per_checked_update(0.010);
  FillRatios(&comm);
  EXPECT_DOUBLE_EQ(comm.replay_over_update_compute(), 1.25);
  std::vector<TargetCheck> checks = CheckIssue49Targets({comm});
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].comparison(), "<=");
  EXPECT_EQ(checks[0].threshold(), kReplayOverUpdateTarget);
  EXPECT_FALSE(checks[0].met());
  comm.mutable_ours_two_workers()->set_replay_seconds_per_checked_update(0.008);
  FillRatios(&comm);
  checks = CheckIssue49Targets({comm});
  EXPECT_TRUE(checks[0].met());  // 1.0 itself is met
}

TEST(CheckIssue49TargetsTest, OrderedSumOverAllreduceSumAtTwoThreeAndFourWorkers) {
  ModelScaling m = Issue13Models(false)[1];
  m.mutable_ours_two_workers()->set_bytes_reduced_per_update(1000);
  *m.mutable_ours_two_workers_ordered_sum() = receipt_parity::Run(1805, 0, {180});
  m.mutable_ours_two_workers_ordered_sum()->set_bytes_reduced_per_update(1000);
  *m.mutable_ours_three_workers() = receipt_parity::Run(2000, 0, {180});
  m.mutable_ours_three_workers()->set_bytes_reduced_per_update(1000);
  *m.mutable_ours_three_workers_ordered_sum() = receipt_parity::Run(1800, 0, {180});
  m.mutable_ours_three_workers_ordered_sum()->set_bytes_reduced_per_update(1300);
  FillRatios(&m);
  EXPECT_DOUBLE_EQ(m.ordered_sum_3w_examples_per_second_ratio(), 0.9);
  EXPECT_DOUBLE_EQ(m.ordered_sum_3w_bytes_per_update_ratio(), 1.3);
  EXPECT_EQ(m.ordered_sum_4w_examples_per_second_ratio(), 0);  // not run
  std::vector<TargetCheck> checks = CheckIssue49Targets({m});
  // 2w and 3w, examples/s and bytes each (no 4w runs), then the replay's.
  ASSERT_EQ(checks.size(), 5u);
  EXPECT_EQ(checks[0].target(), "2w, ordered_sum / allreduce_sum examples/s");
  EXPECT_TRUE(checks[0].met());  // 1805 / 1900 = 0.95 itself
  EXPECT_EQ(checks[0].threshold(), kOrderedSumSpeedTarget);
  EXPECT_TRUE(checks[1].met());
  EXPECT_EQ(checks[1].comparison(), "<=");
  EXPECT_EQ(checks[1].threshold(), kOrderedSumBytesTarget);
  EXPECT_EQ(checks[2].target(), "3w, ordered_sum / allreduce_sum examples/s");
  EXPECT_FALSE(checks[2].met());
  EXPECT_FALSE(checks[3].met());  // 1.3 bytes
}

TEST(CheckIssue49TargetsTest, OursOverMpiAgainstThePhysicalFloor) {
  ModelScaling m = Issue13Models(false)[1];
  m.set_batch_per_rank(32);
  // Two bare steps at once: 64 examples in 4 ms; the all-reduce 1 ms.
  *m.mutable_bare_two_processes() = receipt_parity::Run(16000, 0, {100, 100});
  m.set_shm_allreduce_seconds_gradient(0.001);
  *m.mutable_ours_two_workers_mpi() = receipt_parity::Run(10240, 0, {150, 150});
  FillRatios(&m);
  EXPECT_DOUBLE_EQ(m.physical_floor_examples_per_second(), 64 / 0.005);
  EXPECT_DOUBLE_EQ(m.ours_mpi_over_physical_floor(), 0.8);
  std::vector<TargetCheck> checks = CheckIssue49Targets({m});
  ASSERT_EQ(checks.size(), 2u);  // the floor's, then the replay's
  EXPECT_EQ(checks[0].threshold(), kOursMpiOverPhysicalFloorTarget);
  EXPECT_TRUE(checks[0].met());  // 0.8 itself
  // Without the all-reduce measured (no mpirun): no floor, no check.
  m.set_shm_allreduce_seconds_gradient(0);
  m.clear_physical_floor_examples_per_second();
  m.clear_ours_mpi_over_physical_floor();
  FillRatios(&m);
  EXPECT_EQ(m.physical_floor_examples_per_second(), 0);
  EXPECT_EQ(CheckIssue49Targets({m}).size(), 1u);
}

}  // namespace
}  // namespace receipt_parity

#include "study/trade_report_markdown.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "study/trade_report_builder.h"
#include "study/trade_report_test_inputs.h"
#include "drill/drill_report.pb.h"
#include "artifacts/run_summary.pb.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TradeReport Build(const TradeReportInputs& inputs) {
  absl::StatusOr<TradeReport> report = BuildTradeReport(inputs);
  EXPECT_TRUE(report.ok()) << report.status();
  return report.ok() ? *report : TradeReport();
}

TEST(TradeReportMarkdownTest, ShowsTheFiguresOfBothRuns) {
  const std::string md = TradeReportMarkdown(Build(TestInputs()));
  EXPECT_THAT(md, HasSubstr("![Training loss against examples seen"));
  EXPECT_THAT(md, HasSubstr("](trade_report.svg)"));
  EXPECT_THAT(md, HasSubstr("| examples/s (median of timing windows after 2 "
                            "warm-up updates) | 1000.5 | 2000.5 |"));
  EXPECT_THAT(md, HasSubstr("| gradient synchronisation per update, ms | "
                            "0.000 | 1.000 |"));
  EXPECT_THAT(md, HasSubstr("| synchronisation share of an update | 0.0 % | "
                            "10.0 % |"));
  EXPECT_THAT(md, HasSubstr("| peak resident memory, rank 0, MiB | 100.2 | "
                            "110.2 |"));
  EXPECT_THAT(md, HasSubstr("| peak resident memory, rank 1, MiB | — | "
                            "111.2 |"));
  EXPECT_THAT(md, HasSubstr("| sampler duplicate slots (all epochs) | 2 | 4 |"));
  EXPECT_THAT(md, HasSubstr("| sampler masked slots (all epochs) | 4 | 8 |"));
  EXPECT_THAT(md, HasSubstr("(2.00× one worker)"));
}

TEST(TradeReportMarkdownTest, NamesTheStraggler) {
  const TradeReport report = Build(TestInputs());
  EXPECT_THAT(TradeReportMarkdown(report),
              HasSubstr("| rank 1: last to the gradient reduction; lateness median, p90, ms "
                        "| - | 2 of 2 updates; 1.500, 2.500 |"));
  EXPECT_THAT(TradeReportHeadline(report),
              HasSubstr("straggler: rank 1, last to the gradient reduction in 2 of 2 timed "
                        "updates (median lateness 1.500 ms, p90 2.500 ms)"));
}

TEST(TradeReportMarkdownTest, TheHeadlineShowsTheRarestClassForBothRuns) {
  TradeReport report = Build(TestInputs());
  report.mutable_two_workers()->mutable_validation()->mutable_per_class(1)->set_f1(
      0.25);
  EXPECT_THAT(TradeReportHeadline(report),
              HasSubstr("\nrarest class: blurry, 2 validation receipts, F1 one "
                        "worker 0.400, two workers 0.250\n"));
  report.mutable_two_workers()->mutable_validation()->clear_per_class();
  EXPECT_THAT(TradeReportHeadline(report),
              HasSubstr("F1 one worker 0.400, two workers -\n"));
  EXPECT_THAT(TradeReportHeadline(TradeReport()),
              HasSubstr("rarest class: not measured\n"));
}

TEST(TradeReportMarkdownTest, ShowsPerClassValidation) {
  const std::string md = TradeReportMarkdown(Build(TestInputs()));
  EXPECT_THAT(md, HasSubstr("| blurry | 2 | 0.250 / 1.000 / 0.400 | "
                            "0.250 / 1.000 / 0.400 |"));
  EXPECT_THAT(md, HasSubstr("| good | 6 | 0.750 / 0.500 / 0.600 |"));
  EXPECT_THAT(md, HasSubstr("| duplicates dropped | 0 | 1 |"));
}

TEST(TradeReportMarkdownTest, AFailedParityShowsAsFailed) {
  TradeReportInputs inputs = TestInputs();
  std::string md = TradeReportMarkdown(Build(inputs));
  EXPECT_THAT(md, Not(HasSubstr(kFail)));
  EXPECT_THAT(md, HasSubstr("parity: two-worker run pass, simulated 3+1 split pass"));

  inputs.parity.message.set_pass(false);
  inputs.parity.message.add_failures("conv1.weight: max abs diff 0.5 > atol");
  md = TradeReportMarkdown(Build(inputs));
  EXPECT_THAT(md, HasSubstr("parity: two-worker run FAIL, simulated 3+1 split pass"));
  EXPECT_THAT(md, HasSubstr("| **FAIL** |"));
  EXPECT_THAT(md, HasSubstr("conv1.weight: max abs diff 0.5 > atol"));
}

TEST(TradeReportMarkdownTest, MissingRecoveryAndCheckpointFiguresSayNotMeasured) {
  const std::string md = TradeReportMarkdown(Build(TestInputs()));
  EXPECT_THAT(md, HasSubstr("recovery: not measured\n"));
  EXPECT_THAT(md, HasSubstr("checkpoint cost: not measured\n"));
  EXPECT_THAT(md, HasSubstr("## Checkpoint cost\n\n**not measured**"));
  EXPECT_THAT(md, HasSubstr("## Recovery from an injected failure\n\n"
                            "Verdict: **not measured**"));
}

TEST(TradeReportMarkdownTest, ShowsRecoveryAndCheckpointFigures) {
  TradeReportInputs inputs = TestInputs();
  inputs.recovery = Sourced<RecoveryReport>{"recovery.json", TestRecovery(false)};
  inputs.checkpoint_cost =
      Sourced<CheckpointCost>{"two_worker/run_summary.json checkpoint",
                              TestCheckpointCost()};
  const std::string md = TradeReportMarkdown(Build(inputs));
  EXPECT_THAT(md, HasSubstr("recovery: FAIL\n"));
  EXPECT_THAT(md, HasSubstr("Verdict: **FAIL** (`recovery.json`)"));
  EXPECT_THAT(md, HasSubstr("| killed | rank 1 at mid_shard of generation 2 |"));
  EXPECT_THAT(md, HasSubstr("- the first resumed update differs"));
  EXPECT_THAT(md, HasSubstr("checkpoint cost: 123456 bytes per generation, "
                            "saved in 30.00 ms (median of 3), 1.50× one "
                            "fsync'd sequential write of the same bytes"));
  EXPECT_THAT(md, HasSubstr("| 3 | 123456 | 30.000 | 20.000 | 1.50× |"));
  EXPECT_THAT(md, HasSubstr("Where a save's time goes on rank 0, ms (each phase's "
                            "median):\n\n| serialize | folder | own shard | "
                            "confirmations | verify | MANIFEST | prune | advertise |\n"));
  EXPECT_THAT(md, HasSubstr("| 4.000 | 1.000 | 8.000 | 2.000 | 3.000 | 6.000 | 5.000 | "
                            "0.500 |\n"));
}

TEST(TradeReportMarkdownTest, WithoutARunOverMpiSaysWhyNotMeasured) {
  const TradeReport report = Build(TestInputs());
  const std::string md = TradeReportMarkdown(report);
  EXPECT_THAT(md, HasSubstr("## Two workers over MPI\n\n**not measured** "
                            "(OpenMPI's mpirun is not installed).\n"));
  EXPECT_THAT(TradeReportHeadline(report),
              HasSubstr("\ntwo workers over MPI: not measured (OpenMPI's "
                        "mpirun is not installed)\n"));
  EXPECT_THAT(md, Not(HasSubstr("over MPI (real processes)")));
  EXPECT_THAT(TradeReportHeadline(TradeReport()),
              HasSubstr("two workers over MPI: not measured\n"));
}

TEST(TradeReportMarkdownTest, ShowsTheRunOverMpiBesideGloo) {
  TradeReportInputs inputs = TestInputs();
  inputs.two_workers_mpi = TestMpiRun();
  const TradeReport report = Build(inputs);
  const std::string md = TradeReportMarkdown(report);
  const std::string line =
      "two workers over MPI: 2500.5 examples/s, 1.25× Gloo; sync 5.0 % of an "
      "update; final parameters equal to Gloo's: yes; parity pass\n";
  EXPECT_THAT(TradeReportHeadline(report), HasSubstr("\n" + line));
  EXPECT_THAT(md, HasSubstr("|  | two workers, Gloo | two workers, MPI |"));
  EXPECT_THAT(md, HasSubstr("| examples/s | 2000.5 | 2500.5 |"));
  EXPECT_THAT(md, HasSubstr("| synchronisation share of an update | 10.0 % | "
                            "5.0 % |"));
  EXPECT_THAT(md, HasSubstr("\nOver MPI: 2500.5 examples/s, 1.25× Gloo; "));
  EXPECT_THAT(md, HasSubstr("From `two_worker_mpi`"));
  EXPECT_THAT(md, HasSubstr("| two-worker run over MPI (real processes) "
                            "`two_worker_mpi/parity.json` | **pass** | 16+16 | "
                            "global_count | mpi_allreduce |"));
  // The Gloo figures and the straggler stay as they were.
  EXPECT_THAT(md, HasSubstr("| examples/s (median of timing windows after 2 "
                            "warm-up updates) | 1000.5 | 2000.5 |"));
  EXPECT_THAT(TradeReportHeadline(report),
              HasSubstr("straggler: rank 1, last to the gradient reduction in 2 of 2"));
}

TEST(TradeReportMarkdownTest, WithoutABf16RunSaysNotMeasured) {
  const TradeReport report = Build(TestInputs());
  const std::string md = TradeReportMarkdown(report);
  EXPECT_THAT(md, HasSubstr("## fp32 against bf16\n\n**not measured** (the "
                            "study has no two_worker_bf16 run)."));
  EXPECT_THAT(TradeReportHeadline(report),
              HasSubstr("\ntwo workers in bf16: not measured (the study has "
                        "no two_worker_bf16 run)\n"));
  EXPECT_THAT(md, Not(HasSubstr("in bf16 (real processes)")));
}

TEST(TradeReportMarkdownTest, ShowsTheBf16RunBesideFp32) {
  TradeReportInputs inputs = TestInputs();
  inputs.two_workers_bf16 = TestBf16Run();
  const TradeReport report = Build(inputs);
  const std::string md = TradeReportMarkdown(report);
  const std::string line =
      "1800.5 examples/s, 0.90× fp32; macro F1 -0.0500 against fp32; parity "
      "pass (first update: 1 of 2 tensors judged by numerics, fc.bias left to the replay)";
  EXPECT_THAT(TradeReportHeadline(report),
              HasSubstr("\ntwo workers in bf16: " + line + "\n"));
  EXPECT_THAT(md, HasSubstr("## fp32 against bf16\n\n|  | two workers, fp32 | "
                            "two workers, bf16 |"));
  EXPECT_THAT(md, HasSubstr("| examples/s | 2000.5 | 1800.5 |"));
  EXPECT_THAT(md, HasSubstr("| peak resident memory, largest rank, MiB | "
                            "111.2 | 151.2 |"));
  EXPECT_THAT(md, HasSubstr("| macro F1 | 0.5000 | 0.4500 |"));
  EXPECT_THAT(md, HasSubstr("| F1, good (support 6) | 0.600 | 0.600 |"));
  EXPECT_THAT(md, HasSubstr("| F1, blurry (support 2) | 0.400 | 0.300 |"));
  EXPECT_THAT(md, HasSubstr("\nbf16: " + line + ".\n"));
  EXPECT_THAT(md, HasSubstr("derived, not tuned: bf16 against fp64, tensor by "
                            "tensor."));
  EXPECT_THAT(md, HasSubstr("From `two_worker_bf16`"));
  EXPECT_THAT(md, HasSubstr("| two-worker run in bf16 (real processes) "
                            "`two_worker_bf16/parity.json` | **pass** |"));
}

TEST(TradeReportMarkdownTest, ShowsTheAllRecipesRunAndEachCheckedUpdate) {
  EXPECT_THAT(TradeReportMarkdown(Build(TestInputs())),
              HasSubstr("## Every recipe at once\n\n**not measured** (the study has no "
                        "two_worker_all_recipes run)."));
  TradeReportInputs inputs = TestInputs();
  inputs.two_workers_all_recipes = TestAllRecipesRun();
  const TradeReport report = Build(inputs);
  const std::string md = TradeReportMarkdown(report);
  EXPECT_THAT(TradeReportHeadline(report),
              HasSubstr("\ntwo workers, every recipe: 900.5 examples/s, 0.45× the fp32 run; "
                        "parity pass (whole run (drift_budget): 2 of 2 checked updates pass, "
                        "numerics judged 1 of 2 tensor-updates, the other 1 diverged and left to "
                        "the replay)\n"));
  EXPECT_THAT(md, HasSubstr("uses: accumulation_steps 2, lr_schedule linear_warmup_cosine"));
  EXPECT_THAT(md, HasSubstr("| examples/s | 2000.5 | 900.5 |"));
  EXPECT_THAT(md, HasSubstr("| 0 | 1 of 1 | pass |"));
  EXPECT_THAT(md, HasSubstr("| 9 | 0 of 1 | pass |"));
  EXPECT_THAT(md, HasSubstr("- update 9: diverged: rounding alone has moved the drift twin"));
  EXPECT_THAT(md, HasSubstr("| two-worker run with every recipe (real processes) "
                            "`two_worker_all_recipes/parity.json` | **pass** |"));
}

TEST(TradeReportMarkdownTest, ShowsTheWorldSizeChangeWithItsDataOrderAndParameters) {
  EXPECT_THAT(TradeReportMarkdown(Build(TestInputs())),
              HasSubstr("## The world size changed mid-run\n\nNot measured: the study has no "
                        "world_size_change runs."));
  TradeReportInputs inputs = TestInputs();
  inputs.world_size_change = TestWorldSizeChange();
  const TradeReport report = Build(inputs);
  const std::string md = TradeReportMarkdown(report);
  EXPECT_THAT(TradeReportHeadline(report),
              HasSubstr("\nworld size changed mid-run: on 3: 0 updates differ, parameters "
                        "bitwise equal; on 1: 0 updates differ, parameters differ; "
                        "duplicate_pad on 3: 2 of 3 updates differ\n"));
  EXPECT_THAT(md, HasSubstr("![Loss per update of the continued runs over the uninterrupted "
                            "run's](world_size_change.svg)"));
  EXPECT_THAT(md, HasSubstr("| `world_size_change/on_three` | global_batches | 2 → 3 | 2 | "
                            "world_size_independent | the same receipts in all 3 remaining "
                            "updates of the epoch | 0.750000 | bitwise equal; losses differ "
                            "by at most 0 |"));
  EXPECT_THAT(md, HasSubstr("| `world_size_change/duplicate_pad_on_three` | duplicate_pad | "
                            "2 → 3 | 2 | allow_world_size_change | 2 of 3 remaining updates "
                            "train other receipts; duplicate slots 1 -> 0, 1 id(s) skipped, "
                            "1 trained twice |"));
}

TEST(TradeReportMarkdownTest, ShowsWhatTheVerdictsCatchWithAMissedRunInBold) {
  EXPECT_THAT(TradeReportMarkdown(Build(TestInputs())),
              HasSubstr("## What these verdicts catch\n\n**not measured** (the study has no "
                        "planted_mistakes runs)."));
  TradeReportInputs inputs = TestInputs();
  inputs.planted_mistakes = TestPlantedMistakes();
  const TradeReport report = Build(inputs);
  const std::string md = TradeReportMarkdown(report);
  EXPECT_THAT(TradeReportHeadline(report),
              HasSubstr("\nplanted mistakes: 1 of 2 planted runs caught\n"));
  EXPECT_THAT(md, HasSubstr("| planted mistake | fp32 | bf16 |"));
  EXPECT_THAT(md, HasSubstr("| per-rank clipping | caught: first update, every update "
                            "(reduction) | **MISSED** |"));
  EXPECT_THAT(md, HasSubstr("- per-rank clipping (`planted_mistakes/per_rank_clipping/fp32`): "
                            "gradient of fc.weight differs by up to 0.5\n"));
}

TEST(TradeReportMarkdownTest, ShowsSamplerAudits) {
  const std::string md = TradeReportMarkdown(Build(TestInputs()));
  EXPECT_THAT(md, HasSubstr("| duplicate_pad | 5 | 2 | 2 | 6 | 2 | r-0, r-3 | "
                            "0 | 0 | yes | `sampler_audit_duplicate_pad.json` |"));
  EXPECT_THAT(md, HasSubstr("| masked_tail | 5 | 2 | 2 | 6 | 0 | — | 2 |"));
}

}  // namespace
}  // namespace receipt_parity

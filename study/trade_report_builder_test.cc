#include "study/trade_report_builder.h"

#include <set>
#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "gtest/gtest.h"
#include "io/json_file.h"
#include "study/trade_report_test_inputs.h"

namespace receipt_parity {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TradeReport Build(const TradeReportInputs& inputs) {
  absl::StatusOr<TradeReport> report = BuildTradeReport(inputs);
  EXPECT_TRUE(report.ok()) << report.status();
  return report.ok() ? *report : TradeReport();
}

// Every field name of `descriptor` and of the messages it holds.
void CollectFieldNames(const Descriptor* descriptor,
                       std::set<const Descriptor*>* visited,
                       std::set<std::string>* names) {
  if (!visited->insert(descriptor).second) return;
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor* field = descriptor->field(i);
    names->insert(field->name());
    // A map is a JSON object keyed by its keys: its entry's "key" and
    // "value" are never keys of the JSON.
    if (field->type() == FieldDescriptor::TYPE_MESSAGE && !field->is_map()) {
      CollectFieldNames(field->message_type(), visited, names);
    }
  }
}

TEST(TradeReportBuilderTest, EveryKeyOfTheFormatIsWritten) {
  TradeReportInputs inputs = TestInputs();
  inputs.recovery = Sourced<RecoveryReport>{"recovery.json", TestRecovery(true)};
  inputs.checkpoint_cost =
      Sourced<CheckpointCost>{"run_summary.json", TestCheckpointCost()};
  inputs.two_workers_mpi = TestMpiRun();
  inputs.two_workers_bf16 = TestBf16Run();
  inputs.two_workers_all_recipes = TestAllRecipesRun();
  inputs.world_size_change = TestWorldSizeChange();
  inputs.planted_mistakes = TestPlantedMistakes();
  const std::string json = ToJson(Build(inputs));
  std::set<const Descriptor*> visited;
  std::set<std::string> names;
  CollectFieldNames(TradeReport::descriptor(), &visited, &names);
  ASSERT_GT(names.size(), 60u);
  for (const std::string& name : names) {
    EXPECT_THAT(json, HasSubstr("\"" + name + "\":")) << name;
  }
}

TEST(TradeReportBuilderTest, EachPlantedRunSaysWhetherAndByWhatItWasCaught) {
  TradeReportInputs inputs = TestInputs();
  EXPECT_EQ(Build(inputs).planted_mistakes().status(), kNotMeasured);
  EXPECT_EQ(Build(inputs).planted_mistakes().note(), kNoPlantedMistakes);
  inputs.planted_mistakes = TestPlantedMistakes();
  const PlantedMistakesFigures f = Build(inputs).planted_mistakes();
  ASSERT_EQ(f.status(), kMeasured);
  ASSERT_EQ(f.runs_size(), 2);
  EXPECT_EQ(f.caught_runs(), 1);
  const PlantedMistakeRun& caught = f.runs(0);
  EXPECT_EQ(caught.mistake(), "per-rank clipping");
  EXPECT_EQ(caught.setting(), "fp32");
  EXPECT_EQ(caught.source(), "planted_mistakes/per_rank_clipping/fp32");
  EXPECT_TRUE(caught.caught());
  EXPECT_THAT(caught.caught_by(), ElementsAre("first update", "every update (reduction)"));
  EXPECT_EQ(caught.first_failure(), "gradient of fc.weight differs by up to 0.5");
  const PlantedMistakeRun& missed = f.runs(1);
  EXPECT_EQ(missed.setting(), "bf16");
  EXPECT_FALSE(missed.caught());
  EXPECT_THAT(missed.caught_by(), IsEmpty());
}

TEST(TradeReportBuilderTest, TheWorldSizeChangeComparesEachContinuationWithTheUninterruptedRun) {
  TradeReportInputs inputs = TestInputs();
  EXPECT_EQ(Build(inputs).world_size_change().status(), kNotMeasured);
  EXPECT_EQ(Build(inputs).world_size_change().note(), kNoWorldSizeChange);
  inputs.world_size_change = TestWorldSizeChange();
  const WorldSizeChangeFigures f = Build(inputs).world_size_change();
  ASSERT_EQ(f.status(), kMeasured);
  ASSERT_EQ(f.continuations_size(), 2);
  const WorldSizeContinuation& three = f.continuations(0);
  EXPECT_EQ(three.new_world_size(), 3);
  EXPECT_TRUE(three.final_parameters_equal());
  EXPECT_EQ(three.loss_max_abs_diff(), 0);
  EXPECT_EQ(three.world_size_change_rule(), "world_size_independent");
  // The curve is at the run's update index: the attempt began at update 2.
  ASSERT_EQ(three.loss_curve_size(), 2);
  EXPECT_EQ(three.loss_curve(0).update(), 2);
  const WorldSizeContinuation& one = f.continuations(1);
  EXPECT_FALSE(one.final_parameters_equal());
  EXPECT_NEAR(one.loss_max_abs_diff(), 1e-3, 1e-12);
  EXPECT_EQ(f.duplicate_pad().changed_updates(), 2);
  EXPECT_EQ(f.duplicate_pad().skipped_ids(), 1);
  EXPECT_EQ(f.duplicate_pad().loss_max_abs_diff(), -1);  // another run: not compared
  EXPECT_EQ(f.picture(), "world_size_change.svg");
  EXPECT_EQ(f.uninterrupted_loss_curve_size(), 4);

  inputs.world_size_change->continuations[0].resume.set_world_size_changed(false);
  absl::StatusOr<TradeReport> refused = BuildTradeReport(inputs);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(),
              HasSubstr("world_size_change/on_three/resume.json: world_size_changed is false"));
}

TEST(TradeReportBuilderTest, CarriesRunFiguresUnchanged) {
  const TradeReport report = Build(TestInputs());
  EXPECT_EQ(report.format_version(), kTradeReportFormatVersion);
  const RunFigures& one = report.one_worker();
  const RunFigures& two = report.two_workers();
  EXPECT_EQ(one.source(), "one_worker/reference");
  EXPECT_EQ(one.world_size(), 1);
  EXPECT_EQ(two.world_size(), 2);
  EXPECT_EQ(two.config_fingerprint(), "fp-two");
  EXPECT_DOUBLE_EQ(one.examples_per_second(), 1000.5);
  EXPECT_DOUBLE_EQ(two.examples_per_second(), 2000.5);
  EXPECT_DOUBLE_EQ(report.two_over_one_examples_per_second(), 2000.5 / 1000.5);
  EXPECT_DOUBLE_EQ(two.sync_seconds_per_update(), 0.001);
  EXPECT_DOUBLE_EQ(two.sync_share(), 0.1);
  EXPECT_EQ(two.warmup_updates(), 2);
  EXPECT_EQ(two.updates(), 4);
  // The slowest rank's update time, averaged: (0.009 + 0.011) / 2.
  EXPECT_DOUBLE_EQ(two.update_seconds(), 0.010);
  EXPECT_DOUBLE_EQ(one.update_seconds(), 0.009);
  ASSERT_EQ(two.ranks_size(), 2);
  EXPECT_EQ(two.ranks(1).rank(), 1);
  EXPECT_DOUBLE_EQ(two.ranks(0).peak_rss_mib(), 110.25);
  EXPECT_DOUBLE_EQ(two.ranks(1).peak_rss_mib(), 111.25);
  EXPECT_DOUBLE_EQ(two.ranks(1).update_seconds(), 0.010);
  EXPECT_EQ(two.ranks(1).collectives(), 2);
  EXPECT_DOUBLE_EQ(two.ranks(1).bytes_reduced(), 4096);
  EXPECT_DOUBLE_EQ(one.ranks(0).peak_rss_mib(), 100.25);
  EXPECT_EQ(two.duplicate_slots(), 4);
  EXPECT_EQ(two.masked_slots(), 8);
  EXPECT_EQ(one.duplicate_slots(), 2);
  EXPECT_EQ(one.masked_slots(), 4);
  EXPECT_DOUBLE_EQ(two.final_loss(), 0.75 + 1e-6);
  ASSERT_EQ(two.loss_curve_size(), 4);
  EXPECT_EQ(two.loss_curve(3).examples_seen(), 32);
  EXPECT_NEAR(report.loss_curves_max_abs_diff(), 1e-6, 1e-12);
}

TEST(TradeReportBuilderTest, CarriesPerClassValidation) {
  const TradeReport report = Build(TestInputs());
  const ValidationFigures& v = report.two_workers().validation();
  EXPECT_EQ(v.dedup(), "by_receipt_id");
  EXPECT_EQ(v.predictions_gathered(), 9);
  EXPECT_EQ(v.unique_ids_counted(), 8);
  EXPECT_EQ(v.duplicates_dropped(), 1);
  EXPECT_DOUBLE_EQ(v.accuracy(), 0.625);
  ASSERT_EQ(v.per_class_size(), 2);
  EXPECT_EQ(v.per_class(1).label(), "blurry");
  EXPECT_EQ(v.per_class(1).support(), 2);
  EXPECT_DOUBLE_EQ(v.per_class(1).precision(), 0.25);
  EXPECT_DOUBLE_EQ(v.per_class(1).recall(), 1);
  EXPECT_DOUBLE_EQ(v.per_class(1).f1(), 0.4);
}

TEST(TradeReportBuilderTest, SummarisesSamplerAudits) {
  const TradeReport report = Build(TestInputs());
  ASSERT_EQ(report.sampler_audits_size(), 2);
  const SamplerFigures& pad = report.sampler_audits(0);
  EXPECT_EQ(pad.policy(), "duplicate_pad");
  EXPECT_EQ(pad.source(), "sampler_audit_duplicate_pad.json");
  EXPECT_EQ(pad.num_ids(), 5);
  EXPECT_EQ(pad.epochs(), 2);
  EXPECT_EQ(pad.slots_per_epoch(), 6);
  EXPECT_EQ(pad.duplicate_slots(), 2);
  EXPECT_THAT(pad.duplicated_ids(), ElementsAre("r-0", "r-3"));
  EXPECT_EQ(pad.masked_slots(), 0);
  EXPECT_TRUE(pad.ranks_agree());
  const SamplerFigures& masked = report.sampler_audits(1);
  EXPECT_EQ(masked.duplicate_slots(), 0);
  EXPECT_EQ(masked.masked_slots(), 2);
}

TEST(TradeReportBuilderTest, PassingAndFailedParity) {
  TradeReportInputs inputs = TestInputs();
  TradeReport report = Build(inputs);
  EXPECT_EQ(report.parity().verdict(), kPass);
  EXPECT_EQ(report.simulated_parity().verdict(), kPass);
  EXPECT_TRUE(report.simulated_parity().simulated());
  EXPECT_THAT(report.simulated_parity().split(), ElementsAre(3, 1));
  EXPECT_DOUBLE_EQ(report.parity().max_abs_diff(), 2.5e-8);
  EXPECT_DOUBLE_EQ(report.parity().max_rel_diff(), 3.5e-6);
  EXPECT_EQ(report.parity().weighting(), "global_count");

  inputs.simulated_parity.message.set_pass(false);
  inputs.simulated_parity.message.set_max_abs_diff(0.125);
  inputs.simulated_parity.message.add_failures("fc.weight differs by 0.125");
  report = Build(inputs);
  EXPECT_EQ(report.simulated_parity().verdict(), kFail);
  EXPECT_DOUBLE_EQ(report.simulated_parity().max_abs_diff(), 0.125);
  EXPECT_THAT(report.simulated_parity().failures(),
              ElementsAre("fc.weight differs by 0.125"));
  EXPECT_EQ(report.parity().verdict(), kPass);
}

TEST(TradeReportBuilderTest, MissingRecoveryAndCheckpointCostAreNotMeasured) {
  const TradeReport report = Build(TestInputs());
  EXPECT_EQ(report.recovery().status(), kNotMeasured);
  EXPECT_EQ(report.recovery().verdict(), kNotMeasured);
  EXPECT_THAT(report.recovery().note(), HasSubstr("recovery.json"));
  EXPECT_EQ(report.checkpoint_cost().status(), kNotMeasured);
  EXPECT_FALSE(report.checkpoint_cost().has_cost());
  EXPECT_FALSE(report.checkpoint_cost().note().empty());
}

TEST(TradeReportBuilderTest, CarriesTheRecoveryVerdictAndFigures) {
  TradeReportInputs inputs = TestInputs();
  inputs.recovery = Sourced<RecoveryReport>{"recovery.json", TestRecovery(true)};
  RecoveryFigures r = Build(inputs).recovery();
  EXPECT_EQ(r.status(), kMeasured);
  EXPECT_EQ(r.verdict(), kPass);
  EXPECT_EQ(r.source(), "recovery.json");
  EXPECT_EQ(r.report().killed_rank(), 1);
  EXPECT_EQ(r.report().kill_point(), "mid_shard");
  EXPECT_EQ(r.report().resumed_from(), 1);
  EXPECT_EQ(r.report().updates_redone(), 10);

  inputs.recovery->message = TestRecovery(false);
  r = Build(inputs).recovery();
  EXPECT_EQ(r.verdict(), kFail);
  EXPECT_DOUBLE_EQ(r.report().max_abs_gradient_diff(), 0.5);
  EXPECT_THAT(r.report().failures(),
              ElementsAre("the first resumed update differs"));
}

TEST(TradeReportBuilderTest, CarriesCheckpointCost) {
  TradeReportInputs inputs = TestInputs();
  inputs.checkpoint_cost = Sourced<CheckpointCost>{
      "two_worker/run_summary.json checkpoint", TestCheckpointCost()};
  CheckpointFigures cost = Build(inputs).checkpoint_cost();
  EXPECT_EQ(cost.status(), kMeasured);
  EXPECT_EQ(cost.source(), "two_worker/run_summary.json checkpoint");
  EXPECT_EQ(cost.cost().generations_saved(), 3);
  EXPECT_DOUBLE_EQ(cost.cost().bytes_per_generation(), 123456);
  EXPECT_DOUBLE_EQ(cost.cost().save_seconds_median(), 0.03);
  EXPECT_DOUBLE_EQ(cost.cost().save_vs_sequential_ratio(), 1.5);

  // A record of a run that saved nothing is not a measurement.
  inputs.checkpoint_cost->message = CheckpointCost();
  cost = Build(inputs).checkpoint_cost();
  EXPECT_EQ(cost.status(), kNotMeasured);
  EXPECT_THAT(cost.note(), HasSubstr("no generation saved"));
  EXPECT_DOUBLE_EQ(cost.cost().bytes_per_generation(), 0);
}

TEST(TradeReportBuilderTest, WithoutARunOverMpiItIsNotMeasuredForWantOfMpirun) {
  const MpiFigures mpi = Build(TestInputs()).two_workers_mpi();
  EXPECT_EQ(mpi.status(), kNotMeasured);
  EXPECT_EQ(mpi.note(), "OpenMPI's mpirun is not installed");
  EXPECT_FALSE(mpi.has_run());
  EXPECT_TRUE(mpi.source().empty());
  EXPECT_TRUE(mpi.parity_verdict().empty());
}

TEST(TradeReportBuilderTest, CarriesTheRunOverMpiBesideGloo) {
  TradeReportInputs inputs = TestInputs();
  inputs.two_workers_mpi = TestMpiRun();
  MpiFigures mpi = Build(inputs).two_workers_mpi();
  EXPECT_EQ(mpi.status(), kMeasured);
  EXPECT_EQ(mpi.source(), "two_worker_mpi");
  EXPECT_TRUE(mpi.note().empty());
  EXPECT_EQ(mpi.run().world_size(), 2);
  EXPECT_DOUBLE_EQ(mpi.run().examples_per_second(), 2500.5);
  EXPECT_DOUBLE_EQ(mpi.run().sync_share(), 0.05);
  EXPECT_DOUBLE_EQ(mpi.over_gloo_examples_per_second(), 2500.5 / 2000.5);
  EXPECT_TRUE(mpi.final_parameters_equal_to_gloo());
  EXPECT_EQ(mpi.parity_verdict(), kPass);
  EXPECT_EQ(mpi.parity().source(), "two_worker_mpi/parity.json");
  EXPECT_EQ(mpi.parity().reducer(), "mpi_allreduce");

  inputs.two_workers_mpi->run.summary.set_final_parameter_hash("other");
  inputs.two_workers_mpi->parity.message.set_pass(false);
  mpi = Build(inputs).two_workers_mpi();
  EXPECT_FALSE(mpi.final_parameters_equal_to_gloo());
  EXPECT_EQ(mpi.parity_verdict(), kFail);
}

TEST(TradeReportBuilderTest, RejectsARunOverMpiOfTheWrongShapeNamingTheFile) {
  TradeReportInputs inputs = TestInputs();
  inputs.two_workers_mpi = TestMpiRun();
  inputs.two_workers_mpi->run.summary.set_world_size(1);
  absl::StatusOr<TradeReport> report = BuildTradeReport(inputs);
  EXPECT_EQ(report.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(report.status().message(),
              HasSubstr("two_worker_mpi/run_summary.json: world_size is 1"));

  inputs.two_workers_mpi = TestMpiRun();
  inputs.two_workers_mpi->run.summary.set_updates(0);
  report = BuildTradeReport(inputs);
  EXPECT_THAT(report.status().message(),
              HasSubstr("two_worker_mpi/run_summary.json: updates is 0"));
}

TEST(TradeReportBuilderTest, WithoutABf16RunItIsNotMeasured) {
  const PrecisionFigures bf16 = Build(TestInputs()).two_workers_bf16();
  EXPECT_EQ(bf16.status(), kNotMeasured);
  EXPECT_EQ(bf16.note(), kNoBf16Run);
  EXPECT_FALSE(bf16.has_run());
  EXPECT_TRUE(bf16.parity_verdict().empty());
}

TEST(TradeReportBuilderTest, CarriesTheBf16RunBesideFp32) {
  TradeReportInputs inputs = TestInputs();
  inputs.two_workers_bf16 = TestBf16Run();
  PrecisionFigures bf16 = Build(inputs).two_workers_bf16();
  EXPECT_EQ(bf16.status(), kMeasured);
  EXPECT_EQ(bf16.source(), "two_worker_bf16");
  EXPECT_DOUBLE_EQ(bf16.run().examples_per_second(), 1800.5);
  EXPECT_DOUBLE_EQ(bf16.over_fp32_examples_per_second(), 1800.5 / 2000.5);
  // The largest rank of each: bf16 rank 1 151.25; fp32 rank 1 111.25.
  EXPECT_DOUBLE_EQ(bf16.peak_rss_mib(), 151.25);
  EXPECT_DOUBLE_EQ(bf16.fp32_peak_rss_mib(), 111.25);
  EXPECT_DOUBLE_EQ(bf16.macro_f1_minus_fp32(), 0.45 - 0.5);
  EXPECT_DOUBLE_EQ(bf16.run().validation().per_class(1).f1(), 0.3);
  EXPECT_EQ(bf16.parity_verdict(), kPass);
  EXPECT_EQ(bf16.parity().source(), "two_worker_bf16/parity.json");
  EXPECT_DOUBLE_EQ(bf16.derived().largest_share_of_one_update(), 0.27);
  EXPECT_DOUBLE_EQ(bf16.derived().gradient_error(), 2e-4);
  ASSERT_EQ(bf16.derived().tensors_size(), 2);
  EXPECT_EQ(bf16.derived().tensors(0).name(), "fc.weight");

  inputs.two_workers_bf16->parity.message.set_pass(false);
  bf16 = Build(inputs).two_workers_bf16();
  EXPECT_EQ(bf16.parity_verdict(), kFail);
}

TEST(TradeReportBuilderTest, CarriesTheAllRecipesRunWithItsRecipesAndWholeRun) {
  EXPECT_EQ(Build(TestInputs()).two_workers_all_recipes().note(), kNoAllRecipesRun);
  TradeReportInputs inputs = TestInputs();
  inputs.two_workers_all_recipes = TestAllRecipesRun();
  const AllRecipesFigures all = Build(inputs).two_workers_all_recipes();
  EXPECT_EQ(all.status(), kMeasured);
  EXPECT_EQ(all.source(), "two_worker_all_recipes");
  EXPECT_THAT(all.recipes(),
              ::testing::ElementsAre("accumulation_steps 2", "lr_schedule linear_warmup_cosine",
                                     "clip_grad_norm 1 (global)", "precision bf16",
                                     "keyed dropout 0.1", "batch_norm sync",
                                     "local_batch_sizes 20+12", "sampler masked_tail"));
  EXPECT_DOUBLE_EQ(all.over_fp32_examples_per_second(), 900.5 / 2000.5);
  EXPECT_EQ(all.parity_verdict(), kPass);
  EXPECT_EQ(all.whole_run().updates_size(), 2);
  EXPECT_EQ(all.parity().whole_run(),
            "whole run (drift_budget): 2 of 2 checked updates pass, numerics judged 1 of 2 "
            "tensor-updates, the other 1 diverged and left to the replay");
  EXPECT_EQ(all.parity().every_update(),
            "every update (10 of 10) verified (accounting, reduction, clipping, replicas)");
  // A failure names its update, check and rank.
  EveryUpdateVerdict failed;
  failed.set_updates(70);
  failed.set_verified(69);
  failed.mutable_first_failure()->set_update(69);
  failed.mutable_first_failure()->set_check("accounting");
  failed.mutable_first_failure()->set_rank(0);
  inputs.two_workers_all_recipes->run.parity.message.mutable_every_update()->CopyFrom(failed);
  EXPECT_EQ(Build(inputs).two_workers_all_recipes().parity().every_update(),
            "every update: 69 of 70 verified, update 69 failed the accounting check on rank 0");
  // A parity.json without a whole-run verdict is refused, naming it.
  inputs.two_workers_all_recipes->run.parity.message.clear_whole_run();
  absl::StatusOr<TradeReport> report = BuildTradeReport(inputs);
  EXPECT_EQ(report.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(report.status().message(),
              HasSubstr("two_worker_all_recipes/parity.json: no whole-run verdict"));
}

TEST(TradeReportBuilderTest, RejectsABf16RunOfTheWrongShapeNamingTheFile) {
  TradeReportInputs inputs = TestInputs();
  inputs.two_workers_bf16 = TestBf16Run();
  inputs.two_workers_bf16->run.summary.set_world_size(1);
  absl::StatusOr<TradeReport> report = BuildTradeReport(inputs);
  EXPECT_EQ(report.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(report.status().message(),
              HasSubstr("two_worker_bf16/run_summary.json: world_size is 1"));

  // An fp32 parity.json (no derived tolerance) in the bf16 folder.
  inputs.two_workers_bf16 = TestBf16Run();
  inputs.two_workers_bf16->parity.message.clear_derived();
  report = BuildTradeReport(inputs);
  EXPECT_EQ(report.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(report.status().message(),
              HasSubstr("two_worker_bf16/parity.json: no derived tolerance"));
}

TEST(TradeReportBuilderTest, LossCurvesThatDoNotLineUpAreNotCompared) {
  TradeReportInputs inputs = TestInputs();
  inputs.two_workers.summary.mutable_loss_curve(1)->set_examples_seen(99);
  EXPECT_EQ(Build(inputs).loss_curves_max_abs_diff(), -1);
}

TEST(TradeReportBuilderTest, RejectsRunsOfTheWrongShapeNamingTheFile) {
  TradeReportInputs inputs = TestInputs();
  inputs.one_worker = TestRun(2);
  inputs.one_worker.source = "one_worker/reference";
  absl::StatusOr<TradeReport> report = BuildTradeReport(inputs);
  EXPECT_EQ(report.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(report.status().message(),
              HasSubstr("one_worker/reference/run_summary.json"));

  inputs = TestInputs();
  inputs.two_workers.summary.set_world_size(1);
  report = BuildTradeReport(inputs);
  EXPECT_THAT(report.status().message(),
              HasSubstr("two_worker/run_summary.json: world_size is 1"));

  inputs = TestInputs();
  inputs.two_workers.summary.mutable_timing()->RemoveLast();
  report = BuildTradeReport(inputs);
  EXPECT_THAT(report.status().message(), HasSubstr("one per rank"));

  inputs = TestInputs();
  inputs.one_worker.summary.set_updates(0);
  report = BuildTradeReport(inputs);
  EXPECT_THAT(report.status().message(), HasSubstr("trained nothing"));
}

}  // namespace
}  // namespace receipt_parity

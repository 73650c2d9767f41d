#include "bench/scaling_table.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

SystemRun Run(const std::string& system, int world, double eps, double update_s,
              std::vector<double> rss) {
  SystemRun r;
  r.set_system(system);
  r.set_world_size(world);
  r.set_examples_per_second(eps);
  r.set_median_update_seconds(update_s);
  r.set_sync_seconds_per_update(world > 1 ? 0.0021 : 0);
  r.set_sync_share(world > 1 ? 0.125 : 0);
  for (double v : rss) r.add_peak_rss_mib(v);
  return r;
}

ScalingReport Report() {
  ScalingReport report;
  report.set_thread_settings("one thread");
  report.set_cpu_cores(2);
  report.set_load_average_before("0.5 0.4 0.3 1/99 123");
  ModelScaling* m = report.add_models();
  m->set_name("communication_bound");
  m->set_description("mlp(conv=;hidden=244;in=1x32x32;classes=4)");
  m->set_parameter_count(251080);
  m->set_image_size(32);
  m->set_batch_per_rank(32);
  *m->mutable_ours_one_worker() = Run("this_project", 1, 11111, 0.0029, {190});
  *m->mutable_ours_two_workers() = Run("this_project", 2, 22222, 0.0031, {191, 192});
  *m->mutable_ddp_one_worker() = Run("pytorch_ddp", 1, 33333, 0.004, {257});
  *m->mutable_ddp_two_workers() = Run("pytorch_ddp", 2, 4444, 0.009, {258, 259});
  *m->mutable_bare_libtorch() = Run("bare_libtorch", 1, 55555, 0.0025, {120});
  *m->mutable_bare_two_processes() = Run("bare_libtorch", 2, 66666, 0.0027, {121, 122});
  m->set_two_process_ceiling(1.2);
  m->set_ours_scaling(2.0);
  m->set_ours_over_ddp_two_workers(5.0);
  m->set_allreduce_seconds_1kib(0.0002);
  TargetCheck* t = report.add_targets();
  t->set_target("our two workers / PyTorch DDP two workers examples/s");
  t->set_model("communication_bound");
  t->set_measured(5.0);
  t->set_comparison(">=");
  t->set_threshold(2);
  t->set_met(true);
  TargetCheck* missed = report.add_targets();
  missed->set_target("peak RSS per rank / PyTorch DDP's (two workers)");
  missed->set_model("communication_bound");
  missed->set_measured(0.74);
  missed->set_comparison("<=");
  missed->set_threshold(0.6);
  missed->set_met(false);
  return report;
}

TEST(FormatScalingTableTest, EveryRunRatioAndTargetIsShown) {
  const std::string table = FormatScalingTable(Report());
  for (const char* text :
       {"communication_bound", "251080 parameters", "32x32", "batch 32 per rank",
        "11111", "22222", "33333", "4444", "55555", "66666",  // examples/s
        "2.900", "2.500",                            // update ms
        "2.100", "12.5%",                            // sync of two-worker runs
        "191 / 192", "258 / 259", "120", "121 / 122",  // RSS per rank
        "two bare processes 1.20x (the ceiling here)", "load average before 0.5",
        "this project 2.00x", "our 2w / DDP 2w 5.00x", "0.200 ms for 1 KiB",
        "MET    communication_bound", "MISSED communication_bound",
        "0.740 <= 0.60"}) {
    EXPECT_THAT(table, HasSubstr(text));
  }
  EXPECT_THAT(table, Not(HasSubstr("SMOKE")));
  EXPECT_EQ(table.back(), '\n');
}

TEST(FormatScalingTableTest, BatchNormLinesAndIssue49TargetsWhereMeasured) {
  ScalingReport report = Report();
  EXPECT_THAT(FormatScalingTable(report), Not(HasSubstr("batch norm")));
  EXPECT_THAT(FormatScalingTable(report), Not(HasSubstr("issue 49")));
  ModelScaling* m = report.mutable_models(0);
  *m->mutable_ours_two_workers_sync_batch_norm() = receipt_parity::Run("this project", 2, 850, 0.07, {300});
  m->set_sync_batch_norm_examples_per_second_ratio(0.85);
  m->set_sync_batch_norm_accumulation_2_examples_per_second_ratio(0.875);
  m->set_sync_batch_norm_accumulation_4_examples_per_second_ratio(0.79);
  m->set_sync_batch_norm_peak_rss_ratio(1.25);
  TargetCheck* missed = report.add_targets();
  missed->set_target("synchronized / per-rank batch norm examples/s, 4 micro-batches");
  missed->set_model("compute_bound");
  missed->set_measured(0.79);
  missed->set_comparison(">=");
  missed->set_threshold(0.8);
  missed->set_issue(49);
  const std::string table = FormatScalingTable(report);
  EXPECT_THAT(table, HasSubstr("synchronized over per-rank batch norm at 1 / 2 / 4 "
                               "micro-batches per update: examples/s 0.85x / 0.88x / 0.79x, "
                               "peak RSS 1.25x"));
  EXPECT_THAT(table, HasSubstr("targets (issue 49):\n  MISSED compute_bound        "
                               "synchronized / per-rank batch norm examples/s, 4 "
                               "micro-batches: 0.790 >= 0.80"));
}

TEST(FormatScalingTableTest, Issue13TargetsAreListedAfterIssue7s) {
  ScalingReport report = Report();
  for (TargetCheck& t : *report.mutable_targets()) t.set_issue(7);
  ModelScaling* m = report.mutable_models(0);
  m->set_ours_over_ceiling(0.875);
  m->set_rss_ratio_to_bare(1.25);
  TargetCheck* met = report.add_targets();
  met->set_target("our two workers / PyTorch DDP two workers examples/s");
  met->set_model("communication_bound");
  met->set_measured(5.0);
  met->set_comparison(">=");
  met->set_threshold(1.3);
  met->set_met(true);
  met->set_issue(13);
  TargetCheck* missed = report.add_targets();
  missed->set_target("peak RSS per rank / bare LibTorch step's (two workers)");
  missed->set_model("communication_bound");
  missed->set_measured(1.25);
  missed->set_comparison("<=");
  missed->set_threshold(1.05);
  missed->set_met(false);
  missed->set_issue(13);
  const std::string table = FormatScalingTable(report);
  EXPECT_THAT(table, HasSubstr("our 2w/1w over the ceiling 0.88x; RSS ours / bare step "
                               "1.25x"));
  EXPECT_THAT(table, Not(HasSubstr("over MPI")));  // no MPI run
  const size_t issue7 = table.find("targets (issue 7):\n");
  const size_t issue13 = table.find("targets (issue 13):\n");
  ASSERT_NE(issue7, std::string::npos);
  ASSERT_NE(issue13, std::string::npos);
  const std::string old_list = table.substr(issue7, issue13 - issue7);
  const std::string new_list = table.substr(issue13);
  EXPECT_THAT(old_list, HasSubstr("5.000 >= 2.00"));
  EXPECT_THAT(old_list, HasSubstr("0.740 <= 0.60"));
  EXPECT_THAT(old_list, Not(HasSubstr("bare LibTorch step's")));
  EXPECT_THAT(new_list,
              HasSubstr("MET    communication_bound  our two workers / PyTorch DDP two "
                        "workers examples/s: 5.000 >= 1.30\n"));
  EXPECT_THAT(new_list,
              HasSubstr("MISSED communication_bound  peak RSS per rank / bare LibTorch "
                        "step's (two workers): 1.250 <= 1.05\n"));
  EXPECT_THAT(new_list, Not(HasSubstr("0.740")));
}

TEST(FormatScalingTableTest, MpiRatiosWhenMpiRan) {
  ScalingReport report = Report();
  ModelScaling* m = report.mutable_models(0);
  *m->mutable_ours_two_workers_mpi() =
      receipt_parity::Run("this_project", 2, 77777, 0.002, {193, 194});
  m->set_ours_mpi_over_ddp_two_workers(17.5);
  m->set_ours_mpi_scaling(7.0);
  m->set_ours_mpi_over_ceiling(5.83);
  m->set_rss_ratio_to_bare_mpi(1.62);
  const std::string table = FormatScalingTable(report);
  EXPECT_THAT(table, HasSubstr("77777"));
  EXPECT_THAT(table, HasSubstr("our 2w over MPI / DDP 2w 17.50x\n"));
  EXPECT_THAT(table, HasSubstr("over MPI: 2w/1w 7.00x, over the ceiling 5.83x; RSS / "
                               "bare step 1.62x\n"));
}

TEST(FormatScalingTableTest, AccumulationRowsAndRatiosWhenRun) {
  EXPECT_THAT(FormatScalingTable(Report()), Not(HasSubstr("accumulate")));
  ScalingReport report = Report();
  ModelScaling* m = report.mutable_models(0);
  *m->mutable_ours_two_workers_accumulation_2() =
      receipt_parity::Run("this_project", 2, 21111, 0.0032, {181, 182});
  *m->mutable_ours_two_workers_accumulation_4() =
      receipt_parity::Run("this_project", 2, 20000, 0.0034, {171, 172});
  m->set_accumulation_2_examples_per_second_ratio(0.95);
  m->set_accumulation_4_examples_per_second_ratio(0.9);
  m->set_accumulation_2_peak_rss_ratio(0.948);
  m->set_accumulation_4_peak_rss_ratio(0.896);
  const std::string table = FormatScalingTable(report);
  EXPECT_THAT(table, HasSubstr("  this project, accumulate 2   2        21111"));
  EXPECT_THAT(table, HasSubstr("171 / 172"));
  EXPECT_THAT(table, HasSubstr("2w, 2 / 4 micro-batches per update at the same global "
                               "batch over 1: examples/s 0.95x / 0.90x, peak RSS "
                               "0.95x / 0.90x\n"));
}

TEST(FormatScalingTableTest, OrderedSumRowAndRatiosWhenRun) {
  EXPECT_THAT(FormatScalingTable(Report()), Not(HasSubstr("ordered_sum")));
  ScalingReport report = Report();
  ModelScaling* m = report.mutable_models(0);
  m->mutable_ours_two_workers()->set_bytes_reduced_per_update(1004320);
  *m->mutable_ours_two_workers_ordered_sum() =
      receipt_parity::Run("this_project", 2, 17777, 0.0036, {201, 203});
  m->mutable_ours_two_workers_ordered_sum()->set_bytes_reduced_per_update(4017280);
  m->set_ordered_sum_examples_per_second_ratio(0.8);
  m->set_ordered_sum_bytes_per_update_ratio(4);
  m->set_ordered_sum_peak_rss_ratio(1.057);
  const std::string table = FormatScalingTable(report);
  EXPECT_THAT(table, HasSubstr("  this project, ordered_sum    2        17777"));
  EXPECT_THAT(table, HasSubstr("201 / 203"));
  EXPECT_THAT(table, HasSubstr("2w, ordered_sum over allreduce_sum: examples/s 0.80x, "
                               "bytes all-reduced per update 4.00x (4017280 / 1004320), "
                               "peak RSS 1.06x\n"));
}

TEST(FormatScalingTableTest, ModelRouteRowsAndRatiosWhenRun) {
  EXPECT_THAT(FormatScalingTable(Report()), Not(HasSubstr("as a Python module")));
  ScalingReport report = Report();
  ModelScaling* m = report.mutable_models(0);
  *m->mutable_ours_two_workers_torchscript() =
      receipt_parity::Run("this_project", 2, 20900, 0.0032, {191, 192});
  *m->mutable_ours_two_workers_python_module() =
      receipt_parity::Run("this_project", 2, 15000, 0.0044, {431, 432});
  m->set_torchscript_examples_per_second_ratio(0.99);
  m->set_python_module_examples_per_second_ratio(0.71);
  m->set_torchscript_peak_rss_ratio(1.01);
  m->set_python_module_peak_rss_ratio(2.27);
  const std::string table = FormatScalingTable(report);
  EXPECT_THAT(table, HasSubstr("  this project, Python         2        15000"));
  EXPECT_THAT(table, HasSubstr("431 / 432"));
  EXPECT_THAT(table, HasSubstr("2w, the model as TorchScript / as a Python module over "
                               "built in: examples/s 0.99x / 0.71x, peak RSS 1.01x / "
                               "2.27x\n"));
}

TEST(FormatScalingTableTest, SmokeRunsSayTheirFiguresMeanNothing) {
  ScalingReport report = Report();
  report.set_smoke(true);
  EXPECT_THAT(FormatScalingTable(report), HasSubstr("SMOKE RUN"));
}

}  // namespace
}  // namespace receipt_parity

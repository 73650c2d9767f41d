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

TEST(FormatScalingTableTest, SmokeRunsSayTheirFiguresMeanNothing) {
  ScalingReport report = Report();
  report.set_smoke(true);
  EXPECT_THAT(FormatScalingTable(report), HasSubstr("SMOKE RUN"));
}

}  // namespace
}  // namespace receipt_parity

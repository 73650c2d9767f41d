#include "bench/scaling_table.h"

#include <algorithm>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace receipt_parity {
namespace {

std::string RssList(const SystemRun& run) {
  std::vector<std::string> parts;
  for (double rss : run.peak_rss_mib()) parts.push_back(absl::StrFormat("%.0f", rss));
  return absl::StrJoin(parts, " / ");
}

std::string Row(const std::string& label, const SystemRun& run) {
  const bool synced = run.system() != "bare_libtorch" && run.world_size() > 1;
  return absl::StrFormat(
      "  %-26s %3d %12.0f %10.3f %10s %8s   %s\n", label, run.world_size(),
      run.examples_per_second(), run.median_update_seconds() * 1e3,
      synced ? absl::StrFormat("%.3f", run.sync_seconds_per_update() * 1e3) : "-",
      synced ? absl::StrFormat("%.1f%%", run.sync_share() * 100) : "-",
      RssList(run));
}

// One line per target whose issue `shown` accepts, MET or MISSED.
template <typename IssueFilter>
std::string TargetLines(const ScalingReport& report, IssueFilter shown) {
  std::string out;
  for (const TargetCheck& t : report.targets()) {
    if (!shown(t.issue())) continue;
    absl::StrAppend(&out, absl::StrFormat("  %-6s %-20s %s: %.3f %s %.2f\n",
                                          t.met() ? "MET" : "MISSED", t.model(),
                                          t.target(), t.measured(), t.comparison(),
                                          t.threshold()));
  }
  return out;
}

// What the report says of its measuring: smoke, threads, load, rounds.
std::string Preamble(const ScalingReport& report) {
  std::string out;
  if (report.smoke()) {
    absl::StrAppend(&out, "SMOKE RUN: tiny sizes, the figures mean nothing.\n");
  }
  absl::StrAppend(&out, "threads: ", report.thread_settings(), "; ",
                  report.cpu_cores(), " CPU cores; load average before ",
                  report.load_average_before(), ", after ",
                  report.load_average_after(), "\neach figure: the best of ",
                  report.rounds(), " interleaved round(s) by examples/s\n");
  return out;
}

// `run`'s row when the model measured it, or nothing.
std::string RowIf(bool measured, const std::string& label, const SystemRun& run) {
  return measured ? Row(label, run) : std::string();
}

// The model's heading and one row per system it measured.
std::string SystemRows(const ModelScaling& m) {
  std::string out = absl::StrCat(
      "\n", m.name(), ": ", m.description(), ", ", m.parameter_count(), " parameters, ",
      m.image_size(), "x", m.image_size(), " inputs, batch ", m.batch_per_rank(),
      " per rank\n");
  absl::StrAppend(&out, absl::StrFormat("  %-26s %3s %12s %10s %10s %8s   %s\n", "system", "W",
                                        "examples/s", "update ms", "sync ms", "sync %",
                                        "peak RSS MiB per rank"));
  absl::StrAppend(
      &out, Row("this project", m.ours_one_worker()), Row("this project", m.ours_two_workers()),
      RowIf(m.has_ours_two_workers_mpi(), "this project, over MPI", m.ours_two_workers_mpi()),
      RowIf(m.has_ours_two_workers_accumulation_2(), "this project, accumulate 2",
            m.ours_two_workers_accumulation_2()),
      RowIf(m.has_ours_two_workers_accumulation_4(), "this project, accumulate 4",
            m.ours_two_workers_accumulation_4()),
      RowIf(m.has_ours_two_workers_ordered_sum(), "this project, ordered_sum",
            m.ours_two_workers_ordered_sum()),
      RowIf(m.has_ours_two_workers_ordered_sum_whole_shares(), "ordered_sum, 1 chunk/rank",
            m.ours_two_workers_ordered_sum_whole_shares()),
      RowIf(m.has_ours_three_workers(), "this project", m.ours_three_workers()),
      RowIf(m.has_ours_three_workers_ordered_sum(), "this project, ordered_sum",
            m.ours_three_workers_ordered_sum()),
      RowIf(m.has_ours_four_workers(), "this project", m.ours_four_workers()),
      RowIf(m.has_ours_four_workers_ordered_sum(), "this project, ordered_sum",
            m.ours_four_workers_ordered_sum()),
      RowIf(m.has_ours_two_workers_per_rank_batch_norm(), "this project, per-rank BN",
            m.ours_two_workers_per_rank_batch_norm()),
      RowIf(m.has_ours_two_workers_sync_batch_norm(), "this project, sync BN",
            m.ours_two_workers_sync_batch_norm()),
      RowIf(m.has_ours_two_workers_sync_batch_norm_accumulation_4(),
            "this project, sync BN, acc. 4", m.ours_two_workers_sync_batch_norm_accumulation_4()),
      RowIf(m.has_ours_two_workers_torchscript(), "this project, TorchScript",
            m.ours_two_workers_torchscript()),
      RowIf(m.has_ours_two_workers_python_module(), "this project, Python",
            m.ours_two_workers_python_module()),
      Row("PyTorch DDP", m.ddp_one_worker()), Row("PyTorch DDP", m.ddp_two_workers()),
      Row("bare LibTorch step", m.bare_libtorch()),
      Row("bare step x2, no comm", m.bare_two_processes()));
  return out;
}

// The ratios every model has: scaling, the ceiling, DDP, the bare step.
std::string ScalingLines(const ModelScaling& m) {
  return absl::StrCat(
      absl::StrFormat("  2w/1w: this project %.2fx, DDP %.2fx, two bare processes "
                      "%.2fx (the ceiling here)\n  our 2w / DDP 2w %.2fx; harness / "
                      "bare update %.2fx; RSS ours / DDP %.2fx\n",
                      m.ours_scaling(), m.ddp_scaling(), m.two_process_ceiling(),
                      m.ours_over_ddp_two_workers(), m.harness_over_bare_update_time(),
                      m.rss_ratio_to_ddp()),
      absl::StrFormat("  our 2w/1w over the ceiling %.2fx; RSS ours / bare step %.2fx\n",
                      m.ours_over_ceiling(), m.rss_ratio_to_bare()));
}

// Over MPI, and the micro-batches against one, where measured.
std::string MpiAndAccumulationLines(const ModelScaling& m) {
  std::string out;
  if (m.has_ours_two_workers_mpi()) {
    absl::StrAppend(&out, absl::StrFormat("  our 2w over MPI / DDP 2w %.2fx\n",
                                          m.ours_mpi_over_ddp_two_workers()));
    absl::StrAppend(&out, absl::StrFormat("  over MPI: 2w/1w %.2fx, over the ceiling %.2fx; "
                                          "RSS / bare step %.2fx\n",
                                          m.ours_mpi_scaling(), m.ours_mpi_over_ceiling(),
                                          m.rss_ratio_to_bare_mpi()));
  }
  if (m.physical_floor_examples_per_second() > 0) {
    absl::StrAppend(
        &out, absl::StrFormat("  physical floor (two bare steps + a %.3f ms shared-memory "
                              "all-reduce): %.0f examples/s; our 2w over MPI %.2fx of it\n",
                              1e3 * m.shm_allreduce_seconds_gradient(),
                              m.physical_floor_examples_per_second(),
                              m.ours_mpi_over_physical_floor()));
  }
  if (m.has_ours_two_workers_accumulation_2()) {
    absl::StrAppend(&out, absl::StrFormat("  2w, 2 / 4 micro-batches per update at the same "
                                          "global batch over 1: examples/s %.2fx / %.2fx, "
                                          "peak RSS %.2fx / %.2fx\n",
                                          m.accumulation_2_examples_per_second_ratio(),
                                          m.accumulation_4_examples_per_second_ratio(),
                                          m.accumulation_2_peak_rss_ratio(),
                                          m.accumulation_4_peak_rss_ratio()));
  }
  return out;
}

// The ordered mode and the every-update checks against the plain run.
std::string OrderedAndChecksLines(const ModelScaling& m) {
  std::string out;
  if (m.has_ours_two_workers_ordered_sum()) {
    absl::StrAppend(
        &out, absl::StrFormat("  2w, ordered_sum over allreduce_sum: examples/s %.2fx, "
                              "bytes all-reduced per update %.2fx (%.0f / %.0f), "
                              "peak RSS %.2fx\n",
                              m.ordered_sum_examples_per_second_ratio(),
                              m.ordered_sum_bytes_per_update_ratio(),
                              m.ours_two_workers_ordered_sum().bytes_reduced_per_update(),
                              m.ours_two_workers().bytes_reduced_per_update(),
                              m.ordered_sum_peak_rss_ratio()));
  }
  if (m.has_ours_two_workers_ordered_sum_whole_shares()) {
    absl::StrAppend(&out, absl::StrFormat("  2w, ordered_sum with one chunk a rank over "
                                          "allreduce_sum: examples/s %.2fx\n",
                                          m.ordered_sum_whole_shares_examples_per_second_ratio()));
  }
  const std::tuple<int, const SystemRun*, const SystemRun*, double, double> wider[] = {
      {3, &m.ours_three_workers(), &m.ours_three_workers_ordered_sum(),
       m.ordered_sum_3w_examples_per_second_ratio(), m.ordered_sum_3w_bytes_per_update_ratio()},
      {4, &m.ours_four_workers(), &m.ours_four_workers_ordered_sum(),
       m.ordered_sum_4w_examples_per_second_ratio(), m.ordered_sum_4w_bytes_per_update_ratio()}};
  for (const auto& [world, sum, ordered, examples, bytes] : wider) {
    if (ordered->examples_per_second() <= 0) continue;
    absl::StrAppend(&out, absl::StrFormat("  %dw, ordered_sum over allreduce_sum: examples/s "
                                          "%.2fx (%.0f / %.0f), bytes per update %.2fx\n",
                                          world, examples, ordered->examples_per_second(),
                                          sum->examples_per_second(), bytes));
  }
  if (m.ours_two_workers().replay_seconds_per_checked_update() > 0) {
    absl::StrAppend(&out, absl::StrFormat("  2w, the replay of a checked update: %.1f ms, %.2fx "
                                          "the update's compute (two one-worker updates)\n",
                                          1e3 * m.ours_two_workers()
                                                    .replay_seconds_per_checked_update(),
                                          m.replay_over_update_compute()));
  }
  if (m.has_ours_two_workers_checks_off()) {
    absl::StrAppend(&out, absl::StrFormat("  2w, the every-update checks: %.1f%% of an update, "
                                          "examples/s with / without %.2fx",
                                          100 * m.ours_two_workers().check_share(),
                                          m.every_update_examples_per_second_ratio()));
    if (m.has_ours_two_workers_mpi_checks_off()) {
      absl::StrAppend(&out, absl::StrFormat("; over MPI %.1f%%, %.2fx",
                                            100 * m.ours_two_workers_mpi().check_share(),
                                            m.every_update_mpi_examples_per_second_ratio()));
    }
    absl::StrAppend(&out, "\n");
  }
  return out;
}

// Synchronized against per-rank batch norm, where measured.
std::string BatchNormLines(const ModelScaling& m) {
  if (!m.has_ours_two_workers_sync_batch_norm()) return "";
  return absl::StrFormat(
      "  2w, synchronized over per-rank batch norm at 1 / 2 / 4 micro-batches per update: "
      "examples/s %.2fx / %.2fx / %.2fx, peak RSS %.2fx / %.2fx / %.2fx\n",
      m.sync_batch_norm_examples_per_second_ratio(),
      m.sync_batch_norm_accumulation_2_examples_per_second_ratio(),
      m.sync_batch_norm_accumulation_4_examples_per_second_ratio(),
      m.sync_batch_norm_peak_rss_ratio(), m.sync_batch_norm_accumulation_2_peak_rss_ratio(),
      m.sync_batch_norm_accumulation_4_peak_rss_ratio());
}

// The model as TorchScript and as a Python module, and Gloo's own
// all-reduce, where measured.
std::string ModelFormAndGlooLines(const ModelScaling& m) {
  std::string out;
  if (m.has_ours_two_workers_python_module()) {
    absl::StrAppend(&out, absl::StrFormat("  2w, the model as TorchScript / as a Python module "
                                          "over built in: examples/s %.2fx / %.2fx, peak RSS "
                                          "%.2fx / %.2fx\n",
                                          m.torchscript_examples_per_second_ratio(),
                                          m.python_module_examples_per_second_ratio(),
                                          m.torchscript_peak_rss_ratio(),
                                          m.python_module_peak_rss_ratio()));
  }
  if (m.allreduce_seconds_1kib() > 0) {
    absl::StrAppend(&out, absl::StrFormat("  Gloo all-reduce here: %.3f ms for 1 KiB, %.3f "
                                          "ms for the gradient (%d floats)\n",
                                          m.allreduce_seconds_1kib() * 1e3,
                                          m.allreduce_seconds_gradient() * 1e3,
                                          m.parameter_count()));
  }
  return out;
}

}  // namespace

std::string FormatScalingTable(const ScalingReport& report) {
  std::string out = Preamble(report);
  for (const ModelScaling& m : report.models()) {
    absl::StrAppend(&out, SystemRows(m), ScalingLines(m), MpiAndAccumulationLines(m),
                    OrderedAndChecksLines(m), BatchNormLines(m), ModelFormAndGlooLines(m));
  }
  absl::StrAppend(&out, "\ntargets (issue 7):\n",
                  TargetLines(report,
                              [](int issue) {
                                return issue != 13 && issue != 46 && issue != 49;
                              }),
                  "targets (issue 13):\n",
                  TargetLines(report, [](int issue) { return issue == 13; }),
                  "targets (issue 46):\n",
                  TargetLines(report, [](int issue) { return issue == 46; }));
  const bool measured_49 = std::any_of(report.targets().begin(), report.targets().end(),
                                       [](const TargetCheck& c) { return c.issue() == 49; });
  if (measured_49) {
    absl::StrAppend(&out, "targets (issue 49):\n",
                    TargetLines(report, [](int issue) { return issue == 49; }));
  }
  return out;
}

}  // namespace receipt_parity

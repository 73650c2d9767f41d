#include "study/trade_report_markdown.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "study/markdown_table.h"
#include "study/trade_report_all_recipes.h"
#include "study/trade_report_planted.h"
#include "study/trade_report_world_size.h"
#include "study/trade_report_builder.h"
#include "drill/drill_report.pb.h"
#include "artifacts/run_summary.pb.h"

namespace receipt_parity {
namespace {

using markdown::Fixed;
using markdown::HeaderRow;
using markdown::kDash;
using markdown::Ms;
using markdown::Percent;
using markdown::Row;
using markdown::YesNo;

// "rank 1, last to the gradient reduction in 12 of 40 timed updates
// (median lateness 0.400 ms, p90 1.200 ms)", or why none is named.
std::string StragglerText(const RunFigures& run) {
  for (const RankLateness& rank : run.lateness()) {
    if (rank.rank() != run.straggler_rank()) continue;
    return absl::StrCat("rank ", rank.rank(), ", last to the gradient reduction in ",
                        rank.times_last(), " of ", rank.updates(),
                        " timed updates (median lateness ", Ms(rank.median_lateness_seconds()),
                        " ms, p90 ", Ms(rank.p90_lateness_seconds()), " ms)");
  }
  return "none named (no rank came last at a timed update)";
}

std::string CheckpointCostLine(const CheckpointFigures& figures) {
  if (figures.status() != kMeasured) return kNotMeasured;
  const CheckpointCost& cost = figures.cost();
  std::string line = absl::StrFormat(
      "%.0f bytes per generation, saved in %.2f ms (median of %d)",
      cost.bytes_per_generation(), 1000 * cost.save_seconds_median(),
      cost.generations_saved());
  if (cost.save_vs_sequential_ratio() > 0) {
    absl::StrAppendFormat(&line,
                          ", %.2f× one fsync'd sequential write of the same "
                          "bytes",
                          cost.save_vs_sequential_ratio());
  }
  return line;
}

std::string PeakRss(const RunFigures& run, int rank) {
  for (const RankFigures& r : run.ranks()) {
    if (r.rank() == rank) return Fixed(r.peak_rss_mib(), 1);
  }
  return kDash;
}

// "2010.5 examples/s, 1.01× Gloo; final parameters equal to Gloo's: yes;
// parity pass", or "not measured (why)".
std::string MpiLine(const MpiFigures& mpi) {
  if (mpi.status() != kMeasured) {
    return mpi.note().empty() ? kNotMeasured
                              : absl::StrCat(kNotMeasured, " (", mpi.note(), ")");
  }
  return absl::StrCat(Fixed(mpi.run().examples_per_second(), 1),
                      " examples/s, ", Fixed(mpi.over_gloo_examples_per_second(), 2),
                      "× Gloo; sync ", Percent(mpi.run().sync_share()),
                      " of an update; final parameters equal to Gloo's: ",
                      YesNo(mpi.final_parameters_equal_to_gloo()), "; parity ",
                      mpi.parity_verdict());
}

// "1890.2 examples/s, 0.94× fp32; macro F1 +0.0012 against fp32; parity
// pass (first update: 5 of 6 tensors judged by numerics, bn0.bias left to
// the replay)", or "not measured
// (why)".
std::string Bf16Line(const PrecisionFigures& bf16) {
  if (bf16.status() != kMeasured) {
    return bf16.note().empty()
               ? kNotMeasured
               : absl::StrCat(kNotMeasured, " (", bf16.note(), ")");
  }
  return absl::StrCat(
      Fixed(bf16.run().examples_per_second(), 1), " examples/s, ",
      Fixed(bf16.over_fp32_examples_per_second(), 2), "× fp32; macro F1 ",
      absl::StrFormat("%+.4f", bf16.macro_f1_minus_fp32()),
      " against fp32; parity ", bf16.parity_verdict(), " (first update: ",
      bf16.derived().judged_tensors(), " of ", bf16.derived().tensors_size(),
      " tensors judged by numerics",
      bf16.derived().not_judged_tensors().empty()
          ? ""
          : absl::StrCat(", ", absl::StrJoin(bf16.derived().not_judged_tensors(), ", "),
                         " left to the replay"),
      ")");
}

void AppendThroughput(const TradeReport& report, std::string* md) {
  const RunFigures& one = report.one_worker();
  const RunFigures& two = report.two_workers();
  absl::StrAppend(md, "## Throughput, synchronisation, memory\n\n");
  absl::StrAppend(md, HeaderRow({"", "one worker", "two workers"}));
  absl::StrAppend(
      md, Row({absl::StrCat("examples/s (median of timing windows after ",
                            two.warmup_updates(), " warm-up updates)"),
               Fixed(one.examples_per_second(), 1),
               Fixed(two.examples_per_second(), 1)}));
  absl::StrAppend(md, Row({"update time, ms (mean, slowest rank)",
                           Ms(one.update_seconds()), Ms(two.update_seconds())}));
  absl::StrAppend(md, Row({"gradient synchronisation per update, ms",
                           Ms(one.sync_seconds_per_update()),
                           Ms(two.sync_seconds_per_update())}));
  absl::StrAppend(md, Row({"synchronisation share of an update",
                           Percent(one.sync_share()),
                           Percent(two.sync_share())}));
  for (const RankLateness& rank : two.lateness()) {
    absl::StrAppend(
        md, Row({absl::StrCat("rank ", rank.rank(),
                              ": last to the gradient reduction; lateness median, p90, ms"),
                 "-",
                 absl::StrCat(rank.times_last(), " of ", rank.updates(), " updates; ",
                              Ms(rank.median_lateness_seconds()), ", ",
                              Ms(rank.p90_lateness_seconds()))}));
  }
  const int ranks = std::max(one.ranks_size(), two.ranks_size());
  for (int r = 0; r < ranks; ++r) {
    absl::StrAppend(md, Row({absl::StrCat("peak resident memory, rank ", r,
                                          ", MiB"),
                             PeakRss(one, r), PeakRss(two, r)}));
  }
  absl::StrAppend(md, Row({"updates / epochs",
                           absl::StrCat(one.updates(), " / ",
                                        one.epochs_completed()),
                           absl::StrCat(two.updates(), " / ",
                                        two.epochs_completed())}));
  absl::StrAppend(md, Row({"sampler duplicate slots (all epochs)",
                           absl::StrCat(one.duplicate_slots()),
                           absl::StrCat(two.duplicate_slots())}));
  absl::StrAppend(md, Row({"sampler masked slots (all epochs)",
                           absl::StrCat(one.masked_slots()),
                           absl::StrCat(two.masked_slots())}));
  absl::StrAppend(md, Row({"final training loss", Fixed(one.final_loss(), 6),
                           Fixed(two.final_loss(), 6)}));
  absl::StrAppend(md, "\n");
  if (report.loss_curves_max_abs_diff() >= 0) {
    absl::StrAppendFormat(
        md,
        "The two loss curves differ by at most %.3g over the %d updates "
        "they share.\n\n",
        report.loss_curves_max_abs_diff(),
        std::min(one.loss_curve_size(), two.loss_curve_size()));
  } else {
    absl::StrAppend(md,
                    "The two loss curves do not have the same updates and "
                    "examples seen; they are not compared point by point.\n\n");
  }
}

// The two-worker run over MPI beside the one over Gloo, or why it is not
// there.
void AppendMpi(const TradeReport& report, std::string* md) {
  const MpiFigures& mpi = report.two_workers_mpi();
  absl::StrAppend(md, "## Two workers over MPI\n\n");
  if (mpi.status() != kMeasured) {
    absl::StrAppend(md, "**", kNotMeasured, "** (", mpi.note(), ").\n\n");
    return;
  }
  const RunFigures& gloo = report.two_workers();
  const RunFigures& run = mpi.run();
  absl::StrAppend(md, HeaderRow({"", "two workers, Gloo", "two workers, MPI"}));
  absl::StrAppend(md, Row({"examples/s", Fixed(gloo.examples_per_second(), 1),
                           Fixed(run.examples_per_second(), 1)}));
  absl::StrAppend(md, Row({"update time, ms (mean, slowest rank)",
                           Ms(gloo.update_seconds()), Ms(run.update_seconds())}));
  absl::StrAppend(md, Row({"gradient synchronisation per update, ms",
                           Ms(gloo.sync_seconds_per_update()),
                           Ms(run.sync_seconds_per_update())}));
  absl::StrAppend(md, Row({"synchronisation share of an update",
                           Percent(gloo.sync_share()), Percent(run.sync_share())}));
  absl::StrAppend(md, Row({"final training loss", Fixed(gloo.final_loss(), 6),
                           Fixed(run.final_loss(), 6)}));
  absl::StrAppend(md, "\nOver MPI: ", MpiLine(mpi), ".\n\nFrom `", mpi.source(),
                  "` (its parity against the one-update reference of its "
                  "own config, in its folder).\n\n");
}

const ClassMetrics* FindClass(const ValidationFigures& v,
                              const std::string& label) {
  for (const ClassMetrics& c : v.per_class()) {
    if (c.label() == label) return &c;
  }
  return nullptr;
}

std::string F1Cell(const ClassMetrics* c) {
  return c == nullptr ? kDash : Fixed(c->f1(), 3);
}

// The two-worker run in bf16 beside the fp32 one, or why it is not there.
void AppendBf16(const TradeReport& report, std::string* md) {
  const PrecisionFigures& bf16 = report.two_workers_bf16();
  absl::StrAppend(md, "## fp32 against bf16\n\n");
  if (bf16.status() != kMeasured) {
    absl::StrAppend(md, "**", kNotMeasured, "** (", bf16.note(), ").\n\n");
    return;
  }
  const RunFigures& fp32 = report.two_workers();
  const RunFigures& run = bf16.run();
  absl::StrAppend(md, HeaderRow({"", "two workers, fp32", "two workers, bf16"}));
  absl::StrAppend(md, Row({"examples/s", Fixed(fp32.examples_per_second(), 1),
                           Fixed(run.examples_per_second(), 1)}));
  absl::StrAppend(md, Row({"update time, ms (mean, slowest rank)",
                           Ms(fp32.update_seconds()), Ms(run.update_seconds())}));
  absl::StrAppend(md, Row({"peak resident memory, largest rank, MiB",
                           Fixed(bf16.fp32_peak_rss_mib(), 1),
                           Fixed(bf16.peak_rss_mib(), 1)}));
  absl::StrAppend(md, Row({"final training loss", Fixed(fp32.final_loss(), 6),
                           Fixed(run.final_loss(), 6)}));
  absl::StrAppend(md, Row({"accuracy", Fixed(fp32.validation().accuracy(), 4),
                           Fixed(run.validation().accuracy(), 4)}));
  absl::StrAppend(md, Row({"macro F1", Fixed(fp32.validation().macro_f1(), 4),
                           Fixed(run.validation().macro_f1(), 4)}));
  for (const ClassMetrics& c : fp32.validation().per_class()) {
    absl::StrAppend(
        md, Row({absl::StrCat("F1, ", c.label(), " (support ", c.support(), ")"),
                 F1Cell(&c), F1Cell(FindClass(run.validation(), c.label()))}));
  }
  absl::StrAppend(md, "\nbf16: ", Bf16Line(bf16),
                  ".\n\nIts parity tolerance is derived, not tuned: ",
                  bf16.derived().method(), ".\n\nFrom `", bf16.source(),
                  "` (its parity against the one-update bf16 reference of its "
                  "own config, in its folder).\n\n");
}

std::string ClassCell(const ClassMetrics* c) {
  if (c == nullptr) return kDash;
  return absl::StrCat(Fixed(c->precision(), 3), " / ", Fixed(c->recall(), 3),
                      " / ", Fixed(c->f1(), 3));
}

void AppendValidation(const TradeReport& report, std::string* md) {
  const ValidationFigures& one = report.one_worker().validation();
  const ValidationFigures& two = report.two_workers().validation();
  absl::StrAppend(md, "## Validation (deduplicated metric)\n\n");
  absl::StrAppend(md, HeaderRow({"", "one worker", "two workers"}));
  absl::StrAppend(md, Row({"dedup plugin", one.dedup(), two.dedup()}));
  absl::StrAppend(md, Row({"predictions gathered",
                           absl::StrCat(one.predictions_gathered()),
                           absl::StrCat(two.predictions_gathered())}));
  absl::StrAppend(md, Row({"unique ids counted",
                           absl::StrCat(one.unique_ids_counted()),
                           absl::StrCat(two.unique_ids_counted())}));
  absl::StrAppend(md, Row({"duplicates dropped",
                           absl::StrCat(one.duplicates_dropped()),
                           absl::StrCat(two.duplicates_dropped())}));
  absl::StrAppend(md, Row({"accuracy", Fixed(one.accuracy(), 4),
                           Fixed(two.accuracy(), 4)}));
  absl::StrAppend(md, Row({"macro F1", Fixed(one.macro_f1(), 4),
                           Fixed(two.macro_f1(), 4)}));
  absl::StrAppend(md, "\nPer class, precision / recall / F1:\n\n");
  absl::StrAppend(md, HeaderRow({"class", "support", "one worker",
                                 "two workers"}));
  // Rows in the one-worker label order, then any class only two has.
  std::vector<std::string> labels;
  for (const ClassMetrics& c : one.per_class()) labels.push_back(c.label());
  for (const ClassMetrics& c : two.per_class()) {
    if (std::find(labels.begin(), labels.end(), c.label()) == labels.end()) {
      labels.push_back(c.label());
    }
  }
  for (const std::string& label : labels) {
    const ClassMetrics* a = FindClass(one, label);
    const ClassMetrics* b = FindClass(two, label);
    absl::StrAppend(md, Row({label, absl::StrCat((a != nullptr ? a : b)->support()),
                             ClassCell(a), ClassCell(b)}));
  }
  absl::StrAppend(md, "\n");
}

std::string SplitText(const ParityFigures& p) {
  return p.split().empty() ? kDash : absl::StrJoin(p.split(), "+");
}

void AppendParity(const TradeReport& report, std::string* md) {
  absl::StrAppend(md, "## Gradient parity with the one-worker reference\n\n");
  absl::StrAppend(md, HeaderRow({"check", "verdict", "split", "weighting",
                                 "reducer", "max abs diff", "max rel diff",
                                 "bitwise equal", "rtol / atol"}));
  std::vector<std::pair<const char*, const ParityFigures*>> checks = {
      {"two-worker run (real processes)", &report.parity()},
      {"one process, ranks as threads (simulated)", &report.simulated_parity()},
  };
  if (report.two_workers_mpi().status() == kMeasured) {
    checks.push_back({"two-worker run over MPI (real processes)",
                      &report.two_workers_mpi().parity()});
  }
  if (report.two_workers_bf16().status() == kMeasured) {
    checks.push_back({"two-worker run in bf16 (real processes)",
                      &report.two_workers_bf16().parity()});
  }
  if (report.two_workers_all_recipes().status() == kMeasured) {
    checks.push_back({"two-worker run with every recipe (real processes)",
                      &report.two_workers_all_recipes().parity()});
  }
  for (const auto& [name, p] : checks) {
    absl::StrAppend(
        md, Row({absl::StrCat(name, " `", p->source(), "`"),
                 absl::StrCat("**", p->verdict(), "**"), SplitText(*p),
                 p->weighting(), p->reducer(),
                 absl::StrFormat("%.3g", p->max_abs_diff()),
                 absl::StrFormat("%.3g", p->max_rel_diff()),
                 YesNo(p->bitwise_equal()),
                 absl::StrFormat("%.g / %.g", p->rtol(), p->atol())}));
  }
  for (const auto& [name, p] : checks) {
    if (!p->every_update().empty()) absl::StrAppend(md, "\n- ", name, ": ", p->every_update());
    if (!p->whole_run().empty()) absl::StrAppend(md, "\n- ", name, ": ", p->whole_run());
    for (const std::string& failure : p->failures()) {
      absl::StrAppend(md, "\n- ", name, ": ", failure);
    }
  }
  absl::StrAppend(md, "\n");
}

void AppendSamplerAudits(const TradeReport& report, std::string* md) {
  absl::StrAppend(md, "## Sampler audits\n\n");
  if (report.sampler_audits().empty()) {
    absl::StrAppend(md, "No sampler audit was run.\n\n");
    return;
  }
  absl::StrAppend(md, HeaderRow({"policy", "ids", "ranks", "epochs",
                                 "slots per epoch", "duplicate slots",
                                 "duplicated ids", "masked slots", "dropped",
                                 "ranks agree", "source"}));
  for (const SamplerFigures& s : report.sampler_audits()) {
    absl::StrAppend(
        md, Row({s.policy(), absl::StrCat(s.num_ids()),
                 absl::StrCat(s.world_size()), absl::StrCat(s.epochs()),
                 absl::StrCat(s.slots_per_epoch()),
                 absl::StrCat(s.duplicate_slots()),
                 s.duplicated_ids().empty()
                     ? kDash
                     : absl::StrJoin(s.duplicated_ids(), ", "),
                 absl::StrCat(s.masked_slots()),
                 absl::StrCat(s.dropped_examples()), YesNo(s.ranks_agree()),
                 absl::StrCat("`", s.source(), "`")}));
  }
  absl::StrAppend(md, "\n");
}

void AppendRecovery(const TradeReport& report, std::string* md) {
  const RecoveryFigures& figures = report.recovery();
  absl::StrAppend(md, "## Recovery from an injected failure\n\n");
  if (figures.status() != kMeasured) {
    absl::StrAppend(md, "Verdict: **", kNotMeasured, "** (", figures.note(),
                    ").\n\n");
    return;
  }
  const RecoveryReport& r = figures.report();
  absl::StrAppend(md, "Verdict: **", figures.verdict(), "** (`",
                  figures.source(), "`)\n\n");
  absl::StrAppend(md, HeaderRow({"", "value"}));
  absl::StrAppend(md, Row({"killed", absl::StrCat("rank ", r.killed_rank(),
                                                  " at ", r.kill_point(),
                                                  " of generation ",
                                                  r.kill_generation())}));
  absl::StrAppend(md, Row({"what the launcher saw", r.killed_how()}));
  absl::StrAppend(md, Row({"newest advertised generation after the kill",
                           absl::StrCat("gen ", r.advertised_generation(),
                                        " (update ", r.advertised_update(),
                                        ")")}));
  absl::StrAppend(md, Row({"restart resumed from",
                           absl::StrCat("gen ", r.resumed_from(), " (update ",
                                        r.resumed_update(), ")")}));
  absl::StrAppend(md, Row({"saved updates lost", absl::StrCat(r.lost_updates())}));
  absl::StrAppend(md, Row({"updates computed again",
                           absl::StrCat(r.updates_redone())}));
  absl::StrAppend(
      md, Row({absl::StrCat("first resumed update (", r.compared_update(),
                            ") against the uninterrupted run: max abs diff "
                            "gradients / parameters"),
               absl::StrFormat("%.3g / %.3g", r.max_abs_gradient_diff(),
                               r.max_abs_parameter_diff())}));
  absl::StrAppend(md, Row({"first resumed update bitwise equal",
                           YesNo(r.bitwise_equal())}));
  absl::StrAppend(md, Row({"final parameters equal to the uninterrupted run",
                           YesNo(r.final_parameters_equal())}));
  for (const std::string& failure : r.failures()) {
    absl::StrAppend(md, "\n- ", failure);
  }
  absl::StrAppend(md, "\n");
}

void AppendCheckpointCost(const TradeReport& report, std::string* md) {
  const CheckpointFigures& figures = report.checkpoint_cost();
  absl::StrAppend(md, "## Checkpoint cost\n\n");
  if (figures.status() != kMeasured) {
    absl::StrAppend(md, "**", kNotMeasured, "** (", figures.note(), ").\n\n");
    return;
  }
  const CheckpointCost& c = figures.cost();
  absl::StrAppend(md, HeaderRow({"generations saved", "bytes per generation",
                                 "save time, ms (median)",
                                 "one fsync'd sequential write, ms (median)",
                                 "save / sequential write"},
                                "---:"));
  absl::StrAppend(
      md, Row({absl::StrCat(c.generations_saved()),
               Fixed(c.bytes_per_generation(), 0),
               Fixed(1000 * c.save_seconds_median(), 3),
               c.sequential_write_seconds_median() > 0
                   ? Fixed(1000 * c.sequential_write_seconds_median(), 3)
                   : kNotMeasured,
               c.save_vs_sequential_ratio() > 0
                   ? Fixed(c.save_vs_sequential_ratio(), 2) + "×"
                   : kNotMeasured}));
  if (!c.save_phases().empty()) {
    const SavePhases& p = c.save_phases_median();
    absl::StrAppend(md, "\nWhere a save's time goes on rank 0, ms (each phase's median):\n\n",
                    HeaderRow({"serialize", "folder", "own shard", "confirmations",
                               "verify", "MANIFEST", "prune", "advertise"},
                              "---:"),
                    Row({Ms(p.serialize()), Ms(p.folder()), Ms(p.shard()),
                         Ms(p.confirmations()), Ms(p.verify()), Ms(p.manifest()),
                         Ms(p.prune()), Ms(p.advertise())}));
  }
  absl::StrAppend(md, "\nFrom `", figures.source(), "`.\n\n");
}

// "rarest class: cropped, 20 validation receipts, F1 one worker 0.919, two
// workers 0.947": the one worker's class with the fewest validation
// receipts (the first such), "-" where the two-worker run lacks it.
std::string RarestClassText(const TradeReport& report) {
  const ValidationFigures& one = report.one_worker().validation();
  if (one.per_class_size() == 0) return kNotMeasured;
  const ClassMetrics* rarest = &one.per_class(0);
  for (const ClassMetrics& c : one.per_class()) {
    if (c.support() < rarest->support()) rarest = &c;
  }
  std::string two_f1 = "-";
  for (const ClassMetrics& c : report.two_workers().validation().per_class()) {
    if (c.label() == rarest->label()) two_f1 = Fixed(c.f1(), 3);
  }
  return absl::StrCat(rarest->label(), ", ", rarest->support(),
                      " validation receipts, F1 one worker ",
                      Fixed(rarest->f1(), 3), ", two workers ", two_f1);
}

}  // namespace

std::string TradeReportHeadline(const TradeReport& report) {
  const RunFigures& one = report.one_worker();
  const RunFigures& two = report.two_workers();
  std::string out;
  absl::StrAppendFormat(
      &out,
      "examples/s: one worker %.1f, two workers %.1f (%.2f× one worker)\n",
      one.examples_per_second(), two.examples_per_second(),
      report.two_over_one_examples_per_second());
  absl::StrAppendFormat(
      &out,
      "gradient sync per update: two workers %s ms, %s of an update\n",
      Ms(two.sync_seconds_per_update()), Percent(two.sync_share()));
  absl::StrAppend(&out, "straggler: ", StragglerText(two), "\n");
  absl::StrAppend(&out, "rarest class: ", RarestClassText(report), "\n");
  absl::StrAppend(&out, "parity: two-worker run ", report.parity().verdict(),
                  ", simulated ", SplitText(report.simulated_parity()),
                  " split ", report.simulated_parity().verdict(), "\n");
  absl::StrAppend(&out, "two workers over MPI: ",
                  MpiLine(report.two_workers_mpi()), "\n");
  absl::StrAppend(&out, "two workers in bf16: ",
                  Bf16Line(report.two_workers_bf16()), "\n");
  absl::StrAppend(&out, "two workers, every recipe: ",
                  AllRecipesLine(report.two_workers_all_recipes()), "\n");
  absl::StrAppend(&out, "world size changed mid-run: ",
                  WorldSizeChangeLine(report.world_size_change()), "\n");
  absl::StrAppend(&out, "planted mistakes: ",
                  PlantedMistakesLine(report.planted_mistakes()), "\n");
  absl::StrAppend(&out, "recovery: ", report.recovery().verdict(), "\n");
  absl::StrAppend(&out, "checkpoint cost: ",
                  CheckpointCostLine(report.checkpoint_cost()), "\n");
  return out;
}

std::string TradeReportMarkdown(const TradeReport& report) {
  std::string md = "# Trade report: one worker against two\n\n";
  absl::StrAppend(&md, "![Training loss against examples seen; throughput "
                       "and synchronisation bars](",
                  report.picture(), ")\n\n");
  absl::StrAppend(&md, "```\n", TradeReportHeadline(report), "```\n\n");
  AppendThroughput(report, &md);
  AppendMpi(report, &md);
  AppendBf16(report, &md);
  AppendAllRecipes(report, &md);
  AppendWorldSizeChange(report, &md);
  AppendValidation(report, &md);
  AppendParity(report, &md);
  AppendPlantedMistakes(report, &md);
  AppendSamplerAudits(report, &md);
  AppendRecovery(report, &md);
  AppendCheckpointCost(report, &md);
  absl::StrAppend(&md, "Figures from `trade_report.json` (format version ",
                  report.format_version(), "); sources are relative to "
                  "this folder.\n");
  return md;
}

}  // namespace receipt_parity

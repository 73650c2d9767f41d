#include "study/trade_report_test_inputs.h"

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "artifacts/artifact_stamp.h"
#include "io/json_file.h"
#include "study/study_layout.h"

namespace receipt_parity {

RunArtifacts TestRun(int world_size, double loss_offset) {
  RunArtifacts run;
  run.source = world_size == 1 ? "one_worker/reference" : "two_worker";
  RunSummary& s = run.summary;
  run.stamp.set_config_fingerprint(world_size == 1 ? "fp-one" : "fp-two");
  s.set_world_size(world_size);
  s.set_updates(4);
  s.set_epochs_completed(2);
  s.set_warmup_updates(2);
  s.set_examples_per_second(1000.0 * world_size + 0.5);
  s.set_sync_seconds_per_update(0.001 * (world_size - 1));
  s.set_sync_share(0.1 * (world_size - 1));
  s.set_final_loss(0.75 + loss_offset);
  s.set_final_parameter_hash("hash");
  s.set_parity(world_size == 1 ? "not_checked" : "pass");
  const double losses[] = {1.5, 1.25, 1.0, 0.75};
  const double rates[] = {0.01, 0.01, 0.005, 0.005};
  for (int u = 0; u < 4; ++u) {
    LossPoint* p = s.add_loss_curve();
    p->set_update(u);
    p->set_examples_seen(8 * (u + 1));
    p->set_loss(losses[u] + (u == 2 ? loss_offset : 0));
    p->set_mean_loss(p->loss());
    p->set_verified(true);
    p->set_learning_rate(rates[u]);
  }
  for (int r = 0; r < world_size; ++r) {
    RankTiming* t = s.add_timing();
    t->set_rank(r);
    t->add_update_seconds(0.008 + 0.001 * r);
    t->add_update_seconds(0.010 + 0.001 * r);
    t->add_sync_seconds(0.001 * (world_size - 1));
    t->add_sync_seconds(0.001 * (world_size - 1));
    t->set_peak_rss_mib(100.25 + r + 10 * (world_size - 1));
    t->set_collectives(2 * (world_size - 1));
    t->set_bytes_reduced(4096.0 * (world_size - 1));
  }
  for (int r = 0; r < world_size && world_size > 1; ++r) {
    RankLateness* late = s.add_lateness();
    late->set_rank(r);
    late->set_times_last(r == 1 ? 2 : 0);
    late->set_median_lateness_seconds(r == 1 ? 0.0015 : 0);
    late->set_p90_lateness_seconds(r == 1 ? 0.0025 : 0);
    late->set_updates(2);
  }
  s.set_straggler_rank(world_size > 1 ? 1 : -1);
  for (int epoch = 0; epoch < 2; ++epoch) {
    EpochRecord* e = s.add_epochs();
    e->set_epoch(epoch);
    e->set_accepted_examples(16);
    e->set_training_views(16);
    e->set_duplicate_slots(world_size);
    e->set_masked_slots(2 * world_size);
  }
  ValidationReport& v = run.validation;
  v.set_dedup("by_receipt_id");
  v.set_predictions_gathered(8 + world_size - 1);
  v.set_unique_ids_counted(8);
  v.set_duplicates_dropped(world_size - 1);
  v.set_predictions_counted(8);
  v.set_accuracy(0.625);
  v.set_macro_f1(0.5);
  v.add_label_names("good");
  v.add_label_names("blurry");
  ClassMetrics* good = v.add_per_class();
  good->set_label("good");
  good->set_support(6);
  good->set_predicted(4);
  good->set_precision(0.75);
  good->set_recall(0.5);
  good->set_f1(0.6);
  ClassMetrics* blurry = v.add_per_class();
  blurry->set_label("blurry");
  blurry->set_support(2);
  blurry->set_predicted(8);
  blurry->set_precision(0.25);
  blurry->set_recall(1);
  blurry->set_f1(0.4);
  return run;
}

ParityReport TestParity(bool simulated) {
  ParityReport p;
  p.set_simulated(simulated);
  p.add_split(simulated ? 3 : 16);
  p.add_split(simulated ? 1 : 16);
  p.set_world_size(2);
  p.set_weighting("global_count");
  p.set_reducer("allreduce_sum");
  p.set_rtol(1e-5);
  p.set_atol(1e-7);
  p.set_max_abs_diff(2.5e-8);
  p.set_max_rel_diff(3.5e-6);
  p.set_bitwise_equal(false);
  p.set_ranks_agree(true);
  p.set_pass(true);
  return p;
}

SamplerAudit TestAudit(const std::string& policy) {
  SamplerAudit a;
  a.set_num_ids(5);
  a.set_world_size(2);
  a.set_policy(policy);
  for (int epoch = 0; epoch < 2; ++epoch) {
    EpochAudit* e = a.add_epochs();
    e->set_epoch(epoch);
    e->set_num_slots(6);
    e->set_ranks_agree(true);
    if (policy == "masked_tail") {
      SlotRef* masked = e->add_masked_slots();
      masked->set_rank(1);
      masked->set_slot(2);
      e->set_valid_slots(5);
    } else {
      DuplicatedId* dup = e->add_duplicated_ids();
      dup->set_receipt_id(epoch == 0 ? "r-0" : "r-3");
      dup->set_count(2);
      e->set_valid_slots(6);
    }
  }
  return a;
}

RecoveryReport TestRecovery(bool pass) {
  RecoveryReport r;
  r.set_world_size(2);
  r.set_killed_rank(1);
  r.set_kill_point("mid_shard");
  r.set_kill_generation(2);
  r.set_killed_how("rank 1 was killed by signal 9 (Killed)");
  r.set_advertised_generation(1);
  r.set_advertised_update(10);
  r.set_resumed_from(1);
  r.set_resumed_update(10);
  r.set_lost_updates(0);
  r.set_updates_redone(10);
  r.set_compared_update(10);
  r.set_max_abs_gradient_diff(pass ? 0 : 0.5);
  r.set_max_abs_parameter_diff(pass ? 0 : 0.25);
  r.set_bitwise_equal(pass);
  r.set_final_parameters_equal(pass);
  r.set_pass(pass);
  if (!pass) r.add_failures("the first resumed update differs");
  // A random drill's parts (fault_drill --kill_at=random), so that every key
  // of the embedded report is exercised.
  DrillTrial* trial = r.add_trials();
  trial->set_trial(1);
  trial->set_rank(1);
  trial->set_phase("allreduce");
  trial->set_update(4);
  trial->set_delay_us(120);
  trial->set_fault_line("fault injection: rank 1 kills itself (SIGKILL) in allreduce");
  trial->add_on_disk_after_kill("gen-000001 [advertised]: MANIFEST (300 bytes)");
  trial->add_advertised_checked("gen-000001: restores");
  trial->set_pass(pass);
  DrillTotals* totals = r.mutable_totals();
  totals->set_trials(1);
  totals->set_passed(pass ? 1 : 0);
  totals->set_failed(pass ? 0 : 1);
  (*totals->mutable_per_phase())["allreduce"] = 1;
  RandomDrillPlan* plan = r.mutable_random_plan();
  plan->set_seed(7);
  plan->add_phases("allreduce");
  (*plan->mutable_delay_window_us())["allreduce"] = 500;
  return r;
}

CheckpointCost TestCheckpointCost() {
  CheckpointCost c;
  c.set_generations_saved(3);
  c.set_bytes_per_generation(123456);
  for (int i = 0; i < 3; ++i) {
    c.add_save_seconds(0.03);
    c.add_sequential_write_seconds(0.02);
  }
  c.set_save_seconds_median(0.03);
  c.set_sequential_write_seconds_median(0.02);
  c.set_save_vs_sequential_ratio(1.5);
  SavePhases* p = c.mutable_save_phases_median();
  p->set_serialize(0.004);
  p->set_folder(0.001);
  p->set_shard(0.008);
  p->set_confirmations(0.002);
  p->set_verify(0.003);
  p->set_manifest(0.006);
  p->set_prune(0.005);
  p->set_advertise(0.0005);
  for (int i = 0; i < 3; ++i) *c.add_save_phases() = *p;
  return c;
}

MpiRunArtifacts TestMpiRun() {
  MpiRunArtifacts mpi;
  mpi.run = TestRun(2, 1e-6);
  mpi.run.source = "two_worker_mpi";
  mpi.run.summary.set_examples_per_second(2500.5);
  mpi.run.summary.set_sync_share(0.05);
  mpi.parity = {"two_worker_mpi/parity.json", TestParity(false)};
  mpi.parity.message.set_reducer("mpi_allreduce");
  return mpi;
}

PrecisionRunArtifacts TestBf16Run() {
  PrecisionRunArtifacts bf16;
  bf16.run = TestRun(2, 3e-3);
  bf16.run.source = "two_worker_bf16";
  bf16.run.stamp.set_config_fingerprint("fp-bf16");
  bf16.run.summary.set_examples_per_second(1800.5);
  for (RankTiming& timing : *bf16.run.summary.mutable_timing()) {
    timing.set_peak_rss_mib(150.25 + timing.rank());
  }
  bf16.run.validation.set_macro_f1(0.45);
  bf16.run.validation.mutable_per_class(1)->set_f1(0.3);
  bf16.parity = {"two_worker_bf16/parity.json", TestParity(false)};
  DerivedTolerance& derived = *bf16.parity.message.mutable_derived();
  derived.set_method("bf16 against fp64, tensor by tensor");
  derived.set_gradient_error(2e-4);
  derived.set_parameter_error(3e-5);
  derived.set_safety_factor(4);
  derived.set_gradient_atol(8e-4);
  derived.set_parameter_atol(1.2e-4);
  derived.set_largest_share_of_one_update(0.27);
  derived.set_most_share_of_one_update(0.1);
  derived.set_far_below_one_update(false);
  derived.add_tensors()->set_name("fc.weight");
  derived.add_tensors()->set_name("fc.bias");
  derived.set_judged_tensors(1);
  derived.add_not_judged_tensors("fc.bias");
  return bf16;
}

namespace {

// A continuation on `world` workers of a run saved by 2 at update 2: the
// last two of the uninterrupted run's updates, `loss_offset` added to the
// last, under parameter hash `hash`.
ContinuationArtifacts TestContinuation(const std::string& source, const std::string& policy,
                                       int world, const std::string& hash,
                                       double loss_offset, int changed_updates) {
  ContinuationArtifacts run;
  run.source = source;
  run.summary = TestRun(2).summary;
  run.summary.set_world_size(world);
  run.summary.set_first_update(2);
  run.summary.mutable_loss_curve()->DeleteSubrange(0, 2);
  for (int i = 0; i < 2; ++i) run.summary.mutable_loss_curve(i)->set_update(i);
  run.summary.mutable_loss_curve(1)->set_loss(run.summary.loss_curve(1).loss() + loss_offset);
  run.summary.set_final_parameter_hash(hash);
  run.resume.set_world_size_changed(true);
  run.resume.set_update(2);
  run.resume.set_world_size_change_rule(policy == "duplicate_pad" ? "allow_world_size_change"
                                                                  : "world_size_independent");
  run.change.set_policy(policy);
  run.change.set_old_world_size(2);
  run.change.set_new_world_size(world);
  run.change.set_changed_updates(changed_updates);
  run.change.set_remaining_updates(3);
  run.change.set_old_duplicate_slots(1);
  run.change.set_new_duplicate_slots(policy == "duplicate_pad" ? 0 : 1);
  if (changed_updates > 0) {
    run.change.add_skipped_ids("r7");
    run.change.add_repeated_ids("r3");
  }
  run.change.set_summary("epoch 0 resumed after 2 updates");
  return run;
}

}  // namespace

WorldSizeChangeArtifacts TestWorldSizeChange() {
  WorldSizeChangeArtifacts runs;
  runs.source = "world_size_change/uninterrupted";
  runs.uninterrupted = TestRun(2).summary;
  runs.continuations.push_back(TestContinuation("world_size_change/on_three", "global_batches",
                                                3, "hash", 0, 0));
  runs.continuations.push_back(TestContinuation("world_size_change/on_one", "global_batches",
                                                1, "other", 1e-3, 0));
  runs.duplicate_pad = TestContinuation("world_size_change/duplicate_pad_on_three",
                                        "duplicate_pad", 3, "dp", 0, 2);
  return runs;
}

AllRecipesRunArtifacts TestAllRecipesRun() {
  AllRecipesRunArtifacts all;
  all.run.run = TestRun(2, 2e-3);
  all.run.run.source = "two_worker_all_recipes";
  all.run.run.summary.set_examples_per_second(900.5);
  all.run.parity = {"two_worker_all_recipes/parity.json", TestParity(false)};
  WholeRunParity& whole = *all.run.parity.message.mutable_whole_run();
  whole.set_mode("drift_budget");
  whole.set_method("the drift twin measured it");
  whole.add_check_updates(0);
  whole.add_check_updates(9);
  whole.set_judged_updates(1);
  whole.set_pass(true);
  UpdateParity& first = *whole.add_updates();
  first.set_update(0);
  first.set_judged(true);
  first.set_pass(true);
  first.set_largest_share_of_budget(0.4);
  first.set_judged_tensors(1);
  TensorParity& weight = *first.add_parameters();
  weight.set_name("fc.weight");
  weight.add_shape(2);
  weight.set_atol(1e-6);
  first.add_tensors()->set_name("fc.weight");
  UpdateParity& last = *whole.add_updates();
  last.set_update(9);
  last.set_pass(true);
  last.set_not_judged("diverged: rounding alone has moved the drift twin past a tenth of it");
  last.add_tensors()->set_name("fc.weight");
  last.add_diverged_tensors("fc.weight");
  EveryUpdateVerdict& every = *all.run.parity.message.mutable_every_update();
  every.set_updates(10);
  every.set_verified(10);
  for (const char* check : {"accounting", "reduction", "clipping", "replicas"}) {
    every.add_checks(check);
  }
  every.set_pass(true);
  TrainingConfig& config = all.config;
  config.set_accumulation_steps(2);
  config.mutable_lr_schedule()->set_name("linear_warmup_cosine");
  config.mutable_clip_grad_norm()->set_max_norm(1);
  config.mutable_clip_grad_norm()->set_scope("global");
  config.set_precision("bf16");
  config.mutable_model()->set_dropout(0.1f);
  config.mutable_model()->set_batch_norm("sync");
  config.add_local_batch_sizes(20);
  config.add_local_batch_sizes(12);
  config.mutable_sampler()->set_name("masked_tail");
  return all;
}

std::vector<PlantedRunArtifacts> TestPlantedMistakes() {
  std::vector<PlantedRunArtifacts> runs;
  for (const char* setting : {"fp32", "bf16"}) {
    PlantedRun run{"per_rank_clipping", setting, "per-rank clipping", setting,
                   "per_rank_clipping.pbtxt", {}};
    ParityReport parity = TestParity(false);
    if (run.setting == "fp32") {
      parity.set_pass(false);
      parity.add_gradients()->set_pass(false);
      parity.add_failures("gradient of fc.weight differs by up to 0.5");
      parity.mutable_every_update()->set_updates(1);
      parity.mutable_every_update()->mutable_first_failure()->set_check("reduction");
    }
    runs.push_back({run, {absl::StrCat("planted_mistakes/", PlantedRunDir(run), "/parity.json"),
                          parity}});
  }
  return runs;
}

TradeReportInputs TestInputs() {
  TradeReportInputs inputs;
  inputs.one_worker = TestRun(1);
  inputs.two_workers = TestRun(2, 1e-6);
  inputs.parity = {"two_worker/parity.json", TestParity(false)};
  inputs.simulated_parity = {"parity_simulated/parity.json", TestParity(true)};
  inputs.sampler_audits.push_back(
      {"sampler_audit_duplicate_pad.json", TestAudit("duplicate_pad")});
  inputs.sampler_audits.push_back(
      {"sampler_audit_masked_tail.json", TestAudit("masked_tail")});
  return inputs;
}

absl::Status WriteTestArtifacts(const std::string& study_dir) {
  namespace layout = study_layout;
  const TradeReportInputs inputs = TestInputs();
  const std::string one = layout::kOneWorkerRunDir;
  const std::string two = layout::kTwoWorkerDir;
  const std::string simulated = layout::kSimulatedParityDir;
  // Each file stamped as its stage writes it: a run's files with its run's
  // stamp, the standalone audits with an empty one.
  const ArtifactStamp& one_run = inputs.one_worker.stamp;
  const ArtifactStamp& two_run = inputs.two_workers.stamp;
  const ArtifactStamp simulated_run = MakeArtifactStamp("fp-simulated", 1);
  const ArtifactStamp no_run;
  struct File {
    std::string relative;
    const google::protobuf::Message* message;
    const ArtifactStamp* stamp;
  };
  const std::vector<File> files = {
      {one + "/" + layout::kRunSummary, &inputs.one_worker.summary, &one_run},
      {one + "/" + layout::kValidation, &inputs.one_worker.validation, &one_run},
      {two + "/" + layout::kRunSummary, &inputs.two_workers.summary, &two_run},
      {two + "/" + layout::kValidation, &inputs.two_workers.validation, &two_run},
      {two + "/" + layout::kParity, &inputs.parity.message, &two_run},
      {simulated + "/" + layout::kParity, &inputs.simulated_parity.message, &simulated_run},
      {layout::kSamplerAuditDuplicatePad, &inputs.sampler_audits[0].message, &no_run},
      {layout::kSamplerAuditMaskedTail, &inputs.sampler_audits[1].message, &no_run},
  };
  for (const File& file : files) {
    const std::filesystem::path path = std::filesystem::path(study_dir) / file.relative;
    std::error_code error;
    std::filesystem::create_directories(path.parent_path(), error);
    if (absl::Status s = WriteArtifact(path.string(), *file.stamp, *file.message); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace receipt_parity

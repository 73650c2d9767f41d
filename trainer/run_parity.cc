#include "trainer/run_parity.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <set>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "artifacts/artifact_stamp.h"
#include "io/json_file.h"
#include "parity/cross_device_tolerance.h"
#include "parity/tensor_comparison.h"
#include "artifacts/first_step_record.h"
#include "artifacts/parity_trajectory.h"
#include "artifacts/run_manifest.pb.h"
#include "artifacts/run_summary.pb.h"

namespace receipt_parity {
namespace {

std::multiset<std::string> AcceptedIds(const FirstStep& step) {
  std::multiset<std::string> ids;
  for (const RankBatch& batch : step.batch()) {
    for (int i = 0; i < batch.receipt_ids_size(); ++i) {
      if (batch.valid(i)) ids.insert(batch.receipt_ids(i));
    }
  }
  return ids;
}

// The device the reference computed on; references written before the
// platform record existed were all made on the CPU.
std::string ReferenceDevice(const std::string& reference_dir) {
  RunManifest manifest;
  if (!ReadArtifact(reference_dir + "/run_manifest.json", &manifest).ok() ||
      manifest.platform().device().empty()) {
    return "cpu";
  }
  return manifest.platform().device();
}

std::string DeviceKind(const std::string& device) {
  return device.substr(0, device.find(':'));
}

// rtol, atol and why, into `report`.
void SetTolerance(const TrainingConfig& config, const std::string& reference_dir,
                  ParityReport* report) {
  report->set_device(config.device() == "cuda" ? "cuda" : "cpu");
  report->set_reference_device(ReferenceDevice(reference_dir));
  report->set_rtol(config.parity().rtol());
  report->set_atol(config.parity().atol());
  report->set_tolerance_reason(
      "the config's parity section: every element within atol + rtol * |reference|");
  if (DeviceKind(report->device()) == DeviceKind(report->reference_device())) return;
  if (kCrossDeviceRtol > report->rtol() || kCrossDeviceAtol > report->atol()) {
    report->set_rtol(std::max(report->rtol(), kCrossDeviceRtol));
    report->set_atol(std::max(report->atol(), kCrossDeviceAtol));
    report->set_tolerance_reason(absl::StrCat(
        "the run (", report->device(), ") and the reference (",
        report->reference_device(),
        ") computed on different kinds of device, which sum in other orders: "
        "at least the cross-device tolerance, twice the fp32 error bound "
        "measured against fp64 (parity/cross_device_tolerance.h)"));
  }
}

void DescribeFailures(const TensorListComparison& comparison,
                      const std::string& what, double rtol, double atol,
                      const std::set<std::string>& not_judged, ParityReport* report) {
  for (const TensorComparison& t : comparison.tensors) {
    if (t.within_tolerance || not_judged.count(t.name) > 0) continue;
    report->add_failures(absl::StrFormat(
        "%s of %s differs by up to %.3g (relative %.3g; tolerance rtol %g, "
        "atol %g%s; largest reference value %.3g)",
        what, t.name, t.max_abs_diff, t.max_rel_diff, rtol, t.atol.value_or(atol),
        t.atol.has_value() ? ", its own derived budget" : "", t.max_abs_reference));
  }
}

// The derived budgets as each tensor's atol (rtol 0), `derived` and the
// reason in `report`, and the refused gate as a failure. InvalidArgument
// when the derivation's tensors are not the run's.
absl::Status ApplyDerived(const DerivedTolerance& derived, const std::vector<std::string>& names,
                          std::vector<double>* gradient_atols,
                          std::vector<double>* parameter_atols, ParityReport* report) {
  if (derived.tensors_size() != static_cast<int>(names.size())) {
    return absl::InvalidArgumentError(absl::StrCat("parity: the derived tolerance has ",
                                                   derived.tensors_size(), " tensors, the run ",
                                                   names.size()));
  }
  for (size_t i = 0; i < names.size(); ++i) {
    const TensorBudget& t = derived.tensors(static_cast<int>(i));
    if (t.name() != names[i]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parity: the derived tolerance's tensor ", i, " is ", t.name(), ", the run's ",
          names[i]));
    }
    (*gradient_atols)[i] = t.gradient_atol();
    (*parameter_atols)[i] = t.parameter_atol();
  }
  *report->mutable_derived() = derived;
  report->set_rtol(0);
  report->set_atol(derived.gradient_atol());
  report->set_tolerance_reason(absl::StrCat(
      "derived (", derived.derived_for().empty() ? "bf16" : derived.derived_for(),
      "), per tensor (each tensor's atol is in gradients[] and "
      "parameters_after_step[], and with its figures in derived.tensors[]; atol here is "
      "the largest), rtol 0: ", derived.method()));
  if (!derived.far_below_one_update() && derived.judged_tensors() == 0) {
    report->add_failures(absl::StrCat(
        "the derived tolerance is not below ", derived.most_share_of_one_update() * 100,
        "% of what one update changes of any tensor (largest: ",
        derived.largest_share_of_one_update() * 100,
        "%): a run that did not train could pass; parity is not judged"));
  } else if (!derived.far_below_one_update()) {
    absl::StrAppend(report->mutable_tolerance_reason(), "; not judged, their budget not below ",
                    derived.most_share_of_one_update() * 100,
                    "% of what one update changes of them: ",
                    absl::StrJoin(derived.not_judged_tensors(), ", "));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ParityReport> CheckRunParity(const FirstStep& run,
                                            const std::string& reference_dir,
                                            const TrainingConfig& config,
                                            bool ranks_agree,
                                            const DeriveTolerance& derive) {
  const std::string path = reference_dir + "/first_step.json";
  FirstStep reference;
  if (absl::Status s = ReadArtifact(path, &reference); !s.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("parity: cannot read the reference: ", s.message()));
  }
  const std::vector<std::string> names(run.parameter_order().begin(),
                                       run.parameter_order().end());
  ParityReport report;
  report.set_simulated(false);
  report.set_pass_rule(kParityPassRule);
  report.set_note(absl::StrCat(
      "real run: ", run.world_size(),
      " worker processes joined by a c10d ",
      config.backend() == "nccl" ? "NCCL" : "Gloo", " process group; rank 0's "
      "reduced first-update gradient and its parameters after the step, "
      "against the one-worker reference in ", path));
  report.set_world_size(run.world_size());
  for (const RankBatch& batch : run.batch()) {
    int valid = 0;
    for (bool v : batch.valid()) valid += v ? 1 : 0;
    report.add_split(valid);
  }
  report.set_weighting(run.loss_weighting());
  report.set_reducer(run.reducer());
  SetTolerance(config, reference_dir, &report);
  // One atol per tensor: the config's for all, or the derived budgets.
  std::vector<double> gradient_atols(names.size(), report.atol());
  std::vector<double> parameter_atols(names.size(), report.atol());
  const bool per_tensor = static_cast<bool>(derive);
  if (derive) {
    absl::StatusOr<DerivedTolerance> derived = derive(reference);
    if (!derived.ok()) return derived.status();
    if (absl::Status s = ApplyDerived(*derived, names, &gradient_atols, &parameter_atols, &report);
        !s.ok()) {
      return s;
    }
  }
  // Tensors a derived tolerance cannot judge: their differences do not
  // count.
  const std::set<std::string> not_judged(report.derived().not_judged_tensors().begin(),
                                         report.derived().not_judged_tensors().end());
  report.set_accepted_examples(run.accepted_examples());
  report.set_ranks_agree(ranks_agree);

  for (auto [what, mine, theirs, out, atols] :
       {std::make_tuple("gradient", &run.gradients(), &reference.gradients(),
                        report.mutable_gradients(), &gradient_atols),
        std::make_tuple("parameter after the step", &run.parameters_after(),
                        &reference.parameters_after(),
                        report.mutable_parameters_after_step(), &parameter_atols)}) {
    absl::StatusOr<NamedTensors> a = LoadNamedTensors(*mine, names);
    if (!a.ok()) return a.status();
    absl::StatusOr<NamedTensors> b = LoadNamedTensors(*theirs, names);
    if (!b.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("parity: ", path, ": ", b.status().message()));
    }
    absl::StatusOr<TensorListComparison> comparison =
        per_tensor ? CompareTensors(*a, *b, report.rtol(), *atols)
                   : CompareTensors(*a, *b, report.rtol(), report.atol());
    if (!comparison.ok()) return comparison.status();
    AppendTensorParity(*comparison, out);
    if (per_tensor) {
      for (TensorParity& t : *out) t.set_judged(not_judged.count(t.name()) == 0);
    }
    report.set_max_abs_diff(std::max(report.max_abs_diff(), comparison->max_abs_diff));
    report.set_max_rel_diff(std::max(report.max_rel_diff(), comparison->max_rel_diff));
    if (std::string(what) == "gradient") {
      report.set_bitwise_equal(comparison->bitwise_equal);
    }
    DescribeFailures(*comparison, what, report.rtol(), report.atol(), not_judged, &report);
  }
  if (AcceptedIds(run) != AcceptedIds(reference)) {
    report.add_failures(
        "the first update holds other receipts than the reference's first "
        "update");
  }
  if (!ranks_agree) {
    report.add_failures("the ranks ended with different parameters");
  }
  report.set_pass(report.failures_size() == 0);
  return report;
}

namespace {

// The point of `update` in `dir`, stamped with one of `fingerprints` (any,
// when empty), or the reason it cannot be read.
absl::StatusOr<CheckedPoint> PointOf(const std::string& dir, int64_t update,
                                     const std::vector<std::string>& fingerprints,
                                     const char* whose) {
  absl::StatusOr<TrajectoryPoint> point = ReadTrajectoryPoint(dir, update, fingerprints);
  if (!point.ok()) {
    return absl::Status(point.status().code(),
                        absl::StrCat("update ", update, ": ", whose, " trajectory point: ",
                                     point.status().message()));
  }
  return std::move(point->checked);
}

// Update -> the largest |twin loss - reference loss| over the updates up to
// it, from the two runs' loss curves (run_summary.json); empty when either
// is unreadable (each update's budget then uses its own loss alone).
// (Below: `Only(fingerprint)` is the one fingerprint a reference's points
// carry; an empty one checks none.)
std::map<int64_t, double> LossDriftEnvelope(const std::string& reference_dir,
                                            const std::string& twin_dir) {
  RunSummary reference, twin;
  if (!ReadArtifact(reference_dir + "/run_summary.json", &reference).ok() ||
      !ReadArtifact(twin_dir + "/run_summary.json", &twin).ok()) {
    return {};
  }
  // A curve counts its attempt's updates from the attempt's first; the loss
  // compared is the mean over the accepted examples (a summary from before
  // it was recorded gives none).
  std::map<int64_t, double> twin_loss;
  for (const LossPoint& p : twin.loss_curve()) {
    if (p.has_mean_loss()) twin_loss[twin.first_update() + p.update()] = p.mean_loss();
  }
  std::map<int64_t, double> envelope;
  double largest = 0;
  for (const LossPoint& p : reference.loss_curve()) {
    auto it = twin_loss.find(reference.first_update() + p.update());
    if (it == twin_loss.end() || !p.has_mean_loss()) continue;
    largest = std::max(largest, std::fabs(it->second - p.mean_loss()));
    envelope[it->first] = largest;
  }
  return envelope;
}

std::vector<std::string> Only(const std::string& fingerprint) {
  if (fingerprint.empty()) return {};
  return {fingerprint};
}

UpdateParity Unjudged(int64_t update, const absl::Status& why) {
  UpdateParity failed;
  failed.set_update(static_cast<int32_t>(update));
  failed.add_failures(std::string(why.message()));
  return failed;
}

}  // namespace

absl::StatusOr<WholeRunParity> CheckWholeRunParity(const std::string& run_dir,
                                                   const std::vector<std::string>& run_fingerprints,
                                                   const WholeRunReferences& references,
                                                   const std::vector<int64_t>& check_updates,
                                                   const ParityConfig& parity) {
  WholeRunParity verdict = WholeRunHeader(check_updates, references.twin_micro_batches);
  verdict.set_reference_dir(references.reference_dir);
  verdict.set_twin_dir(references.twin_dir);
  const bool bitwise = references.twin_dir.empty();
  absl::StatusOr<CheckedPoint> reference_first =
      PointOf(references.reference_dir, 0, Only(references.reference_fingerprint),
              "the reference's");
  const std::map<int64_t, double> loss_drift =
      bitwise ? std::map<int64_t, double>()
              : LossDriftEnvelope(references.reference_dir, references.twin_dir);
  double drift = 0;
  for (int64_t update : check_updates) {
    absl::StatusOr<CheckedPoint> run = PointOf(run_dir, update, run_fingerprints, "the run's");
    absl::StatusOr<CheckedPoint> reference =
        update == 0 ? reference_first
                    : PointOf(references.reference_dir, update,
                              Only(references.reference_fingerprint), "the reference's");
    absl::StatusOr<CheckedPoint> twin =
        bitwise ? absl::StatusOr<CheckedPoint>(CheckedPoint())
                : PointOf(references.twin_dir, update, Only(references.twin_fingerprint),
                          "the drift twin's");
    for (const absl::StatusOr<CheckedPoint>* point : {&run, &reference, &twin}) {
      if (!point->ok()) {
        AddCheckedUpdate(Unjudged(update, point->status()), &verdict);
        break;
      }
    }
    if (!run.ok() || !reference.ok() || !twin.ok()) continue;
    UpdateComparisonInputs in;
    in.run = &*run;
    in.reference = &*reference;
    in.twin = bitwise ? nullptr : &*twin;
    in.reference_first = reference_first.ok() ? &*reference_first : nullptr;
    in.rtol = parity.rtol();
    in.atol = parity.atol();
    in.earlier_drift = drift;
    auto envelope = loss_drift.upper_bound(update);
    if (envelope != loss_drift.begin()) in.loss_drift_envelope = std::prev(envelope)->second;
    absl::StatusOr<UpdateComparison> compared = CompareUpdate(in);
    if (!compared.ok()) {
      AddCheckedUpdate(Unjudged(update, compared.status()), &verdict);
      continue;
    }
    drift = compared->drift;
    AddCheckedUpdate(std::move(compared->parity), &verdict);
  }
  return verdict;
}

void AddWholeRunVerdict(WholeRunParity whole_run, ParityReport* report) {
  *report->mutable_whole_run() = std::move(whole_run);
  const WholeRunParity& verdict = report->whole_run();
  if (verdict.mode() == "not_judged" || verdict.pass()) return;
  int failing = 0;
  std::string first;
  for (const UpdateParity& u : verdict.updates()) {
    if (u.pass()) continue;
    ++failing;
    if (first.empty() && u.failures_size() > 0) first = u.failures(0);
  }
  report->add_failures(absl::StrCat("whole run: ", failing, " of ",
                                    verdict.check_updates_size(),
                                    " checked updates fail parity (", verdict.mode(),
                                    "); the first: ", first));
  report->set_pass(false);
}

void AddEveryUpdateVerdict(EveryUpdateVerdict every_update, ParityReport* report) {
  *report->mutable_every_update() = std::move(every_update);
  const EveryUpdateVerdict& verdict = report->every_update();
  if (verdict.pass() || verdict.updates() == 0) return;
  if (verdict.has_first_failure()) {
    const EveryUpdateFailure& f = verdict.first_failure();
    report->add_failures(absl::StrCat(
        "every update: ", verdict.verified(), " of ", verdict.updates(), " verified; update ",
        f.update(), " failed the ", f.check(), " check",
        f.rank() >= 0 ? absl::StrCat(" on rank ", f.rank()) : "", ": ", f.what()));
  } else {
    report->add_failures(absl::StrCat("every update: ", verdict.verified(), " of ",
                                      verdict.updates(), " verified (", verdict.not_verified(),
                                      ")"));
  }
  report->set_pass(false);
}

namespace {

// The every-update checks' part of the verdict line.
std::string EveryUpdatePart(const EveryUpdateVerdict& verdict) {
  if (verdict.updates() == 0) {
    return verdict.not_verified().empty()
               ? ""
               : absl::StrCat("; every-update checks not run (", verdict.not_verified(), ")");
  }
  if (verdict.pass()) {
    return absl::StrCat("; every update (", verdict.verified(), " of ", verdict.updates(),
                        ") verified (", absl::StrJoin(verdict.checks(), ", "), ")");
  }
  if (!verdict.has_first_failure()) {
    return absl::StrCat("; every update: ", verdict.verified(), " of ", verdict.updates(),
                        " verified (", verdict.not_verified(), ")");
  }
  const EveryUpdateFailure& f = verdict.first_failure();
  return absl::StrCat("; every update: ", verdict.verified(), " of ", verdict.updates(),
                      " verified, update ", f.update(), " failed the ", f.check(), " check",
                      f.rank() >= 0 ? absl::StrCat(" on rank ", f.rank()) : "");
}

bool IsFirstUpdateFailure(const std::string& failure) {
  return !absl::StartsWith(failure, "whole run:") && !absl::StartsWith(failure, "every update:");
}

}  // namespace

std::string ParityVerdictLine(const ParityReport& report) {
  const WholeRunParity& whole = report.whole_run();
  std::string whole_part;
  if (whole.mode() == "not_judged") {
    whole_part = absl::StrCat("whole run not judged (", whole.not_judged(), ")");
  } else {
    int passing = 0;
    double share = 0;
    std::vector<int32_t> not_judged;
    for (const UpdateParity& u : whole.updates()) {
      passing += u.pass() ? 1 : 0;
      if (u.pass()) share = std::max(share, u.largest_share_of_budget());
      if (!u.judged() && !u.not_judged().empty()) not_judged.push_back(u.update());
    }
    whole_part = absl::StrCat(
        "whole run: ", passing, " of ", whole.check_updates_size(), " checked updates (",
        absl::StrJoin(whole.check_updates(), ", "), ") within ",
        whole.mode() == "bitwise" ? "bitwise equality"
                                  : absl::StrFormat("the drift budget (largest %.0f%% of "
                                                    "it)",
                                                    100 * share),
        not_judged.empty()
            ? ""
            : absl::StrCat(", ", not_judged.size(), " not judged (",
                           absl::StrJoin(not_judged, ", "),
                           ": the drift twin's drift outgrew half of what training moved)"));
  }
  std::string first_failure;
  for (const std::string& f : report.failures()) {
    if (first_failure.empty() && IsFirstUpdateFailure(f)) first_failure = f;
  }
  const auto& not_judged = report.derived().not_judged_tensors();
  return absl::StrCat(
      report.pass() ? "parity PASSED: " : "parity FAILED: ", "first update ",
      first_failure.empty() ? absl::StrFormat("within tolerance (largest difference %.3g)",
                                              report.max_abs_diff())
                            : absl::StrCat("fails: ", first_failure),
      not_judged.empty()
          ? ""
          : absl::StrCat(", ", not_judged.size(), " tensors not judged (",
                         report.derived().derived_for(),
                         "'s rounding too large a share of their update: ",
                         absl::StrJoin(not_judged, ", "), ")"),
      EveryUpdatePart(report.every_update()), "; ", whole_part);
}

namespace {

// "rank 0: [2, 2, 1, 0]; rank 1: [2, 1, 0, 0]": valid slots per micro-batch.
std::string ValidPerMicroBatch(const FirstStep& run, int micro_batches, bool* unequal) {
  std::vector<std::string> ranks;
  int64_t first = -1;
  *unequal = false;
  for (const RankBatch& batch : run.batch()) {
    std::vector<int64_t> valid(micro_batches, 0);
    for (int i = 0; i < batch.valid_size() && i < batch.micro_batch_size(); ++i) {
      if (batch.valid(i)) ++valid[batch.micro_batch(i)];
    }
    for (int64_t v : valid) {
      if (first < 0) first = v;
      *unequal = *unequal || v != first;
    }
    ranks.push_back(absl::StrCat("rank ", batch.rank(), ": [", absl::StrJoin(valid, ", "), "]"));
  }
  return absl::StrJoin(ranks, "; ");
}

}  // namespace

std::vector<std::string> ExplainRecipe(const TrainingConfig& config, const FirstStep& run,
                                       const std::vector<double>& rank_clip_factors,
                                       ParityReport* report) {
  std::vector<std::string> why;
  if (report->pass()) return why;
  if (config.loss_weighting().name() == "micro_batch_mean") {
    bool unequal = false;
    const std::string counts = ValidPerMicroBatch(run, config.accumulation_steps(), &unequal);
    if (unequal) {
      why.push_back(absl::StrCat(
          "loss weighting micro_batch_mean gives each micro-batch's mean the same weight (1 / ",
          config.accumulation_steps(), " micro-batches / ", config.world_size(),
          " ranks), but the first update's micro-batches hold different numbers of valid "
          "examples (",
          counts, "), so an example of a fuller micro-batch weighs less than one of an "
          "emptier one, where the effective-batch rule weighs every accepted example 1 / ",
          run.accepted_examples(), ": use global_count"));
    }
  }
  if (config.has_clip_grad_norm() && config.clip_grad_norm().scope() == "local") {
    why.push_back(absl::StrCat(
        "clip_grad_norm scope local: each rank clipped its own gradient before the "
        "reduction",
        rank_clip_factors.empty()
            ? ""
            : absl::StrCat(" (factors ", absl::StrJoin(rank_clip_factors, ", "), ")"),
        ", so the sum is not the update's gradient clipped once, as the one-worker run "
        "clips it: use scope global (the reduced gradient's norm, one factor on every rank)"));
  }
  for (const std::string& sentence : why) report->add_failures(sentence);
  return why;
}

}  // namespace receipt_parity

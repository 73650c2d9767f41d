#include "verdicts/run_parity.h"

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
        what, t.name, t.max_abs_diff, t.max_rel_diff, t.rtol.value_or(rtol),
        t.atol.value_or(atol), t.atol.has_value() ? ", its own derived budget" : "",
        t.max_abs_reference));
  }
}

// One rtol and one atol per tensor, for the gradients and for the step's
// change: the config's for all, or the derived budgets.
struct TensorTolerances {
  std::vector<double> gradient_rtols, gradient_atols, parameter_rtols, parameter_atols;
};

// The derived budgets as each tensor's rtol and atol, `derived` and the
// reason in `report`. InvalidArgument when the derivation's tensors are not
// the run's.
absl::Status ApplyDerived(const DerivedTolerance& derived, const std::vector<std::string>& names,
                          TensorTolerances* tolerances, ParityReport* report) {
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
    tolerances->gradient_rtols[i] = t.gradient_rtol();
    tolerances->gradient_atols[i] = t.gradient_atol();
    tolerances->parameter_rtols[i] = t.parameter_rtol();
    tolerances->parameter_atols[i] = t.parameter_atol();
  }
  *report->mutable_derived() = derived;
  report->set_tolerance_reason(absl::StrCat(
      "derived (", derived.derived_for().empty() ? "bf16" : derived.derived_for(),
      "), per tensor and element-wise (each tensor's rtol and atol are in gradients[] and "
      "parameters_after_step[], which compare the step's change, and with their figures "
      "in derived.tensors[]; rtol and atol here are the floor): ",
      derived.method()));
  return absl::OkStatus();
}

// `step`'s parameters after the step less `before`, its parameters before
// it (loaded once: the starts are compared too): the step's change.
absl::StatusOr<NamedTensors> StepChange(const FirstStep& step, const NamedTensors& before,
                                        const std::vector<std::string>& names) {
  absl::StatusOr<NamedTensors> after = LoadNamedTensors(step.parameters_after(), names);
  if (!after.ok()) return after.status();
  try {
    for (size_t i = 0; i < after->size(); ++i) {
      (*after)[i].second =
          (*after)[i].second.to(at::kDouble) - before[i].second.to(at::kDouble);
    }
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("parity: the step's change: ", e.what()));
  }
  return after;
}

// The report's header: what was compared, the split, the plugins and the
// config's tolerance.
ParityReport StartReport(const FirstStep& run, const TrainingConfig& config,
                         const std::string& reference_dir, const std::string& path) {
  ParityReport report;
  report.set_simulated(false);
  report.set_pass_rule(kParityPassRule);
  report.set_note(absl::StrCat(
      "real run: ", run.world_size(), " worker processes joined by a c10d ",
      config.backend() == "nccl" ? "NCCL" : "Gloo",
      " process group; rank 0's reduced first-update gradient and its parameters after the "
      "step, against the one-worker reference in ", path));
  report.set_world_size(run.world_size());
  for (const RankBatch& batch : run.batch()) {
    int valid = 0;
    for (bool v : batch.valid()) valid += v ? 1 : 0;
    report.add_split(valid);
  }
  report.set_weighting(run.loss_weighting());
  report.set_reducer(run.reducer());
  SetTolerance(config, reference_dir, &report);
  return report;
}

// Every tensor the report's tolerance, then a derived one where `derive`
// is set (ApplyDerived).
absl::StatusOr<TensorTolerances> Tolerances(const FirstStep& reference,
                                            const std::vector<std::string>& names,
                                            const DeriveTolerance& derive,
                                            ParityReport* report) {
  TensorTolerances tolerances;
  for (auto* v : {&tolerances.gradient_rtols, &tolerances.parameter_rtols}) {
    v->assign(names.size(), report->rtol());
  }
  for (auto* v : {&tolerances.gradient_atols, &tolerances.parameter_atols}) {
    v->assign(names.size(), report->atol());
  }
  if (derive) {
    absl::StatusOr<DerivedTolerance> derived = derive(reference, report->rtol(), report->atol());
    if (!derived.ok()) return derived.status();
    if (absl::Status s = ApplyDerived(*derived, names, &tolerances, report); !s.ok()) return s;
  }
  return tolerances;
}

// The first update's tensors of one side: its gradients, its parameters
// before the step (per tensor only) and after it, or the step's change
// (per tensor: a derived tolerance's rtol reads |change|).
struct SideTensors {
  NamedTensors gradients;
  NamedTensors before;
  NamedTensors after;
};

absl::StatusOr<SideTensors> LoadSide(const FirstStep& step, const std::vector<std::string>& names,
                                     bool per_tensor) {
  SideTensors side;
  absl::StatusOr<NamedTensors> gradients = LoadNamedTensors(step.gradients(), names);
  if (!gradients.ok()) return gradients.status();
  side.gradients = *std::move(gradients);
  if (per_tensor) {
    absl::StatusOr<NamedTensors> before = LoadNamedTensors(step.parameters_before(), names);
    if (!before.ok()) return before.status();
    side.before = *std::move(before);
  }
  absl::StatusOr<NamedTensors> after = per_tensor
                                           ? StepChange(step, side.before, names)
                                           : LoadNamedTensors(step.parameters_after(), names);
  if (!after.ok()) return after.status();
  side.after = *std::move(after);
  return side;
}

// The gradients and the step (after, or its change) compared tensor by
// tensor into the report; tensors in `not_judged` reported, not counted.
absl::Status CompareSides(const SideTensors& run, const SideTensors& reference,
                          const TensorTolerances& tolerances, bool per_tensor,
                          const std::set<std::string>& not_judged, ParityReport* report) {
  for (auto [what, mine, theirs, out, rtols, atols] :
       {std::make_tuple("gradient", &run.gradients, &reference.gradients,
                        report->mutable_gradients(), &tolerances.gradient_rtols,
                        &tolerances.gradient_atols),
        std::make_tuple(per_tensor ? "change of the parameter in the step"
                                   : "parameter after the step",
                        &run.after, &reference.after, report->mutable_parameters_after_step(),
                        &tolerances.parameter_rtols, &tolerances.parameter_atols)}) {
    absl::StatusOr<TensorListComparison> comparison =
        per_tensor ? CompareTensors(*mine, *theirs, *rtols, *atols)
                   : CompareTensors(*mine, *theirs, report->rtol(), report->atol());
    if (!comparison.ok()) return comparison.status();
    AppendTensorParity(*comparison, out);
    if (per_tensor) {
      for (TensorParity& t : *out) t.set_judged(not_judged.count(t.name()) == 0);
    }
    report->set_max_abs_diff(std::max(report->max_abs_diff(), comparison->max_abs_diff));
    report->set_max_rel_diff(std::max(report->max_rel_diff(), comparison->max_rel_diff));
    if (std::string(what) == "gradient") report->set_bitwise_equal(comparison->bitwise_equal);
    DescribeFailures(*comparison, what, report->rtol(), report->atol(), not_judged, report);
  }
  return absl::OkStatus();
}

// What fails the whole first update: other starting bits (per tensor: the
// changes are compared), other receipts, ranks that disagree.
absl::Status AddUpdateFailures(const FirstStep& run, const FirstStep& reference,
                               const SideTensors& run_tensors,
                               const SideTensors& reference_tensors, bool per_tensor,
                               bool ranks_agree, ParityReport* report) {
  if (per_tensor) {
    absl::StatusOr<TensorListComparison> starts =
        CompareTensors(run_tensors.before, reference_tensors.before, 0.0, 0.0);
    if (!starts.ok()) return starts.status();
    if (!starts->bitwise_equal) {
      report->add_failures(absl::StrFormat(
          "the run started from other parameters than the reference (up to %.3g apart)",
          starts->max_abs_diff));
    }
  }
  if (AcceptedIds(run) != AcceptedIds(reference)) {
    report->add_failures(
        "the first update holds other receipts than the reference's first update");
  }
  if (!ranks_agree) report->add_failures("the ranks ended with different parameters");
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
  ParityReport report = StartReport(run, config, reference_dir, path);
  absl::StatusOr<TensorTolerances> tolerances = Tolerances(reference, names, derive, &report);
  if (!tolerances.ok()) return tolerances.status();
  const bool per_tensor = static_cast<bool>(derive);
  // Tensors a derived tolerance cannot judge: their differences do not
  // count (the replay judges them).
  const std::set<std::string> not_judged(report.derived().not_judged_tensors().begin(),
                                         report.derived().not_judged_tensors().end());
  report.set_accepted_examples(run.accepted_examples());
  report.set_ranks_agree(ranks_agree);
  absl::StatusOr<SideTensors> run_tensors = LoadSide(run, names, per_tensor);
  if (!run_tensors.ok()) return run_tensors.status();
  absl::StatusOr<SideTensors> reference_tensors = LoadSide(reference, names, per_tensor);
  if (!reference_tensors.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("parity: ", path, ": ", reference_tensors.status().message()));
  }
  if (absl::Status s = CompareSides(*run_tensors, *reference_tensors, *tolerances, per_tensor,
                                    not_judged, &report);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = AddUpdateFailures(run, reference, *run_tensors, *reference_tensors,
                                         per_tensor, ranks_agree, &report);
      !s.ok()) {
    return s;
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
                                                   const ParityConfig& parity,
                                                   const DerivedTolerance& derived) {
  std::map<std::string, double> rounding;
  for (const TensorBudget& t : derived.tensors()) rounding[t.name()] = t.parameter_budget_norm();
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
  std::vector<double> tensor_drifts;
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
    in.earlier_tensor_drifts = tensor_drifts;
    in.loss_rtol = kDriftSafetyFactor * derived.loss_relative_error();
    if (!rounding.empty()) {
      for (const auto& [name, tensor] : reference->parameters) {
        auto it = rounding.find(name);
        in.tensor_floors.push_back(it == rounding.end() ? 0 : it->second);
      }
    }
    auto envelope = loss_drift.upper_bound(update);
    if (envelope != loss_drift.begin()) in.loss_drift_envelope = std::prev(envelope)->second;
    absl::StatusOr<UpdateComparison> compared = CompareUpdate(in);
    if (!compared.ok()) {
      AddCheckedUpdate(Unjudged(update, compared.status()), &verdict);
      continue;
    }
    drift = compared->drift;
    if (!compared->tensor_drifts.empty()) tensor_drifts = compared->tensor_drifts;
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

void AddReplayVerdict(ReplayVerdict replay, ParityReport* report) {
  *report->mutable_replay() = std::move(replay);
  const ReplayVerdict& verdict = report->replay();
  if (verdict.replayed_updates() == 0 || verdict.pass()) return;
  int failing = 0;
  std::string first;
  for (const UpdateReplay& u : verdict.updates()) {
    if (u.mode() == "not_replayed" || u.pass()) continue;
    ++failing;
    if (first.empty() && u.failures_size() > 0) first = u.failures(0);
  }
  report->add_failures(absl::StrCat("replay: ", failing, " of ", verdict.replayed_updates(),
                                    " replayed updates differ from the run; the first: ", first));
  report->set_pass(false);
}

namespace {

// The replay's part of the verdict line.
std::string ReplayPart(const ReplayVerdict& verdict) {
  if (verdict.replayed_updates() == 0) {
    return verdict.not_replayed().empty()
               ? ""
               : absl::StrCat("; no update replayed (", verdict.not_replayed(), ")");
  }
  std::vector<int32_t> replayed, skipped;
  int passing = 0;
  for (const UpdateReplay& u : verdict.updates()) {
    (u.mode() == "not_replayed" ? skipped : replayed).push_back(u.update());
    if (u.mode() != "not_replayed" && u.pass()) ++passing;
  }
  return absl::StrCat(
      "; replay: ", passing, " of ", verdict.replayed_updates(), " checked updates (",
      absl::StrJoin(replayed, ", "), ") recomputed in one process",
      verdict.bitwise_updates() == verdict.replayed_updates() ? " bit for bit"
      : verdict.bitwise_updates() == 0
          ? " within the bound of their sums' order, each step bit for bit"
          : absl::StrCat(", ", verdict.bitwise_updates(), " bit for bit, the others within "
                         "the bound of their sums' order"),
      skipped.empty() ? ""
                      : absl::StrCat(", ", skipped.size(), " not replayed (",
                                     absl::StrJoin(skipped, ", "), ")"));
}

// The every-update checks' part of the verdict line.
std::string EveryUpdatePart(const EveryUpdateVerdict& verdict) {
  if (verdict.updates() == 0) {
    return verdict.not_verified().empty()
               ? ""
               : absl::StrCat("; every-update checks not run (", verdict.not_verified(), ")");
  }
  if (verdict.pass() && verdict.lost_with_rank_size() > 0) {
    return absl::StrCat("; every update (", verdict.verified(), " of ", verdict.updates(),
                        ") verified (", absl::StrJoin(verdict.checks(), ", "), ") but update",
                        verdict.lost_with_rank_size() > 1 ? "s " : " ",
                        absl::StrJoin(verdict.lost_with_rank(), ", "),
                        ", not judged: its reports were lost with a rank");
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
  return !absl::StartsWith(failure, "whole run:") && !absl::StartsWith(failure, "every update:") &&
         !absl::StartsWith(failure, "replay:");
}

}  // namespace

namespace {

// Where the tensors numerics cannot judge go: the replay, when it ran.
std::string LeftTo(const ParityReport& report) {
  return report.replay().replayed_updates() > 0 ? "left to the replay"
                                                : "judged by no verdict (no replay)";
}

// The whole run's part of the verdict line.
std::string WholeRunPart(const ParityReport& report) {
  const WholeRunParity& whole = report.whole_run();
  if (whole.mode() == "not_judged") {
    return absl::StrCat("whole run not judged (", whole.not_judged(), ")");
  }
  int passing = 0, tensors = 0, tensor_verdicts = 0;
  std::vector<int32_t> diverged;
  for (const UpdateParity& u : whole.updates()) {
    passing += u.pass() ? 1 : 0;
    tensors = std::max(tensors, u.tensors_size());
    tensor_verdicts += u.judged_tensors();
    if (!u.judged() && !u.not_judged().empty()) diverged.push_back(u.update());
  }
  const std::string head =
      absl::StrCat("whole run: ", passing, " of ", whole.check_updates_size(),
                   " checked updates (", absl::StrJoin(whole.check_updates(), ", "), ") ");
  if (whole.mode() == "bitwise") return absl::StrCat(head, "bitwise equal");
  const int all = tensors * whole.check_updates_size();
  return absl::StrCat(
      head, "pass; numerics judged ", tensor_verdicts, " of ", all,
      " tensor-updates within their drift budgets",
      tensor_verdicts == all
          ? ""
          : absl::StrCat(", the other ", all - tensor_verdicts, " diverged past ",
                         whole.most_share_of_one_update() * 100, "% of one update's change and ",
                         LeftTo(report)),
      diverged.empty()
          ? ""
          : absl::StrCat(" (updates ", absl::StrJoin(diverged, ", "),
                         " in every tensor: their loss judged against the twin's spread)"));
}

// The first update's numerics part of the verdict line.
std::string FirstUpdatePart(const ParityReport& report, const std::string& first_failure) {
  if (!first_failure.empty()) return absl::StrCat("first update fails: ", first_failure);
  const DerivedTolerance& derived = report.derived();
  if (derived.tensors_size() == 0) {
    return absl::StrFormat("first update within tolerance (largest difference %.3g)",
                           report.max_abs_diff());
  }
  const auto& not_judged = derived.not_judged_tensors();
  if (derived.judged_tensors() == 0) {
    return absl::StrCat("first update: no tensor judgeable by numerics (", derived.derived_for(),
                        "'s rounding too large a share of every tensor's update), all ",
                        derived.tensors_size(), " ", LeftTo(report));
  }
  return absl::StrCat(
      "first update: ", derived.judged_tensors(), " of ", derived.tensors_size(),
      " tensors judged by numerics within their derived ", derived.derived_for(), " budgets",
      not_judged.empty()
          ? ""
          : absl::StrCat(", ", not_judged.size(), " ", LeftTo(report), " (",
                         absl::StrJoin(not_judged, ", "), ")"),
      absl::StrFormat(" (largest difference %.3g)", report.max_abs_diff()));
}

}  // namespace

std::string ParityVerdictLine(const ParityReport& report) {
  std::string first_failure;
  for (const std::string& f : report.failures()) {
    if (first_failure.empty() && IsFirstUpdateFailure(f)) first_failure = f;
  }
  return absl::StrCat(report.pass() ? "parity PASSED: " : "parity FAILED: ",
                      FirstUpdatePart(report, first_failure),
                      EveryUpdatePart(report.every_update()), ReplayPart(report.replay()), "; ",
                      WholeRunPart(report));
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

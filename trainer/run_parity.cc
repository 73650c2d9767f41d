#include "trainer/run_parity.h"

#include <algorithm>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "artifacts/artifact_stamp.h"
#include "io/json_file.h"
#include "parity/cross_device_tolerance.h"
#include "parity/tensor_comparison.h"
#include "artifacts/first_step_record.h"
#include "artifacts/run_manifest.pb.h"

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
                      ParityReport* report) {
  for (const TensorComparison& t : comparison.tensors) {
    if (t.within_tolerance) continue;
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
      "derived (bf16), per tensor (each tensor's atol is in gradients[] and "
      "parameters_after_step[], and with its figures in derived.tensors[]; atol here is "
      "the largest), rtol 0: ", derived.method()));
  if (!derived.far_below_one_update()) {
    report->add_failures(absl::StrCat(
        "the derived bf16 tolerance is not below ", derived.most_share_of_one_update() * 100,
        "% of what one update changes of every tensor (largest: ",
        derived.largest_share_of_one_update() * 100,
        "%): a run that did not train could pass; parity is not judged"));
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
    report.set_max_abs_diff(std::max(report.max_abs_diff(), comparison->max_abs_diff));
    report.set_max_rel_diff(std::max(report.max_rel_diff(), comparison->max_rel_diff));
    if (std::string(what) == "gradient") {
      report.set_bitwise_equal(comparison->bitwise_equal);
    }
    DescribeFailures(*comparison, what, report.rtol(), report.atol(), &report);
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

#include "parity/whole_run_parity.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <set>
#include <string>
#include <utility>

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace receipt_parity {
namespace {

absl::Status CheckSameUpdate(const CheckedPoint& a, const CheckedPoint& b, const char* what) {
  if (a.update == b.update) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("whole-run parity: the ", what,
                                                 " point is of update ", b.update,
                                                 ", the run's of update ", a.update));
}

// The L2 norm of a - b over every element of every tensor, in double.
// InvalidArgument when the lists differ in names or shapes.
absl::StatusOr<double> DistanceOf(const NamedTensors& a, const NamedTensors& b) {
  if (a.size() != b.size()) {
    return absl::InvalidArgumentError(absl::StrCat("whole-run parity: ", a.size(),
                                                   " tensors against ", b.size()));
  }
  double squares = 0;
  try {
    for (size_t t = 0; t < a.size(); ++t) {
      if (a[t].first != b[t].first || !a[t].second.sizes().equals(b[t].second.sizes())) {
        return absl::InvalidArgumentError(absl::StrCat(
            "whole-run parity: tensor ", t, " is ", a[t].first, " against ", b[t].first,
            " (or of another shape)"));
      }
      const at::Tensor d = a[t].second.to(at::kDouble) - b[t].second.to(at::kDouble);
      squares += (d * d).sum().item<double>();
    }
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("whole-run parity: LibTorch: ", e.what()));
  }
  return std::sqrt(squares);
}

// The L2 norm of atol + rtol |ref| over every element: the config's
// tolerance as a distance.
absl::StatusOr<double> FloorOf(const NamedTensors& reference, double atol, double rtol) {
  double squares = 0;
  try {
    for (const auto& [name, tensor] : reference) {
      const at::Tensor allowed = atol + rtol * tensor.to(at::kDouble).abs();
      squares += (allowed * allowed).sum().item<double>();
    }
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("whole-run parity: LibTorch: ", e.what()));
  }
  return std::sqrt(squares);
}

// The parameters' budget and gate, and the loss's budget, into `out`; the
// twin's distance this budget used into `drift_used`.
absl::Status DriftBudgets(const UpdateComparisonInputs& in, double* drift_used,
                          UpdateParity* out) {
  absl::StatusOr<double> drift = DistanceOf(in.twin->parameters, in.reference->parameters);
  if (!drift.ok()) return drift.status();
  *drift_used = std::max(*drift, in.earlier_drift);
  absl::StatusOr<double> floor = FloorOf(in.reference->parameters, in.atol, in.rtol);
  if (!floor.ok()) return floor.status();
  out->set_twin_drift(*drift_used);
  out->set_floor_norm(*floor);
  out->set_budget_norm(kDriftSafetyFactor * *drift_used + *floor);
  const bool gated = in.reference_first != nullptr && in.reference_first != in.reference &&
                     in.reference_first->update != in.reference->update;
  if (gated) {
    absl::StatusOr<double> moved =
        DistanceOf(in.reference->parameters, in.reference_first->parameters);
    if (!moved.ok()) return moved.status();
    out->set_training_movement_norm(*moved);
    const double derived = kDriftSafetyFactor * *drift_used;
    out->set_largest_budget_share_of_training(
        derived == 0 ? 0
                     : (*moved > 0 ? derived / *moved : std::numeric_limits<double>::infinity()));
  }
  out->set_twin_loss(in.twin->loss);
  const double loss_drift =
      std::max(std::fabs(in.twin->loss - in.reference->loss), in.loss_drift_envelope);
  out->set_twin_loss_drift(loss_drift);
  out->set_loss_budget(kDriftSafetyFactor * loss_drift + in.atol +
                       in.rtol * std::fabs(in.reference->loss));
  return absl::OkStatus();
}

// Each tensor against the reference, for finding where a run drifts: its
// atol is kDriftSafetyFactor x the twin's largest distance in it + atol.
// Not the verdict (one tensor's largest element is one sample of the drift;
// the distance over every parameter is the measure), so `judged` is false
// on each.
absl::Status AppendTensors(const UpdateComparisonInputs& in, UpdateParity* out) {
  absl::StatusOr<TensorListComparison> twin =
      CompareTensors(in.twin->parameters, in.reference->parameters, 0, 0);
  if (!twin.ok()) return twin.status();
  std::vector<double> atols;
  for (const TensorComparison& t : twin->tensors) {
    atols.push_back(kDriftSafetyFactor * t.max_abs_diff + in.atol);
  }
  absl::StatusOr<TensorListComparison> c =
      CompareTensors(in.run->parameters, in.reference->parameters, in.rtol, atols);
  if (!c.ok()) return c.status();
  AppendTensorParity(*c, out->mutable_parameters());
  for (TensorParity& t : *out->mutable_parameters()) t.set_judged(false);
  out->set_bitwise_equal(c->bitwise_equal && in.run->loss == in.reference->loss);
  return absl::OkStatus();
}

// Bitwise mode: every tensor and the loss the reference's bits.
absl::Status CompareBitwise(const UpdateComparisonInputs& in, UpdateParity* out) {
  absl::StatusOr<TensorListComparison> c =
      CompareTensors(in.run->parameters, in.reference->parameters, 0, 0);
  if (!c.ok()) return c.status();
  AppendTensorParity(*c, out->mutable_parameters());
  out->set_bitwise_equal(c->bitwise_equal && in.run->loss == in.reference->loss);
  for (const TensorComparison& tensor : c->tensors) {
    if (tensor.bitwise_equal) continue;
    out->add_failures(absl::StrFormat(
        "update %d: parameter %s differs by up to %.3g (bitwise mode)", out->update(),
        tensor.name, tensor.max_abs_diff));
  }
  if (in.run->loss != in.reference->loss) {
    out->add_failures(absl::StrFormat("update %d: the loss %.17g is not the reference's %.17g",
                                      out->update(), in.run->loss, in.reference->loss));
  }
  out->set_judged(true);
  out->set_pass(out->failures_size() == 0);
  return absl::OkStatus();
}

// "fc0.bias (3.60 x its own twin-derived budget)": the tensor whose largest
// difference is the largest share of its own per-tensor budget.
std::string FurthestTensor(const UpdateParity& update) {
  const TensorParity* furthest = nullptr;
  double share = -1;
  for (const TensorParity& t : update.parameters()) {
    const double s = t.atol() > 0 ? t.max_abs_diff() / t.atol() : 0;
    if (s > share) {
      share = s;
      furthest = &t;
    }
  }
  if (furthest == nullptr) return "none";
  return absl::StrFormat("%s (%.2f x its own twin-derived budget)", furthest->name(), share);
}

}  // namespace

std::vector<int64_t> DefaultCheckUpdates(int64_t run_updates) {
  const int64_t last = std::max<int64_t>(0, run_updates - 1);
  std::set<int64_t> updates = {0, last};
  for (int quarter = 1; quarter <= 3; ++quarter) updates.insert(last * quarter / 4);
  return {updates.begin(), updates.end()};
}

absl::StatusOr<std::vector<int64_t>> CheckUpdates(const std::vector<int64_t>& configured,
                                                  int64_t run_updates) {
  if (configured.empty()) return DefaultCheckUpdates(run_updates);
  std::set<int64_t> updates = {0};
  for (int64_t u : configured) {
    if (u < 0 || u >= run_updates) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parity.check_updates: update ", u, " is beyond the run, whose updates are 0..",
          run_updates - 1, " (", run_updates, " updates)"));
    }
    updates.insert(u);
  }
  return std::vector<int64_t>(updates.begin(), updates.end());
}

absl::StatusOr<UpdateComparison> CompareUpdate(const UpdateComparisonInputs& in) {
  if (in.run == nullptr || in.reference == nullptr) {
    return absl::InvalidArgumentError("whole-run parity: the run's and the reference's points");
  }
  if (absl::Status s = CheckSameUpdate(*in.run, *in.reference, "reference"); !s.ok()) return s;
  if (in.twin != nullptr) {
    if (absl::Status s = CheckSameUpdate(*in.run, *in.twin, "drift twin's"); !s.ok()) return s;
  }
  UpdateComparison result;
  UpdateParity& out = result.parity;
  out.set_update(static_cast<int32_t>(in.run->update));
  out.set_loss(in.run->loss);
  out.set_reference_loss(in.reference->loss);
  out.set_loss_diff(std::fabs(in.run->loss - in.reference->loss));
  if (in.twin == nullptr) {
    if (absl::Status s = CompareBitwise(in, &out); !s.ok()) return s;
    return result;
  }
  if (absl::Status s = DriftBudgets(in, &result.drift, &out); !s.ok()) return s;
  if (absl::Status s = AppendTensors(in, &out); !s.ok()) return s;
  absl::StatusOr<double> distance = DistanceOf(in.run->parameters, in.reference->parameters);
  if (!distance.ok()) return distance.status();
  out.set_drift_norm(*distance);
  out.set_largest_share_of_budget(
      out.budget_norm() > 0 ? *distance / out.budget_norm()
                            : (*distance > 0 ? std::numeric_limits<double>::infinity() : 0));
  if (out.largest_budget_share_of_training() >= kMostShareOfTraining) {
    // What the budget would let pass is not a verdict: none is given.
    out.set_judged(false);
    out.set_not_judged(absl::StrFormat(
        "the drift twin's drift has grown to %.0f%% of what the reference's training moved "
        "the parameters since update 0 (a budget must stay below %.0f%%): a run that "
        "trained something else could pass, so this update is not judged",
        100 * out.largest_budget_share_of_training(), 100 * kMostShareOfTraining));
    out.set_pass(false);
    return result;
  }
  out.set_judged(true);
  if (*distance > out.budget_norm()) {
    out.add_failures(absl::StrFormat(
        "update %d: the parameters are %.3g from the reference's (L2 over every parameter), "
        "beyond the budget %.3g (%g x the drift twin's %.3g + the tolerance's %.3g); the "
        "tensor furthest off its own: %s",
        out.update(), *distance, out.budget_norm(), kDriftSafetyFactor, out.twin_drift(),
        out.floor_norm(), FurthestTensor(out)));
  }
  if (out.loss_diff() > out.loss_budget()) {
    out.add_failures(absl::StrFormat(
        "update %d: the loss differs by %.3g from the reference's, beyond its budget %.3g",
        out.update(), out.loss_diff(), out.loss_budget()));
  }
  out.set_pass(out.failures_size() == 0);
  return result;
}


WholeRunParity WholeRunHeader(const std::vector<int64_t>& check_updates,
                              int twin_micro_batches) {
  WholeRunParity verdict;
  for (int64_t u : check_updates) verdict.add_check_updates(static_cast<int32_t>(u));
  verdict.set_most_share_of_training(kMostShareOfTraining);
  if (twin_micro_batches == 0) {
    verdict.set_mode("bitwise");
    verdict.set_method(
        "the run computes each update as the reference does (one rank, one micro-batch), "
        "so its parameters and loss after every checked update must be bitwise the "
        "reference's");
    return verdict;
  }
  verdict.set_mode("drift_budget");
  verdict.set_safety_factor(kDriftSafetyFactor);
  verdict.set_twin_micro_batches(twin_micro_batches);
  verdict.set_method(absl::StrCat(
      "the drift twin, a one-worker run of the reference's config summing every update's "
      "gradient over ",
      twin_micro_batches,
      " micro-batches (another reduction order), measured how far one order's rounding "
      "grows by each checked update; a tensor's budget is ",
      kDriftSafetyFactor,
      " x the twin's largest distance from the reference in it at this or an earlier "
      "checked update + atol (+ rtol x |ref| element-wise), the loss's ",
      kDriftSafetyFactor,
      " x the twin's largest loss difference over every update so far + atol (+ rtol x "
      "|ref|)"));
  return verdict;
}

void AddCheckedUpdate(UpdateParity update, WholeRunParity* verdict) {
  *verdict->add_updates() = std::move(update);
  bool pass = verdict->updates_size() == verdict->check_updates_size();
  int judged = 0;
  for (const UpdateParity& u : verdict->updates()) {
    if (!u.judged() && !u.not_judged().empty()) continue;
    ++judged;
    pass = pass && u.pass();
  }
  verdict->set_judged_updates(judged);
  verdict->set_pass(pass && judged > 0);
}

WholeRunParity NotJudged(const std::vector<int64_t>& check_updates, const std::string& why) {
  WholeRunParity verdict;
  for (int64_t u : check_updates) verdict.add_check_updates(static_cast<int32_t>(u));
  verdict.set_mode("not_judged");
  verdict.set_not_judged(why);
  verdict.set_pass(false);
  return verdict;
}

}  // namespace receipt_parity

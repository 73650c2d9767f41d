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

// The L2 norm of a_t - b_t per tensor, in double. InvalidArgument when the
// lists differ in names or shapes.
absl::StatusOr<std::vector<double>> TensorDistances(const NamedTensors& a, const NamedTensors& b) {
  if (a.size() != b.size()) {
    return absl::InvalidArgumentError(absl::StrCat("whole-run parity: ", a.size(),
                                                   " tensors against ", b.size()));
  }
  std::vector<double> distances;
  try {
    for (size_t t = 0; t < a.size(); ++t) {
      if (a[t].first != b[t].first || !a[t].second.sizes().equals(b[t].second.sizes())) {
        return absl::InvalidArgumentError(absl::StrCat(
            "whole-run parity: tensor ", t, " is ", a[t].first, " against ", b[t].first,
            " (or of another shape)"));
      }
      distances.push_back(
          (a[t].second.to(at::kDouble) - b[t].second.to(at::kDouble)).norm().item<double>());
    }
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("whole-run parity: LibTorch: ", e.what()));
  }
  return distances;
}

// The L2 norm over every tensor of per-tensor norms.
double Pooled(const std::vector<double>& norms) {
  double squares = 0;
  for (double n : norms) squares += n * n;
  return std::sqrt(squares);
}

// The L2 norm of a - b over every element of every tensor, in double.
absl::StatusOr<double> DistanceOf(const NamedTensors& a, const NamedTensors& b) {
  absl::StatusOr<std::vector<double>> d = TensorDistances(a, b);
  if (!d.ok()) return d.status();
  return Pooled(*d);
}

// The L2 norm of atol + rtol |ref| per tensor: the config's tolerance as a
// distance.
absl::StatusOr<std::vector<double>> FloorsOf(const NamedTensors& reference, double atol,
                                             double rtol) {
  std::vector<double> floors;
  try {
    for (const auto& [name, tensor] : reference) {
      floors.push_back((atol + rtol * tensor.to(at::kDouble).abs()).norm().item<double>());
    }
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("whole-run parity: LibTorch: ", e.what()));
  }
  return floors;
}

// Per tensor, the twin's and the run's distances from the reference and
// the config's tolerance as a distance: computed once, pooled for the
// report and judged tensor by tensor.
struct Distances {
  std::vector<double> twin;
  std::vector<double> run;
  std::vector<double> floors;
};

absl::StatusOr<Distances> DistancesOf(const UpdateComparisonInputs& in) {
  Distances d;
  absl::StatusOr<std::vector<double>> twin =
      TensorDistances(in.twin->parameters, in.reference->parameters);
  if (!twin.ok()) return twin.status();
  absl::StatusOr<std::vector<double>> run =
      TensorDistances(in.run->parameters, in.reference->parameters);
  if (!run.ok()) return run.status();
  absl::StatusOr<std::vector<double>> floors = FloorsOf(in.reference->parameters, in.atol, in.rtol);
  if (!floors.ok()) return floors.status();
  d.twin = *std::move(twin);
  d.run = *std::move(run);
  d.floors = *std::move(floors);
  return d;
}

// The pooled figures (reported) and the loss's budget, into `out`; the
// twin's pooled distance this update used into `drift_used`.
absl::Status DriftBudgets(const UpdateComparisonInputs& in, const Distances& distances,
                          double* drift_used, UpdateParity* out) {
  *drift_used = std::max(Pooled(distances.twin), in.earlier_drift);
  const double floor = Pooled(distances.floors);
  out->set_twin_drift(*drift_used);
  out->set_floor_norm(floor);
  out->set_budget_norm(kDriftSafetyFactor * *drift_used + floor);
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
                       std::max(in.rtol, in.loss_rtol) * std::fabs(in.reference->loss));
  return absl::OkStatus();
}

// Each tensor's element-wise comparison (for finding where a run drifts:
// its atol is kDriftSafetyFactor x the twin's largest element difference +
// atol; not the verdict, so `judged` is false on each).
absl::Status AppendElements(const UpdateComparisonInputs& in, UpdateParity* out) {
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

// Each tensor's numerics verdict (TensorDrift) into `out`, failing those
// judged and beyond their budget; the twin's per-tensor distances used
// into `drifts_used`.
void JudgeTensors(const UpdateComparisonInputs& in, const Distances& distances,
                  std::vector<double>* drifts_used, UpdateParity* out) {
  const std::vector<double>& changes = in.reference->change_norms;
  *drifts_used = distances.twin;
  for (size_t t = 0; t < distances.twin.size(); ++t) {
    if (t < in.earlier_tensor_drifts.size()) {
      (*drifts_used)[t] = std::max((*drifts_used)[t], in.earlier_tensor_drifts[t]);
    }
    TensorDrift* d = out->add_tensors();
    d->set_name(in.reference->parameters[t].first);
    d->set_run_drift(distances.run[t]);
    d->set_twin_drift((*drifts_used)[t]);
    d->set_floor(t < in.tensor_floors.size()
                     ? std::max(distances.floors[t], in.tensor_floors[t])
                     : distances.floors[t]);
    d->set_budget(kDriftSafetyFactor * d->twin_drift() + d->floor());
    d->set_one_update_change(t < changes.size() ? changes[t] : 0);
    d->set_share_of_one_update(d->one_update_change() > 0
                                   ? d->budget() / d->one_update_change()
                                   : std::numeric_limits<double>::infinity());
    d->set_judged(d->share_of_one_update() <= kMostShareOfOneUpdateChange);
    d->set_pass(d->judged() && d->run_drift() <= d->budget());
    if (!d->judged()) {
      out->add_diverged_tensors(d->name());
      continue;
    }
    out->set_judged_tensors(out->judged_tensors() + 1);
    if (d->pass()) continue;
    out->add_failures(absl::StrFormat(
        "update %d: parameter %s is %.3g from the reference's (L2), beyond its budget %.3g "
        "(%g x the drift twin's %.3g + the tolerance's %.3g; %.1f%% of what this update "
        "changed of it)",
        out->update(), d->name(), d->run_drift(), d->budget(), kDriftSafetyFactor,
        d->twin_drift(), d->floor(), 100 * d->share_of_one_update()));
  }
}

// Why an update none of whose tensors could be judged by numerics gets no
// parameter verdict, with the run's and the twin's drift side by side.
std::string DivergedReason(const UpdateParity& out, bool changes_recorded) {
  if (!changes_recorded) {
    return "the reference's point does not record what this update changed of each tensor "
           "(written before change_norms existed): the parameters are not judged by "
           "numerics; the loss is";
  }
  return absl::StrFormat(
      "diverged: rounding alone has moved the drift twin %.3g from the reference (the run: "
      "%.3g; L2 over every parameter), more than %.0f%% of what this update changed in "
      "every tensor, so no tensor is judgeable by numerics (the every-update checks and the "
      "replay, exact at every update, judge the machinery); the loss is judged against the "
      "twin's spread",
      out.twin_drift(), out.drift_norm(), 100 * kMostShareOfOneUpdateChange);
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
  absl::StatusOr<Distances> distances = DistancesOf(in);
  if (!distances.ok()) return distances.status();
  if (absl::Status s = DriftBudgets(in, *distances, &result.drift, &out); !s.ok()) return s;
  if (absl::Status s = AppendElements(in, &out); !s.ok()) return s;
  const double distance = Pooled(distances->run);
  out.set_drift_norm(distance);
  out.set_largest_share_of_budget(
      out.budget_norm() > 0 ? distance / out.budget_norm()
                            : (distance > 0 ? std::numeric_limits<double>::infinity() : 0));
  JudgeTensors(in, *distances, &result.tensor_drifts, &out);
  out.set_judged(out.judged_tensors() > 0);
  if (!out.judged()) out.set_not_judged(DivergedReason(out, !in.reference->change_norms.empty()));
  if (out.loss_diff() > out.loss_budget()) {
    out.add_failures(absl::StrFormat(
        "update %d: the loss differs by %.3g from the reference's, beyond its budget %.3g "
        "(%g x the drift twin's largest loss difference so far, %.3g, + the tolerance and the "
        "precision's rounding of a loss)",
        out.update(), out.loss_diff(), out.loss_budget(), kDriftSafetyFactor,
        out.twin_loss_drift()));
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
  verdict.set_most_share_of_one_update(kMostShareOfOneUpdateChange);
  verdict.set_twin_micro_batches(twin_micro_batches);
  verdict.set_method(absl::StrCat(
      "the drift twin, a one-worker run of the reference's config summing every update's "
      "gradient over ",
      twin_micro_batches,
      " micro-batches (another reduction order), measured how far one order's rounding "
      "grows by each checked update; a tensor's budget is ",
      kDriftSafetyFactor,
      " x the twin's largest distance from the reference in it (L2) at this or an earlier "
      "checked update + || atol + rtol x |ref| ||, and the tensor is judged when its budget "
      "is at most ",
      kMostShareOfOneUpdateChange * 100,
      "% of what the reference's step changed of it at that update (beyond, rounding has "
      "diverged the trajectories: the exact layers judge it); the loss's budget is ",
      kDriftSafetyFactor,
      " x the twin's largest loss difference over every update so far + atol (+ rtol x "
      "|ref|), at every checked update"));
  return verdict;
}

void AddCheckedUpdate(UpdateParity update, WholeRunParity* verdict) {
  *verdict->add_updates() = std::move(update);
  bool pass = verdict->updates_size() == verdict->check_updates_size();
  int judged = 0;
  for (const UpdateParity& u : verdict->updates()) {
    judged += u.judged() ? 1 : 0;
    pass = pass && u.pass();
  }
  verdict->set_judged_updates(judged);
  verdict->set_pass(pass);
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

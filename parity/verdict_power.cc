#include "parity/verdict_power.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"

namespace receipt_parity {
namespace {

constexpr double kUnitRoundoff = 5.9604644775390625e-08;  // 2^-24

// rtol + atol / max |ref|: the smallest uniform relative change of the
// tensor one element-wise comparison detects; infinite when the reference
// is all zeros.
double ElementWisePower(const TensorParity& t, double rtol, double atol) {
  const double r = t.has_rtol() ? t.rtol() : rtol;
  const double a = t.has_atol() ? t.atol() : atol;
  if (t.max_abs_reference() <= 0) return std::numeric_limits<double>::infinity();
  return r + a / t.max_abs_reference();
}

// The verdict's figure: its weakest judged tensor, and how many it judged.
void Summarise(VerdictPower* power) {
  for (const TensorPower& t : power->tensors()) {
    if (!t.judged()) continue;
    power->set_judged_tensors(power->judged_tensors() + 1);
    power->set_smallest_relative_change(
        std::max(power->smallest_relative_change(), t.smallest_relative_change()));
  }
}

VerdictPower FirstUpdatePower(const ParityReport& report) {
  VerdictPower power;
  power.set_verdict("first_update");
  power.set_detects(
      "the first update's gradient and step against the reference's, element by element: a "
      "tensor's figure is rtol + atol / max |ref| (its own derived budget), the smaller of "
      "its gradient's and its change's");
  for (int i = 0; i < report.gradients_size(); ++i) {
    const TensorParity& g = report.gradients(i);
    TensorPower* t = power.add_tensors();
    t->set_name(g.name());
    t->set_judged(!g.has_judged() || g.judged());
    double figure = ElementWisePower(g, report.rtol(), report.atol());
    if (i < report.parameters_after_step_size()) {
      figure = std::min(figure, ElementWisePower(report.parameters_after_step(i), report.rtol(),
                                                 report.atol()));
    }
    if (!std::isfinite(figure)) t->set_judged(false);
    t->set_smallest_relative_change(t->judged() ? figure : 0);
  }
  Summarise(&power);
  return power;
}

// Per tensor name, the largest figure over the updates (in first-seen
// order), and whether any update judged it.
struct Weakest {
  std::vector<std::string> order;
  std::map<std::string, TensorPower> by_name;
  void Add(const std::string& name, bool judged, double figure) {
    auto [it, fresh] = by_name.try_emplace(name);
    if (fresh) {
      order.push_back(name);
      it->second.set_name(name);
    }
    if (!judged) return;
    it->second.set_judged(true);
    it->second.set_smallest_relative_change(
        std::max(it->second.smallest_relative_change(), figure));
  }
  void Into(VerdictPower* power) const {
    for (const std::string& name : order) *power->add_tensors() = by_name.at(name);
    Summarise(power);
  }
};

VerdictPower WholeRunPower(const WholeRunParity& whole) {
  VerdictPower power;
  power.set_verdict("whole_run");
  if (whole.mode() == "bitwise") {
    power.set_detects("bitwise mode: every parameter after every checked update the "
                      "reference's bits, so any change of a bit (0: exact)");
    return power;
  }
  power.set_detects(
      "each tensor after each checked update within its drift budget: a tensor's figure is "
      "its budget over what the update changed of it (share_of_one_update), the largest over "
      "the checked updates where it was judged; diverged tensors are not judged");
  Weakest weakest;
  for (const UpdateParity& u : whole.updates()) {
    for (const TensorDrift& d : u.tensors()) {
      weakest.Add(d.name(), d.judged(), d.share_of_one_update());
    }
  }
  weakest.Into(&power);
  return power;
}

VerdictPower ReplayPower(const ReplayVerdict& replay) {
  VerdictPower power;
  power.set_verdict("replay");
  power.set_detects(
      "each replayed update's parameters after the step compared bit for bit: a tensor's "
      "figure is half an ulp of the parameter after the step over the step's change, at its "
      "most sensitive element, the largest over the replayed updates");
  Weakest weakest;
  for (const UpdateReplay& u : replay.updates()) {
    if (u.mode() == "not_replayed") continue;
    for (const TensorPower& p : u.power()) {
      weakest.Add(p.name(), p.judged(), p.smallest_relative_change());
    }
  }
  weakest.Into(&power);
  return power;
}

VerdictPower EveryUpdatePower(const ParityReport& report) {
  VerdictPower power;
  power.set_verdict("every_update");
  const int world = std::max(report.world_size(), 2);
  power.set_smallest_relative_change((world - 1) * kUnitRoundoff);
  power.set_detects(absl::StrCat(
      "every update at once: the accounting exactly (any weight, slot or key changed), the "
      "reduction and the clipping within (W - 1) u = ", (world - 1) * kUnitRoundoff,
      " of the sum of their terms' magnitudes (docs/parity.md, \"Every update verified\"), "
      "the replicas bit for bit"));
  return power;
}

}  // namespace

std::vector<VerdictPower> VerdictPowers(const ParityReport& report) {
  std::vector<VerdictPower> powers;
  if (report.gradients_size() > 0) powers.push_back(FirstUpdatePower(report));
  if (report.every_update().updates() > 0) powers.push_back(EveryUpdatePower(report));
  if (report.replay().replayed_updates() > 0) powers.push_back(ReplayPower(report.replay()));
  const std::string& mode = report.whole_run().mode();
  if (mode == "bitwise" || mode == "drift_budget") {
    powers.push_back(WholeRunPower(report.whole_run()));
  }
  return powers;
}

}  // namespace receipt_parity

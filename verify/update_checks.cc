#include "verify/update_checks.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace receipt_parity {
namespace {

// The bounds are evaluated in float64 themselves; this covers their own
// few roundings.
constexpr double kBoundEvaluationSlack = 1 + 0x1p-40;

std::string Num(double value) { return absl::StrFormat("%.9g", value); }

std::string Hex(uint64_t value) { return absl::StrFormat("%016x", value); }

// gamma_53(n) / (1 - gamma_53(n)): a float64 projection of n products is
// within this of its exact value relative to its computed magnitude.
double Float64Slack(int64_t products) {
  const double g = Gamma(products, kFloat64UnitRoundoff);
  return g / (1 - g);
}

int64_t MostProducts(const std::vector<RankUpdateReport>& ranks) {
  int64_t most = 0;
  for (const RankUpdateReport& r : ranks) {
    most = std::max({most, r.contribution.products, r.reduced.products, r.stepped.products});
  }
  return most;
}

EveryUpdateFailure Failure(const UpdateCheckContext& context, int rank, const char* check,
                           std::string what) {
  EveryUpdateFailure failure;
  failure.set_update(static_cast<int32_t>(context.total_update));
  failure.set_rank(rank);
  failure.set_check(check);
  failure.set_what(std::move(what));
  return failure;
}

std::optional<EveryUpdateFailure> JudgeAccounting(const std::vector<RankUpdateReport>& ranks,
                                                  const UpdateCheckContext& context,
                                                  UpdateCheckResult* result) {
  uint64_t sum = 0;
  int64_t rows = 0;
  for (size_t r = 0; r < ranks.size(); ++r) {
    sum += ranks[r].accounting;
    rows += ranks[r].counted_rows;
    if (ranks[r].accounting != ranks[r].expected_own) {
      result->accounting_outliers.push_back(static_cast<int>(r));
    }
  }
  const RankUpdateReport& first = ranks.front();
  for (size_t r = 1; r < ranks.size(); ++r) {
    if (ranks[r].expected_total != first.expected_total) {
      return Failure(context, static_cast<int>(r), kAccountingCheck,
                     absl::StrCat("rank ", r, " computes another one-worker accounting of update ",
                                  context.total_update, " than rank 0 (", Hex(ranks[r].expected_total),
                                  " against ", Hex(first.expected_total),
                                  "): the ranks disagree on the data, the sampler or the weighting"));
    }
  }
  if (!result->accounting_outliers.empty()) {
    const int r = result->accounting_outliers.front();
    return Failure(context, r, kAccountingCheck,
                   absl::StrCat("rank ", r, "'s slots of update ", context.total_update,
                                " are not what one worker trains at the same positions"));
  }
  if (sum != first.expected_total) {
    return Failure(context, -1, kAccountingCheck,
                   absl::StrCat("the ranks' slots of update ", context.total_update,
                                " do not cover its block as one worker's do: together they train ",
                                rows, " counting slot(s), one worker ", first.expected_rows,
                                " (a position trained twice, or never)"));
  }
  return std::nullopt;
}

std::optional<EveryUpdateFailure> JudgeReduction(const std::vector<RankUpdateReport>& ranks,
                                                 const UpdateCheckContext& context,
                                                 UpdateCheckResult* result) {
  double contributions = 0;
  for (const RankUpdateReport& r : ranks) contributions += r.contribution.dot;
  const double expected = contributions / context.reduced_divisor;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const double diff = std::fabs(ranks[r].reduced.dot - expected);
    const double bound = ReductionBound(ranks, static_cast<int>(r), context);
    if (diff <= bound) {
      if (bound > 0) result->reduction_share = std::max(result->reduction_share, diff / bound);
      continue;
    }
    return Failure(
        context, static_cast<int>(r), kReductionCheck,
        absl::StrCat(
            "rank ", r, "'s reduced gradient of update ", context.total_update,
            " projects to ", Num(ranks[r].reduced.dot), ", but the ranks' gradients as their "
            "backward passes left them sum to ", Num(contributions),
            context.reduced_divisor > 1 ? absl::StrCat(" / ", context.reduced_divisor, " = ",
                                                       Num(expected))
                                        : "",
            ": |difference| ", Num(diff), " is beyond the bound ", Num(bound), " of a sum of ",
            context.reduction_terms,
            " float terms in any order: the reducer did not sum them (it averaged, or left out or "
            "repeated a bucket), a value changed on its way, or a rank changed its gradient "
            "before the reduction (clipping its own)"));
  }
  return std::nullopt;
}

std::optional<EveryUpdateFailure> JudgeClipping(const std::vector<RankUpdateReport>& ranks,
                                                const UpdateCheckContext& context,
                                                UpdateCheckResult* result) {
  for (size_t r = 0; r < ranks.size(); ++r) {
    const RankUpdateReport& report = ranks[r];
    const double expected = report.clip_factor * report.reduced.dot;
    const double diff = std::fabs(report.stepped.dot - expected);
    const double bound = ClippingBound(report, context);
    if (diff <= bound) {
      if (bound > 0) result->clipping_share = std::max(result->clipping_share, diff / bound);
      continue;
    }
    const double applied = report.reduced.dot != 0 ? report.stepped.dot / report.reduced.dot : 0;
    return Failure(
        context, static_cast<int>(r), kClippingCheck,
        absl::StrCat("rank ", r, " stepped update ", context.total_update,
                     " with a gradient that is ", Num(applied),
                     " times its reduced gradient (by their projections), where clipping by the "
                     "reduced gradient's norm applies ",
                     Num(report.clip_factor), ": |difference| ", Num(diff),
                     " is beyond the bound ", Num(bound),
                     " of one float rounding per element (a rank clipped its own gradient, or "
                     "clipped by another norm)"));
  }
  return std::nullopt;
}

std::optional<EveryUpdateFailure> JudgeReplicas(const std::vector<RankUpdateReport>& ranks,
                                                const UpdateCheckContext& context,
                                                UpdateCheckResult* result) {
  for (size_t r = 1; r < ranks.size(); ++r) {
    if (ranks[r].replica != ranks[0].replica) {
      result->replica_outliers.push_back(static_cast<int>(r));
    }
  }
  if (result->replica_outliers.empty()) return std::nullopt;
  const int r = result->replica_outliers.front();
  return Failure(context, r, kReplicasCheck,
                 absl::StrCat("rank ", r, "'s parameters after update ", context.total_update,
                              " differ from rank 0's (checksum ", Hex(ranks[r].replica),
                              " against ", Hex(ranks[0].replica), ")"));
}

}  // namespace

std::vector<std::pair<std::string, std::string>> EveryUpdateMethods(bool clipping, bool reduces) {
  std::vector<std::pair<std::string, std::string>> methods = {
      {kAccountingCheck,
       "every rank's rows of the update (position in the update's block, receipt, valid, loss "
       "weight over the reducer's divisor, keyed-dropout key), hashed and added modulo 2^64, "
       "equal to one worker's rows of the same update (the sampler's one-worker order with the "
       "deviation the policy declares, the loss weighting on one rank in one micro-batch, the "
       "source's keys): exact"}};
  if (!reduces) return methods;
  methods.push_back(
      {kReductionCheck,
       "each rank's reduced gradient against the ranks' contributions (each rank's gradient as "
       "its backward passes left it), both projected in float64 onto a pseudo-random direction "
       "that turns every update: |reduced - sum / divisor| within (gamma(T - 1) + [divisor > 1] "
       "u) sum |c v| / divisor plus the float64 sums' own rounding, T the float terms of one "
       "reduced element, u the gradient's unit roundoff"});
  if (clipping) {
    methods.push_back(
        {kClippingCheck,
         "the gradient the optimizer stepped with against min(1, max_norm / (||g|| + 1e-6)) "
         "times the reduced gradient g (the factor computed as torch::nn::utils::clip_grad_norm_ "
         "computes it), by their projections, within one float rounding of each element"});
  }
  methods.push_back({kReplicasCheck,
                     "a 64-bit checksum of each rank's parameters after the step (and of its "
                     "optimizer's state before a save), equal on every rank: one word that "
                     "differs always changes it"});
  return methods;
}

double ReductionBound(const std::vector<RankUpdateReport>& ranks, int rank,
                      const UpdateCheckContext& context) {
  const double u = context.unit_roundoff;
  const double d = context.reduced_divisor;
  const double g = Gamma(std::max<int64_t>(0, context.reduction_terms - 1), u);
  const double reduction = g + (context.reduced_divisor > 1 ? u * (1 + g) : 0);
  double magnitudes = 0;
  double dots = 0;
  double sum = 0;
  for (const RankUpdateReport& r : ranks) {
    magnitudes += r.contribution.magnitude;
    dots += std::fabs(r.contribution.dot);
    sum += r.contribution.dot;
  }
  const double slack = Float64Slack(MostProducts(ranks));
  const double float64 =
      slack * (ranks[static_cast<size_t>(rank)].reduced.magnitude + magnitudes / d) +
      Gamma(static_cast<int64_t>(ranks.size()), kFloat64UnitRoundoff) * dots / d +
      kFloat64UnitRoundoff * std::fabs(sum / d);
  return (reduction * (1 + slack) * magnitudes / d + float64) * kBoundEvaluationSlack;
}

double ClippingBound(const RankUpdateReport& report, const UpdateCheckContext& context) {
  const double f = report.clip_factor;
  const double slack =
      Float64Slack(std::max(report.reduced.products, report.stepped.products));
  return (context.unit_roundoff * f * report.reduced.magnitude * (1 + slack) +
          slack * (report.stepped.magnitude + f * report.reduced.magnitude) +
          kFloat64UnitRoundoff * std::fabs(f * report.reduced.dot)) *
         kBoundEvaluationSlack;
}

UpdateCheckResult JudgeUpdate(const std::vector<RankUpdateReport>& ranks,
                              const UpdateCheckContext& context) {
  UpdateCheckResult result;
  bool every_reduced_not_finite = true;
  for (const RankUpdateReport& r : ranks) {
    every_reduced_not_finite &= r.reduced_not_finite;
    if (r.loss_not_finite) result.not_finite = true;
  }
  if (every_reduced_not_finite || result.not_finite) {
    result.not_finite = true;
    return result;
  }
  result.failure = JudgeAccounting(ranks, context, &result);
  if (!context.reduces) return result;
  if (!result.failure.has_value()) result.failure = JudgeReduction(ranks, context, &result);
  if (!result.failure.has_value() && context.clipping) {
    result.failure = JudgeClipping(ranks, context, &result);
  }
  if (!result.failure.has_value()) result.failure = JudgeReplicas(ranks, context, &result);
  return result;
}

}  // namespace receipt_parity

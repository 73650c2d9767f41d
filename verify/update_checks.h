// The judging half of the every-update checks (docs/parity.md, "Every
// update verified"): what each rank reports of one update, and the pure
// function that judges every rank's report the same way on every rank.
// verify/update_verifier.h measures and gathers the reports.
//
// The checks, in the order a failure is looked for:
//   accounting  the ranks' accounting (verify/update_accounting.h) adds up
//               to one worker's, exactly;
//   reduction   each rank's reduced gradient, projected onto the update's
//               direction (verify/gradient_projection.h), equals the sum of
//               the ranks' contributions' projections over the reducer's
//               divisor, within the rigorous bound of a sum of `terms`
//               float terms in any order (ReductionBound);
//   clipping    with clipping by the global norm, the gradient the
//               optimizer stepped with projects to the factor
//               min(1, max_norm / (||g|| + 1e-6)) of the reduced gradient
//               times its projection, within one float rounding of each
//               element (ClippingBound);
//   replicas    every rank's checksum of its parameters after the step
//               (and of its optimizer state before a save) is the same.
//
// Thread safety: pure functions.
#ifndef RECEIPT_PARITY_VERIFY_UPDATE_CHECKS_H_
#define RECEIPT_PARITY_VERIFY_UPDATE_CHECKS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "parity/parity_report.pb.h"
#include "verify/gradient_projection.h"

namespace receipt_parity {

inline constexpr char kAccountingCheck[] = "accounting";
inline constexpr char kReductionCheck[] = "reduction";
inline constexpr char kClippingCheck[] = "clipping";
inline constexpr char kReplicasCheck[] = "replicas";

// The checks that run (the reduction, clipping and replica checks only
// where the gradients cross ranks, clipping only with clipping by the
// global norm), each with one sentence saying how it compares.
std::vector<std::pair<std::string, std::string>> EveryUpdateMethods(bool clipping, bool reduces);

// One rank's report of one update.
struct RankUpdateReport {
  // Its accounting rows' fold, one worker's fold over the same positions,
  // and one worker's fold over the whole block.
  uint64_t accounting = 0;
  uint64_t expected_own = 0;
  uint64_t expected_total = 0;
  // Counting rows it trained, and one worker's count over the block.
  int64_t counted_rows = 0;
  int64_t expected_rows = 0;
  // Its contribution as its backward passes left it, the reduced gradient
  // it holds, and (with clipping) the gradient the optimizer stepped with.
  Projection contribution;
  Projection reduced;
  Projection stepped;
  // The float32 clip factor expected from its reduced gradient; NaN
  // without clipping.
  double clip_factor = 0;
  // Its replica's checksum after the step.
  uint64_t replica = 0;
  // Its reduced gradient holds a NaN or an infinity; its loss does.
  bool reduced_not_finite = false;
  bool loss_not_finite = false;
};

// How the reports are judged.
struct UpdateCheckContext {
  int64_t total_update = 0;
  // The reduced gradient is the contributions' sum over this.
  int reduced_divisor = 1;
  // Float additions that make one reduced element: the world size (an
  // all-reduce), or the chunks of the ordered mode.
  int64_t reduction_terms = 1;
  // The unit roundoff of the gradient's dtype.
  double unit_roundoff = kFloat32UnitRoundoff;
  bool clipping = false;
  // The gradients crossed ranks: false for one rank, whose report is
  // judged by its accounting alone.
  bool reduces = true;
};

// The rigorous bound on |reduced projection - sum of contributions' /
// divisor| for the reports' values (docs/parity.md derives it):
//   (gamma_u(T - 1) + [d > 1] u (1 + gamma_u(T - 1))) sum M_c / d      the reduction
//   + g64 (M_g + sum M_c / d) + gamma_53(W) sum |P_c| / d + u53 |S / d|  the float64 sums
// with g64 = gamma_53(n) / (1 - gamma_53(n)), n the most products of any
// projection, scaled by (1 + 2^-40) for its own evaluation.
double ReductionBound(const std::vector<RankUpdateReport>& ranks, int rank,
                      const UpdateCheckContext& context);

// The bound on |stepped projection - f x reduced projection| of one rank:
// u f M_g + g64 (M_s + f M_g) + u53 |f P_g|, scaled as above.
double ClippingBound(const RankUpdateReport& report, const UpdateCheckContext& context);

// The verdict of one update.
struct UpdateCheckResult {
  // The first failing check, in the order above; none when all pass.
  std::optional<EveryUpdateFailure> failure;
  // The largest |difference| / bound of the reduction and clipping checks
  // over the ranks (0 when not checked).
  double reduction_share = 0;
  double clipping_share = 0;
  // Every rank's reduced gradient, or some rank's loss, is not finite: a
  // loss gone to NaN, not a check's failure (the trainer stops the run as
  // for any non-finite update).
  bool not_finite = false;
  // Ranks whose replica checksum differs from rank 0's (the replica
  // failure names the first; the caller names the tensor).
  std::vector<int> replica_outliers;
  // Ranks whose accounting differs from one worker's over their own
  // positions (the caller asks them which row).
  std::vector<int> accounting_outliers;
};

// Judges every rank's report of context.total_update. REQUIRES: one report
// per rank, in rank order.
UpdateCheckResult JudgeUpdate(const std::vector<RankUpdateReport>& ranks,
                              const UpdateCheckContext& context);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_VERIFY_UPDATE_CHECKS_H_

// Each verdict's power (ParityReport.power, issue 47 item 3): the smallest
// relative change of one update it would detect, per tensor, read from the
// verdicts a parity report already holds. A mistake that makes a tensor's
// update (1 + e) times what it should be fails the verdict when e is at
// least the figure:
//   first_update  the element-wise budget: min over the gradient and the
//                 step's change of rtol + atol / max |ref| (the element
//                 where the budget is the smallest share of the value);
//   whole_run     the tensor's budget over what the update changed of it
//                 (TensorDrift.share_of_one_update), the largest over the
//                 checked updates where it was judged; bitwise mode: exact;
//   replay        half an ulp of the parameter after the step over the
//                 step's change, at the most sensitive element
//                 (UpdateReplay.power), the largest over the replayed
//                 updates;
//   every_update  the whole update at once: the accounting exact, the
//                 reduction's and the clipping's bounds relative to the
//                 terms' magnitudes ((W - 1) u, u = 2^-24).
// A tensor a verdict does not judge is listed with judged false.
//
// Thread safety: a pure function.
#ifndef RECEIPT_PARITY_PARITY_VERDICT_POWER_H_
#define RECEIPT_PARITY_PARITY_VERDICT_POWER_H_

#include <vector>

#include "parity/parity_report.pb.h"

namespace receipt_parity {

// The powers of the verdicts `report` holds (a verdict it lacks, or one
// that judged nothing, is left out).
std::vector<VerdictPower> VerdictPowers(const ParityReport& report);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_PARITY_VERDICT_POWER_H_

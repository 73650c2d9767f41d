// The benchmark's report as the text table //bench:scaling prints.
#ifndef RECEIPT_PARITY_BENCH_SCALING_TABLE_H_
#define RECEIPT_PARITY_BENCH_SCALING_TABLE_H_

#include <string>

#include "bench/scaling_report.pb.h"

namespace receipt_parity {

// Per model: one row per run (system, workers, examples/s, median update
// ms, sync ms per update, sync share, peak RSS per rank; the accumulation
// runs when measured), the ratios; then
// issue 7's targets, then issue 13's (TargetCheck.issue 13; any other
// issue is listed as issue 7's), each with MET or MISSED. Ends with a
// newline.
std::string FormatScalingTable(const ScalingReport& report);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_BENCH_SCALING_TABLE_H_

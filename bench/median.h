// The median of a list of timings (the mean of the middle two for an even
// count; 0 for none), as the benchmark's pieces all report it.
#ifndef RECEIPT_PARITY_BENCH_MEDIAN_H_
#define RECEIPT_PARITY_BENCH_MEDIAN_H_

#include <algorithm>
#include <vector>

namespace receipt_parity {

inline double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid]
                                : (values[mid - 1] + values[mid]) / 2;
}

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_BENCH_MEDIAN_H_

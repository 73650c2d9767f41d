// The training images the benchmark's baselines train on: the very receipts
// the trainer trains on (data/receipt_dataset.h), handed to
// bench/ddp_baseline.py and bench/bare_libtorch_step as two raw files, so
// every system computes on the same pixels (max pooling's cost depends on
// them: random noise is about a third slower than receipts here).
//
// Format (little-endian, no header; the sizes give the count):
//   IMAGES: N * S * S float32, example after example, row-major, in [0, 1];
//   LABELS: N int64, each in [0, kNumLabels).
// Thread safety: pure functions over files.
#ifndef RECEIPT_PARITY_BENCH_RECEIPT_POOL_H_
#define RECEIPT_PARITY_BENCH_RECEIPT_POOL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "data/receipt_dataset.h"

namespace receipt_parity {

struct ReceiptPool {
  int image_size = 0;
  std::vector<float> images;    // size() * image_size^2 values
  std::vector<int64_t> labels;  // one per example
  int64_t size() const { return static_cast<int64_t>(labels.size()); }
};

// The training examples of `split`, in order.
ReceiptPool PoolOf(const ReceiptSplit& split);

// Writes both files (atomically, io/atomic_file.h). InvalidArgument when
// the pool is empty or its images and labels disagree in count.
absl::Status WriteReceiptPool(const ReceiptPool& pool,
                              const std::string& images_path,
                              const std::string& labels_path);

// Reads both files for images of `image_size`. Errors name the file:
// NotFound when missing; InvalidArgument when a file's size is not a whole
// number of records, when the counts disagree, when the pool is empty, or
// when a label is out of range.
absl::StatusOr<ReceiptPool> ReadReceiptPool(const std::string& images_path,
                                            const std::string& labels_path,
                                            int image_size);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_BENCH_RECEIPT_POOL_H_

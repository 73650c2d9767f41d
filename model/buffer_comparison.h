// Buffers (named_buffers(): running statistics, counters) across ranks at
// the end of a run. Data parallelism reduces gradients, never buffers, so a
// model that updates buffers from each rank's own batch ends with replicas
// whose buffers differ although their parameters are equal. Each rank
// digests its buffers (DigestBuffers); rank 0 compares every rank's digests
// with its own (CompareBuffers).
//
// Thread safety: DigestBuffers reads the model; do not train it meanwhile.
#ifndef RECEIPT_PARITY_MODEL_BUFFER_COMPARISON_H_
#define RECEIPT_PARITY_MODEL_BUFFER_COMPARISON_H_

#include <vector>

#include <torch/nn/module.h>

#include "absl/status/statusor.h"
#include "model/layer_audit.pb.h"

namespace receipt_parity {

// Buffers with at most this many elements carry their values in a digest.
inline constexpr int kMaxDigestValues = 4096;

// Every buffer of `model` in named_buffers() order: name, shape, SHA-1 of
// dtype, shape and bytes, and the values when small. Errors: Internal when
// LibTorch throws (naming the buffer).
absl::StatusOr<RankBuffers> DigestBuffers(const torch::nn::Module& model, int rank);

// Every rank against ranks[0]. REQUIRES: ranks non-empty. A model with no
// buffers, one rank, and buffers of another name or shape on some rank are
// each said so in the verdict (the last counts as differing).
BufferComparison CompareBuffers(const std::vector<RankBuffers>& ranks);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_MODEL_BUFFER_COMPARISON_H_

// A 64-bit checksum of tensors' bytes, for telling whether the ranks'
// replicas (parameters, optimizer state) hold the same bits: the
// every-update replica check (verify/update_verifier.h) compares one per
// rank after every update.
//
// A tensor's bytes are read as 32-bit words w_0, w_1, ... (a last partial
// word padded with zeros) and cut into blocks of 2^16 words; block b sums
// s_b = sum_j w_j * m_j modulo 2^64, with m_j fixed pseudo-random odd
// 32-bit multipliers, and the blocks fold as H = H * P + s_b (P odd). Any
// one word that differs changes the checksum, always: its product with an
// odd multiplier is a non-zero number below 2^64 in magnitude, and
// multiplying by the odd P (or by a tensor's odd weight in a list) keeps a
// non-zero difference non-zero modulo 2^64. Several words that differ
// collide by chance only (about 2^-32 or better for unstructured changes).
//
// Thread safety: a ReplicaChecksum is immutable after construction.
#ifndef RECEIPT_PARITY_VERIFY_REPLICA_CHECKSUM_H_
#define RECEIPT_PARITY_VERIFY_REPLICA_CHECKSUM_H_

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "absl/status/statusor.h"

namespace receipt_parity {

class ReplicaChecksum {
 public:
  ReplicaChecksum();

  // One tensor's checksum (its shape and dtype left out; a CPU tensor that
  // is contiguous is read in place, any other copied to the CPU first).
  // Internal for a LibTorch error.
  absl::StatusOr<uint64_t> Of(const at::Tensor& tensor) const;

  // The checksums of `tensors`, each Of().
  absl::StatusOr<std::vector<uint64_t>> OfEach(const std::vector<at::Tensor>& tensors) const;

  // The list's checksum from its tensors' checksums: sum_t c_t * each[t]
  // modulo 2^64 with fixed odd weights c_t (a tensor's place matters).
  static uint64_t Combine(const std::vector<uint64_t>& each);

 private:
  uint64_t OfWords(const uint32_t* words, int64_t n) const;

  std::vector<uint32_t> multipliers_;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_VERIFY_REPLICA_CHECKSUM_H_

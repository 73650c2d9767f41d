// The two loops every update's checks spend their time in, over raw
// memory: a float64 projection of float32 values onto a float32 direction,
// and a 64-bit linear checksum of 32-bit words. Each has a portable body
// and, where the CPU has AVX2 and FMA (asked once, at first use), a vector
// body; both are exact where it matters:
//   - ProjectFloats: every product x_i * v_i of two float32 values is exact
//     in float64 (48 significant bits); only the float64 additions round,
//     and the vector body adds in another order than the portable one, so
//     results may differ in the last bits of a double between the two
//     bodies (never between two calls of one body);
//   - ChecksumWords: integer arithmetic modulo 2^64, the same bits from
//     either body.
//
// Thread safety: pure functions.
#ifndef RECEIPT_PARITY_VERIFY_CHECKSUM_KERNELS_H_
#define RECEIPT_PARITY_VERIFY_CHECKSUM_KERNELS_H_

#include <cstdint>

namespace receipt_parity {

// sum_i x[i] * v[i] and sum_i |x[i] * v[i]| over i < n, each product taken
// in float64, added to *dot and *magnitude.
void ProjectFloats(const float* x, const float* v, int64_t n, double* dot, double* magnitude);

// sum_i word[i] * multiplier[i] modulo 2^64 over i < n (each product
// 32 x 32 -> 64 bits).
uint64_t ChecksumWords(const uint32_t* word, const uint32_t* multiplier, int64_t n);

// Whether the vector bodies are used on this CPU.
bool ChecksumKernelsVectorized();

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_VERIFY_CHECKSUM_KERNELS_H_

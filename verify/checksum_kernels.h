// The two loops every update's checks spend their time in, over raw
// memory: a float64 projection of float32 values onto float32 direction
// values, and a 64-bit linear checksum of 32-bit words. Each has a portable
// body and an AVX2 (with FMA) body, used where the CPU has them (asked
// once, at first use); both are exact where it matters:
//   - ProjectFloats: every product x_i * v_i of two float32 values is exact
//     in float64 (48 significant bits); only the float64 additions of the
//     dot round, and the vector body adds in another order than the
//     portable one, so results may differ in the last bits of a double
//     between the bodies (never between two calls of one body). The magnitude
//     is an upper bound, rigorous: the vector body sums it in float32 and
//     widens it by its own rounding bound. Both loops are bound by reading
//     their memory (about 25 GB/s a core here: 40 us a MiB);
//   - ChecksumWords: integer arithmetic modulo 2^64, the same bits from
//     either body.
//
// Thread safety: pure functions.
#ifndef RECEIPT_PARITY_VERIFY_CHECKSUM_KERNELS_H_
#define RECEIPT_PARITY_VERIFY_CHECKSUM_KERNELS_H_

#include <cstdint>

namespace receipt_parity {

// sum_i x[i] * v[i] over i < n, each product taken in float64, added to
// *dot; and an upper bound on sum_i |x[i] * v[i]| (within about n 2^-24 of
// it), added to *magnitude.
void ProjectFloats(const float* x, const float* v, int64_t n, double* dot, double* magnitude);

// sum_i word[i] * multiplier[i] modulo 2^64 over i < n (each product
// 32 x 32 -> 64 bits).
uint64_t ChecksumWords(const uint32_t* word, const uint32_t* multiplier, int64_t n);

// The bodies this CPU runs: "avx2" or "portable".
const char* ChecksumKernelsBody();

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_VERIFY_CHECKSUM_KERNELS_H_

#include "verify/checksum_kernels.h"

#include <cmath>
#include <cstring>

#include <immintrin.h>

namespace receipt_parity {
namespace {

using Float4 = float __attribute__((vector_size(16)));
using Double4 = double __attribute__((vector_size(32)));
using Word4 = uint64_t __attribute__((vector_size(32)));

void ProjectPortable(const float* x, const float* v, int64_t n, double* dot, double* magnitude) {
  double d = 0;
  double m = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double p = static_cast<double>(x[i]) * static_cast<double>(v[i]);
    d += p;
    m += std::fabs(p);
  }
  *dot += d;
  *magnitude += m;
}

uint64_t ChecksumPortable(const uint32_t* word, const uint32_t* multiplier, int64_t n) {
  uint64_t sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += uint64_t{word[i]} * multiplier[i];
  return sum;
}

// Four lanes of float64 each; the lanes are added at the end.
__attribute__((target("avx2,fma"))) void ProjectAvx2(const float* x, const float* v, int64_t n,
                                                     double* dot, double* magnitude) {
  Double4 d0 = {0, 0, 0, 0};
  Double4 d1 = d0;
  Double4 m0 = d0;
  Double4 m1 = d0;
  const Word4 sign_off = {~(uint64_t{1} << 63), ~(uint64_t{1} << 63), ~(uint64_t{1} << 63),
                          ~(uint64_t{1} << 63)};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    Float4 xa, xb, va, vb;
    std::memcpy(&xa, x + i, sizeof(xa));
    std::memcpy(&xb, x + i + 4, sizeof(xb));
    std::memcpy(&va, v + i, sizeof(va));
    std::memcpy(&vb, v + i + 4, sizeof(vb));
    const Double4 pa = __builtin_convertvector(xa, Double4) * __builtin_convertvector(va, Double4);
    const Double4 pb = __builtin_convertvector(xb, Double4) * __builtin_convertvector(vb, Double4);
    d0 += pa;
    d1 += pb;
    m0 += reinterpret_cast<Double4>(reinterpret_cast<Word4>(pa) & sign_off);
    m1 += reinterpret_cast<Double4>(reinterpret_cast<Word4>(pb) & sign_off);
  }
  const Double4 d = d0 + d1;
  const Double4 m = m0 + m1;
  double tail_dot = (d[0] + d[1]) + (d[2] + d[3]);
  double tail_magnitude = (m[0] + m[1]) + (m[2] + m[3]);
  ProjectPortable(x + i, v + i, n - i, &tail_dot, &tail_magnitude);
  *dot += tail_dot;
  *magnitude += tail_magnitude;
}

// 32 x 32 -> 64-bit products of the even and the odd words of each 64-bit
// lane (vpmuludq), added in four 64-bit lanes.
__attribute__((target("avx2"))) uint64_t ChecksumAvx2(const uint32_t* word,
                                                     const uint32_t* multiplier, int64_t n) {
  __m256i even = _mm256_setzero_si256();
  __m256i odd = _mm256_setzero_si256();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(word + i));
    const __m256i m = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(multiplier + i));
    even = _mm256_add_epi64(even, _mm256_mul_epu32(w, m));
    odd = _mm256_add_epi64(odd, _mm256_mul_epu32(_mm256_srli_epi64(w, 32),
                                                 _mm256_srli_epi64(m, 32)));
  }
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), _mm256_add_epi64(even, odd));
  return lanes[0] + lanes[1] + lanes[2] + lanes[3] +
         ChecksumPortable(word + i, multiplier + i, n - i);
}

bool HasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

}  // namespace

void ProjectFloats(const float* x, const float* v, int64_t n, double* dot, double* magnitude) {
  if (HasAvx2()) {
    ProjectAvx2(x, v, n, dot, magnitude);
  } else {
    ProjectPortable(x, v, n, dot, magnitude);
  }
}

uint64_t ChecksumWords(const uint32_t* word, const uint32_t* multiplier, int64_t n) {
  return HasAvx2() ? ChecksumAvx2(word, multiplier, n) : ChecksumPortable(word, multiplier, n);
}

bool ChecksumKernelsVectorized() { return HasAvx2(); }

}  // namespace receipt_parity

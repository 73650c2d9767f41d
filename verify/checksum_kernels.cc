#include "verify/checksum_kernels.h"

#include <cmath>

#include <immintrin.h>

namespace receipt_parity {
namespace {

// exact <= computed / (1 - gamma(n)) for a sum of n terms of one sign
// added in any order with unit roundoff u (gamma(n) = n u / (1 - n u)).
double WidenedUpperBound(double computed, int64_t n, double u) {
  if (n <= 0) return computed;
  const double nu = static_cast<double>(n) * u;
  if (nu >= 0.5) return INFINITY;
  return computed / (1 - nu / (1 - nu));
}

void ProjectPortable(const float* x, const float* v, int64_t n, double* dot, double* magnitude) {
  double d = 0;
  double m = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double p = static_cast<double>(x[i]) * static_cast<double>(v[i]);
    d += p;
    m += std::fabs(p);
  }
  *dot += d;
  *magnitude += WidenedUpperBound(m, n, 0x1p-53);
}

// The dot in float64 (the float32 values widened, then multiplied exactly
// and added by FMA, in two accumulators of four lanes), the magnitude in
// float32 (eight lanes), widened afterwards by its rounding bound: one
// float32 product and n float32 additions.
__attribute__((target("avx2,fma"))) void ProjectAvx2(const float* x, const float* v, int64_t n,
                                                     double* dot, double* magnitude) {
  __m256d d0 = _mm256_setzero_pd();
  __m256d d1 = _mm256_setzero_pd();
  __m256 m0 = _mm256_setzero_ps();
  const __m256 sign_off = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x8 = _mm256_loadu_ps(x + i);
    const __m256 v8 = _mm256_loadu_ps(v + i);
    m0 = _mm256_add_ps(m0, _mm256_and_ps(_mm256_mul_ps(x8, v8), sign_off));
    d0 = _mm256_fmadd_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(x8)),
                         _mm256_cvtps_pd(_mm256_castps256_ps128(v8)), d0);
    d1 = _mm256_fmadd_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(x8, 1)),
                         _mm256_cvtps_pd(_mm256_extractf128_ps(v8, 1)), d1);
  }
  alignas(32) double dots[4];
  alignas(32) float magnitudes[8];
  _mm256_store_pd(dots, _mm256_add_pd(d0, d1));
  _mm256_store_ps(magnitudes, m0);
  double tail_dot = (dots[0] + dots[1]) + (dots[2] + dots[3]);
  double m32 = 0;
  for (float m : magnitudes) m32 += m;
  double tail_magnitude = 0;
  ProjectPortable(x + i, v + i, n - i, &tail_dot, &tail_magnitude);
  *dot += tail_dot;
  if (!std::isfinite(m32)) {
    // Past float32's range (a huge or non-finite element): the magnitude
    // in float64, as the portable body takes it.
    double unused = 0;
    ProjectPortable(x, v, n, &unused, magnitude);
    return;
  }
  // The float32 sum of i products, each rounded once: i + 1 roundings of
  // one sign in any order (its float64 sum of the lanes falls under the
  // same bound).
  *magnitude += WidenedUpperBound(m32, i + 1, 0x1p-24) + tail_magnitude;
}

uint64_t ChecksumPortable(const uint32_t* word, const uint32_t* multiplier, int64_t n) {
  uint64_t sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += uint64_t{word[i]} * multiplier[i];
  return sum;
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

// The body this CPU runs. Both loops are bound by reading their memory,
// not by their width: AVX-512 bodies measured no faster here.
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

const char* ChecksumKernelsBody() { return HasAvx2() ? "avx2" : "portable"; }

}  // namespace receipt_parity

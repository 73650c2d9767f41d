// Portable deterministic random numbers for the receipt data.
//
// std::*_distribution differs between standard libraries, so everything here
// is arithmetic on the raw 64-bit output of std::mt19937_64 (whose sequence
// the C++ standard fixes) and on splitmix64 / FNV-1a hashes. The same seed
// gives the same numbers with any conforming compiler and library.
// Thread safety: a RandomStream is not thread-safe; the free functions are.
#ifndef RECEIPT_PARITY_DATA_RANDOM_STREAM_H_
#define RECEIPT_PARITY_DATA_RANDOM_STREAM_H_

#include <cstdint>
#include <random>

#include "absl/strings/string_view.h"

namespace receipt_parity {

// splitmix64's finaliser of a + golden * (b + 1): combines a seed with a
// value into a well-mixed 64-bit seed. Not commutative.
uint64_t MixSeed(uint64_t a, uint64_t b);

// FNV-1a 64 of the bytes of `text`, finalised with MixSeed.
uint64_t HashString(absl::string_view text);

class RandomStream {
 public:
  explicit RandomStream(uint64_t seed) : engine_(seed) {}

  uint64_t Bits() { return engine_(); }
  // Uniform in [0, 1), 53 random bits.
  double Uniform();
  // Uniform in [lo, hi).
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }
  // Uniform integer in [lo, hi], unbiased (rejection). REQUIRES: lo <= hi.
  int UniformInt(int lo, int hi);
  // Approximately normal, mean 0 and standard deviation 1 (Irwin-Hall sum of
  // four uniforms, rescaled): bounded by +-3.47, no transcendental functions.
  double Gaussianish();

 private:
  std::mt19937_64 engine_;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_DATA_RANDOM_STREAM_H_

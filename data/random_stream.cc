#include "data/random_stream.h"

#include "logging/glog.h"

namespace receipt_parity {

uint64_t MixSeed(uint64_t a, uint64_t b) {
  uint64_t z = a + 0x9E3779B97F4A7C15ULL * (b + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

uint64_t HashString(absl::string_view text) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001B3ULL;
  }
  return MixSeed(h, text.size());
}

double RandomStream::Uniform() {
  return static_cast<double>(Bits() >> 11) * (1.0 / 9007199254740992.0);
}

int RandomStream::UniformInt(int lo, int hi) {
  CHECK_LE(lo, hi);
  const uint64_t span =
      static_cast<uint64_t>(static_cast<int64_t>(hi) - lo) + 1;
  // Largest multiple of span that fits: reject the tail to stay unbiased.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % span;
  uint64_t x = Bits();
  while (x >= limit) x = Bits();
  return static_cast<int>(lo + static_cast<int64_t>(x % span));
}

double RandomStream::Gaussianish() {
  // The sum of 4 uniforms has mean 2 and variance 4/12.
  const double sum = Uniform() + Uniform() + Uniform() + Uniform();
  return (sum - 2.0) * 1.7320508075688772;
}

}  // namespace receipt_parity

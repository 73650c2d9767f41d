#include "data/augmentation.h"

#include <algorithm>

#include "data/random_stream.h"
#include "logging/glog.h"

namespace receipt_parity {

int MaxTranslation(int image_size) { return std::max(1, image_size / 32); }

GrayPixels AugmentView(const GrayPixels& capture, int image_size,
                       uint64_t augmentation_seed, absl::string_view receipt_id,
                       int view) {
  const int size = image_size;
  CHECK_EQ(capture.size(), static_cast<size_t>(size) * size);
  CHECK_GE(view, 0);
  if (view == 0) return capture;

  RandomStream rng(
      MixSeed(MixSeed(augmentation_seed, HashString(receipt_id)), view));
  const int shift = MaxTranslation(size);
  const int dx = rng.UniformInt(-shift, shift);
  const int dy = rng.UniformInt(-shift, shift);
  const double contrast = rng.Uniform(0.9, 1.1);
  const double brightness = rng.Uniform(-0.05, 0.05);

  double mean = 0.0;
  for (float p : capture) mean += p;
  mean /= static_cast<double>(capture.size());

  GrayPixels out(capture.size());
  for (int y = 0; y < size; ++y) {
    const int sy = std::clamp(y - dy, 0, size - 1);
    for (int x = 0; x < size; ++x) {
      const int sx = std::clamp(x - dx, 0, size - 1);
      const double p = capture[sy * size + sx];
      const double v =
          mean + contrast * (p - mean) + brightness + 0.015 * rng.Gaussianish();
      out[y * size + x] = static_cast<float>(std::clamp(v, 0.0, 1.0));
    }
  }
  return out;
}

}  // namespace receipt_parity

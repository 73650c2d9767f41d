#include "data/synthetic_receipts.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "data/label_map.h"
#include "data/random_stream.h"
#include "logging/glog.h"

namespace receipt_parity {
namespace {

// Salts keep the streams of one seed apart.
constexpr uint64_t kPhaseSalt = 0x7261726570686173ULL;
constexpr uint64_t kClassSalt = 0x636c617373657321ULL;
constexpr uint64_t kRenderSalt = 0x72656e6465727321ULL;

int RoundToInt(double x) { return static_cast<int>(std::floor(x + 0.5)); }

// A canvas of `size` x `size` pixels.
class Canvas {
 public:
  explicit Canvas(int size) : size_(size), pixels_(size * size, 0.0f) {}

  // Fills rows [y0, y0 + h) and columns [x0, x0 + w), clipped to the image.
  void FillRect(int x0, int y0, int w, int h, float value) {
    const int x_begin = std::max(0, x0), x_end = std::min(size_, x0 + w);
    const int y_begin = std::max(0, y0), y_end = std::min(size_, y0 + h);
    for (int y = y_begin; y < y_end; ++y) {
      for (int x = x_begin; x < x_end; ++x) pixels_[y * size_ + x] = value;
    }
  }

  float& at(int x, int y) { return pixels_[y * size_ + x]; }
  GrayPixels& pixels() { return pixels_; }

 private:
  int size_;
  GrayPixels pixels_;
};

// One pass of a box blur of `radius` along rows, then along columns; edges
// replicate.
void BoxBlur(int size, int radius, GrayPixels& pixels) {
  GrayPixels tmp(pixels.size());
  const float norm = 1.0f / static_cast<float>(2 * radius + 1);
  for (int pass = 0; pass < 2; ++pass) {
    const bool rows = pass == 0;
    for (int y = 0; y < size; ++y) {
      for (int x = 0; x < size; ++x) {
        float sum = 0.0f;
        for (int k = -radius; k <= radius; ++k) {
          const int xx = rows ? std::clamp(x + k, 0, size - 1) : x;
          const int yy = rows ? y : std::clamp(y + k, 0, size - 1);
          sum += pixels[yy * size + xx];
        }
        tmp[y * size + x] = sum * norm;
      }
    }
    pixels.swap(tmp);
  }
}

// Header, text lines and total line, inside the paper at (x0, y0) of
// pw x ph pixels.
void DrawText(RandomStream& rng, int unit, int x0, int y0, int pw, int ph,
              float ink, Canvas& canvas) {
  const int pad = std::max(unit, RoundToInt(pw * 0.1));
  const int inner = pw - 2 * pad;
  if (inner < 2) return;
  // Header block: centred, two units tall.
  const int header_w = std::max(1, RoundToInt(inner * rng.Uniform(0.5, 0.8)));
  canvas.FillRect(x0 + pad + (inner - header_w) / 2, y0 + pad, header_w,
                  2 * unit, ink);
  // Item lines every two units, leaving room for the total at the bottom.
  const int total_y = y0 + ph - pad - 2 * unit;
  for (int y = y0 + pad + 4 * unit; y + 3 * unit <= total_y; y += 2 * unit) {
    const bool priced = rng.Uniform() < 0.5;
    const int price_w = priced ? rng.UniformInt(2, 4) * unit : 0;
    const int room = inner - (priced ? price_w + 2 * unit : 0);
    const int len = std::max(unit, RoundToInt(room * rng.Uniform(0.3, 1.0)));
    canvas.FillRect(x0 + pad, y, len, unit, ink);
    if (priced)
      canvas.FillRect(x0 + pad + inner - price_w, y, price_w, unit, ink);
  }
  // Total: a short label on the left, a bold amount on the right.
  const int label_w =
      std::max(unit, RoundToInt(inner * rng.Uniform(0.2, 0.35)));
  const int amount_w =
      std::max(unit, RoundToInt(inner * rng.Uniform(0.3, 0.5)));
  canvas.FillRect(x0 + pad, total_y, label_w, 2 * unit, ink);
  canvas.FillRect(x0 + pad + inner - amount_w, total_y, amount_w, 2 * unit,
                  ink);
}

}  // namespace

std::string SyntheticReceiptId(int index) {
  return absl::StrFormat("rcpt-%06d", index);
}

int SyntheticMargin(int image_size) { return std::max(2, image_size / 16); }

int SyntheticLabel(uint64_t seed, double rare_fraction, int index) {
  CHECK(rare_fraction > 0.0 && rare_fraction < 0.5) << rare_fraction;
  const double phase = RandomStream(MixSeed(seed, kPhaseSalt)).Uniform();
  if (std::floor((index + 1) * rare_fraction + phase) >
      std::floor(index * rare_fraction + phase)) {
    return kLabelCropped;
  }
  constexpr int kCommon[] = {kLabelOk, kLabelBlurred, kLabelFaded};
  return kCommon[MixSeed(MixSeed(seed, kClassSalt), index) % 3];
}

GrayPixels RenderSyntheticReceipt(uint64_t seed, int index, int label,
                                  int image_size) {
  CHECK(image_size >= kMinImageSize && image_size <= kMaxImageSize);
  CHECK(label >= 0 && label < kNumLabels) << label;
  const int size = image_size;
  const int unit = std::max(1, size / 32);
  const int margin = SyntheticMargin(size);
  RandomStream rng(MixSeed(MixSeed(seed, kRenderSalt), index));

  // Background: dark with a gentle gradient.
  Canvas canvas(size);
  const double bg = rng.Uniform(0.08, 0.3);
  const double gx = rng.Uniform(-0.06, 0.06), gy = rng.Uniform(-0.06, 0.06);
  for (int y = 0; y < size; ++y) {
    for (int x = 0; x < size; ++x) {
      canvas.at(x, y) = static_cast<float>(bg + gx * (x / double(size) - 0.5) +
                                           gy * (y / double(size) - 0.5));
    }
  }

  // Paper: tall, fully inside unless cropped.
  const int max_w = size - 2 * margin, max_h = size - 2 * margin;
  const int pw = std::min(max_w, RoundToInt(size * rng.Uniform(0.42, 0.7)));
  const int ph = std::min(max_h, RoundToInt(size * rng.Uniform(0.62, 0.84)));
  int x0 = rng.UniformInt(margin, size - margin - pw);
  int y0 = rng.UniformInt(margin, size - margin - ph);
  if (label == kLabelCropped) {
    const double overhang = rng.Uniform(0.2, 0.45);
    switch (rng.UniformInt(0, 3)) {
      case 0:
        x0 = -RoundToInt(pw * overhang);
        break;
      case 1:
        x0 = size - pw + RoundToInt(pw * overhang);
        break;
      case 2:
        y0 = -RoundToInt(ph * overhang);
        break;
      default:
        y0 = size - ph + RoundToInt(ph * overhang);
        break;
    }
  }
  const float paper = static_cast<float>(rng.Uniform(0.82, 0.96));
  const float ink = static_cast<float>(rng.Uniform(0.05, 0.25));
  canvas.FillRect(x0, y0, pw, ph, paper);
  DrawText(rng, unit, x0, y0, pw, ph, ink, canvas);

  GrayPixels& pixels = canvas.pixels();
  if (label == kLabelBlurred) {
    const int radius =
        std::max(1, RoundToInt(size * rng.Uniform(1.6, 2.4) / 32.0));
    BoxBlur(size, radius, pixels);
    BoxBlur(size, radius, pixels);
  } else if (label == kLabelFaded) {
    const double contrast = rng.Uniform(0.22, 0.38);
    const double level = rng.Uniform(0.6, 0.85);
    for (float& p : pixels) {
      p = static_cast<float>((1.0 - contrast) * level + contrast * p);
    }
  }
  // Sensor noise, then clamp into [0, 1].
  for (float& p : pixels) {
    p = std::clamp(static_cast<float>(p + 0.01 * rng.Gaussianish()), 0.0f,
                   1.0f);
  }
  return std::move(pixels);
}

absl::Status ValidateSyntheticReceipts(const SyntheticReceipts& config) {
  const int n = config.num_identities();
  if (n < 1 || n > kMaxSyntheticIdentities) {
    return absl::InvalidArgumentError(
        absl::StrCat("data.synthetic.num_identities: must be in [1, ",
                     kMaxSyntheticIdentities, "], got ", n));
  }
  const double rare = config.rare_class_fraction();
  if (rare != 0.0 && !(rare > 0.0 && rare < 0.5)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data.synthetic.rare_class_fraction: must be in (0, 0.5) (0 means ",
        kDefaultRareClassFraction, "), got ", rare));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ReceiptIdentity>> GenerateSyntheticReceipts(
    const SyntheticReceipts& config, int image_size) {
  CHECK(image_size >= kMinImageSize && image_size <= kMaxImageSize);
  absl::StatusOr<std::vector<ReceiptIdentity>> identities = SyntheticReceiptIndex(config);
  if (!identities.ok()) return identities.status();
  for (int i = 0; i < config.num_identities(); ++i) {
    ReceiptIdentity& identity = (*identities)[i];
    identity.captures.push_back(
        RenderSyntheticReceipt(config.seed(), i, identity.label, image_size));
  }
  return identities;
}

absl::StatusOr<std::vector<ReceiptIdentity>> SyntheticReceiptIndex(
    const SyntheticReceipts& config) {
  if (absl::Status valid = ValidateSyntheticReceipts(config); !valid.ok()) {
    return valid;
  }
  const double rare = config.rare_class_fraction() == 0.0
                          ? kDefaultRareClassFraction
                          : config.rare_class_fraction();
  std::vector<ReceiptIdentity> identities(config.num_identities());
  for (int i = 0; i < config.num_identities(); ++i) {
    identities[i].receipt_id = SyntheticReceiptId(i);
    identities[i].label = SyntheticLabel(config.seed(), rare, i);
  }
  return identities;
}

}  // namespace receipt_parity

#include "verify/gradient_projection.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "collectives/collective_error.h"
#include "data/random_stream.h"
#include "verify/checksum_kernels.h"

namespace receipt_parity {

bool Projection::finite() const { return std::isfinite(dot) && std::isfinite(magnitude); }

double Gamma(int64_t n, double unit_roundoff) {
  const double nu = static_cast<double>(n) * unit_roundoff;
  if (nu >= 1) return std::numeric_limits<double>::infinity();
  return nu / (1 - nu);
}

double UnitRoundoff(at::ScalarType dtype) {
  switch (dtype) {
    case at::kDouble:
      return kFloat64UnitRoundoff;
    case at::kBFloat16:
      return 0x1p-8;
    case at::kHalf:
      return 0x1p-11;
    default:
      return kFloat32UnitRoundoff;
  }
}

namespace {

constexpr int64_t kTableBits = 16;
constexpr int64_t kTableSize = int64_t{1} << kTableBits;
constexpr int64_t kTableMask = kTableSize - 1;

}  // namespace

ProjectionDirection::ProjectionDirection(int64_t elements, uint64_t seed)
    : elements_(elements), seed_(seed) {
  table_.resize(kTableSize);
  uint64_t state = MixSeed(seed, 0x70726f6a);  // "proj"
  for (float& value : table_) {
    state = MixSeed(state, 1);
    // 24 random bits: a float32 in [-1, 1), exactly representable.
    value = static_cast<float>(static_cast<int32_t>(state >> 40) - (1 << 23)) * 0x1p-23f;
  }
}

int64_t ProjectionDirection::Shift(int64_t update, int64_t block) const {
  return static_cast<int64_t>(
      MixSeed(MixSeed(seed_, static_cast<uint64_t>(update)), static_cast<uint64_t>(block)) &
      static_cast<uint64_t>(kTableMask));
}

float ProjectionDirection::At(int64_t i, int64_t update) const {
  return table_[static_cast<size_t>(((i & kTableMask) + Shift(update, i >> kTableBits)) &
                                    kTableMask)];
}

absl::StatusOr<Projection> ProjectionDirection::Project(const at::Tensor& x, int64_t offset,
                                                        int64_t update) const {
  const int64_t n = x.numel();
  if (offset < 0 || offset + n > elements()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "projecting ", n, " gradient elements at ", offset, " of a layout of ", elements()));
  }
  Projection out;
  out.products = n;
  if (n == 0) return out;
  try {
    if (x.device().is_cpu() && x.scalar_type() == at::kFloat) {
      const at::Tensor flat = x.contiguous();
      const float* data = flat.data_ptr<float>();
      // Runs of the layout that meet one contiguous run of the table.
      for (int64_t done = 0; done < n;) {
        const int64_t i = offset + done;
        const int64_t in_block = i & kTableMask;
        const int64_t at = (in_block + Shift(update, i >> kTableBits)) & kTableMask;
        const int64_t run = std::min({n - done, kTableSize - in_block, kTableSize - at});
        ProjectFloats(data + done, table_.data() + at, run, &out.dot, &out.magnitude);
        done += run;
      }
      return out;
    }
    // Any other dtype or device: float64 on the CPU, each product rounding.
    const at::Tensor flat = x.detach().to(at::kCPU, at::kDouble).contiguous().reshape(-1);
    const double* data = flat.data_ptr<double>();
    double magnitude = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double p = data[i] * static_cast<double>(At(offset + i, update));
      out.dot += p;
      magnitude += std::fabs(p);
    }
    out.magnitude = magnitude / (1 - Gamma(2 * n + 1, kFloat64UnitRoundoff));
    out.products = 2 * n;
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "projecting a gradient: LibTorch");
  }
  return out;
}

}  // namespace receipt_parity

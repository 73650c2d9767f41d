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

ProjectionDirection::ProjectionDirection(int64_t elements, uint64_t seed) : seed_(seed) {
  v_.resize(static_cast<size_t>(elements));
  uint64_t state = MixSeed(seed, 0x70726f6a);  // "proj"
  for (float& value : v_) {
    state = MixSeed(state, 1);
    // 24 random bits: a float32 in [-1, 1), exactly representable.
    value = static_cast<float>(static_cast<int32_t>(state >> 40) - (1 << 23)) * 0x1p-23f;
  }
}

int64_t ProjectionDirection::Shift(int64_t update) const {
  if (v_.empty()) return 0;
  return static_cast<int64_t>(MixSeed(seed_, static_cast<uint64_t>(update)) %
                              static_cast<uint64_t>(v_.size()));
}

float ProjectionDirection::At(int64_t i, int64_t update) const {
  return v_[static_cast<size_t>((i + Shift(update)) % elements())];
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
  const int64_t start = (offset + Shift(update)) % elements();
  const int64_t first = std::min(n, elements() - start);
  try {
    if (x.device().is_cpu() && x.scalar_type() == at::kFloat) {
      const at::Tensor flat = x.contiguous();
      const float* data = flat.data_ptr<float>();
      ProjectFloats(data, v_.data() + start, first, &out.dot, &out.magnitude);
      ProjectFloats(data + first, v_.data(), n - first, &out.dot, &out.magnitude);
      return out;
    }
    // Any other dtype or device: float64 on the CPU, each product rounding.
    const at::Tensor flat = x.detach().to(at::kCPU, at::kDouble).contiguous().reshape(-1);
    const double* data = flat.data_ptr<double>();
    for (int64_t i = 0; i < n; ++i) {
      const double p = data[i] * static_cast<double>(v_[(start + i) % elements()]);
      out.dot += p;
      out.magnitude += std::fabs(p);
    }
    out.products = 2 * n;
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "projecting a gradient: LibTorch");
  }
  return out;
}

}  // namespace receipt_parity

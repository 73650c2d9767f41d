// A gradient's projection onto a fixed pseudo-random direction, in float64:
// what the every-update reduction and clipping checks compare instead of
// the gradients themselves (verify/update_verifier.h, docs/parity.md).
//
// The direction v has one float32 value in [-1, 1) per element of a
// layout of `elements` values (the gradient's buckets laid end to end, or
// the parameters in order), read from a table of 2^16 values drawn once
// from a seed: at update u, element i of the layout (i = 2^16 b + j) meets
// table[(j + shift(u, b)) mod 2^16], the shift drawn anew for every update
// and every block b of 2^16 elements. The direction turns with every update,
// so an element that one update sees weakly the next sees otherwise, and
// the table stays in the cache whatever the model's size (the projection's
// loop is bound by reading the gradient, verify/checksum_kernels.h).
//
// A Projection holds sum_i x_i * v_i ("dot") and an upper bound on
// sum_i |x_i * v_i| ("magnitude", within about n 2^-24 of it). For float32
// x every product is exact in float64; the float64 additions of the dot
// round, by at most gamma(n) * magnitude (Gamma below).
//
// Thread safety: a ProjectionDirection is immutable after construction.
#ifndef RECEIPT_PARITY_VERIFY_GRADIENT_PROJECTION_H_
#define RECEIPT_PARITY_VERIFY_GRADIENT_PROJECTION_H_

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "absl/status/statusor.h"

namespace receipt_parity {

struct Projection {
  double dot = 0;
  double magnitude = 0;
  // Products added (float64 roundings: one per product for a dtype other
  // than float32, one per addition).
  int64_t products = 0;

  void Add(const Projection& other) {
    dot += other.dot;
    magnitude += other.magnitude;
    products += other.products;
  }
  bool finite() const;
};

// gamma(n) = n u / (1 - n u): the classic bound on the relative error of
// n floating-point operations in any order (Higham, Accuracy and Stability
// of Numerical Algorithms, 3.1), for unit roundoff u. +infinity when
// n u >= 1.
double Gamma(int64_t n, double unit_roundoff);

// Unit roundoffs.
inline constexpr double kFloat32UnitRoundoff = 0x1p-24;
inline constexpr double kFloat64UnitRoundoff = 0x1p-53;

// The unit roundoff of a floating-point dtype (float32 2^-24, float64
// 2^-53, bfloat16 2^-8, float16 2^-11). REQUIRES: a floating dtype.
double UnitRoundoff(at::ScalarType dtype);

class ProjectionDirection {
 public:
  // REQUIRES: elements >= 0.
  ProjectionDirection(int64_t elements, uint64_t seed);

  int64_t elements() const { return elements_; }

  // The projection of `x` (any shape, read as its elements in order)
  // placed at [offset, offset + x.numel()) of the layout, at update
  // `update`. A float32 CPU tensor is read in place; any other is copied to
  // the CPU as float64 (each product then rounds once too: `products`
  // counts it). InvalidArgument when x does not fit the layout; Internal
  // for a LibTorch error.
  absl::StatusOr<Projection> Project(const at::Tensor& x, int64_t offset, int64_t update) const;

  // The direction's value met by layout element i at update u.
  float At(int64_t i, int64_t update) const;

 private:
  // Where block `block` of the layout starts in the table at `update`.
  int64_t Shift(int64_t update, int64_t block) const;

  int64_t elements_ = 0;
  std::vector<float> table_;
  uint64_t seed_ = 0;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_VERIFY_GRADIENT_PROJECTION_H_

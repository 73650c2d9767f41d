// Comparing named tensor lists (gradients, parameters) with a reference:
// torch.allclose semantics, maximum absolute and relative differences, and
// bitwise equality.
//
// Thread safety: pure functions; safe to call concurrently on distinct or
// read-only tensors.
#ifndef RECEIPT_PARITY_PARITY_TENSOR_COMPARISON_H_
#define RECEIPT_PARITY_PARITY_TENSOR_COMPARISON_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "absl/status/statusor.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "parity/parity_report.pb.h"

namespace receipt_parity {

// The same alias as artifacts/first_step_record.h.
using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// Whether every element of `t` is finite: a NaN or an infinity makes its
// double-precision sum non-finite (a sum of finite floats cannot overflow a
// double). One small op and one read of the device. Throws what LibTorch
// throws.
bool AllFinite(const at::Tensor& t);

struct TensorComparison {
  std::string name;
  // The atol this tensor was judged with, when the caller gave one per
  // tensor (nullopt: the list's one atol).
  std::optional<double> atol;
  // Likewise its rtol (nullopt: the list's one rtol).
  std::optional<double> rtol;
  std::vector<int64_t> shape;
  double max_abs_diff = 0;
  // Over elements with a non-zero reference only.
  double max_rel_diff = 0;
  double max_abs_reference = 0;
  // Every element |a - ref| <= atol + rtol * |ref| (computed in double;
  // NaN is never within tolerance).
  bool within_tolerance = true;
  // Same dtype and the same bytes.
  bool bitwise_equal = true;
};

struct TensorListComparison {
  std::vector<TensorComparison> tensors;
  // Maxima over `tensors`; the flags hold for all of them (true for an
  // empty list).
  double max_abs_diff = 0;
  double max_rel_diff = 0;
  bool within_tolerance = true;
  bool bitwise_equal = true;
};

// The rule CompareTensors passes by, as parity.json states it.
inline constexpr char kParityPassRule[] =
    "element-wise |run - ref| <= atol + rtol * |ref| for every gradient and "
    "every parameter after the step (torch.allclose); max_rel_diff is "
    "max |run - ref| / |ref| and may exceed rtol where atol dominates "
    "(|ref| near 0)";

// Compares actual[i] with reference[i] for every i. InvalidArgument
// (naming the tensor) if the lists differ in length, names or shapes, or
// rtol/atol are negative or not finite. Tensors may be of any floating
// dtype and device; they are compared in double on the CPU. LibTorch errors
// -> Internal.
absl::StatusOr<TensorListComparison> CompareTensors(
    const NamedTensors& actual, const NamedTensors& reference, double rtol,
    double atol);

// The same with tensor i judged by atols[i] (a derived budget per tensor,
// verdicts/bf16_tolerance.h); each TensorComparison records its atol.
// InvalidArgument also when atols.size() != actual.size().
absl::StatusOr<TensorListComparison> CompareTensors(
    const NamedTensors& actual, const NamedTensors& reference, double rtol,
    const std::vector<double>& atols);

// The same with tensor i judged by rtols[i] and atols[i]; each
// TensorComparison records both. InvalidArgument also when either list's
// size is not actual.size().
absl::StatusOr<TensorListComparison> CompareTensors(const NamedTensors& actual,
                                                    const NamedTensors& reference,
                                                    const std::vector<double>& rtols,
                                                    const std::vector<double>& atols);

// Appends one TensorParity per compared tensor to `out` (with its rtol and
// atol when it had its own).
void AppendTensorParity(const TensorListComparison& comparison,
                        google::protobuf::RepeatedPtrField<TensorParity>* out);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_PARITY_TENSOR_COMPARISON_H_

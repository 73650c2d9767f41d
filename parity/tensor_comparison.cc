#include "parity/tensor_comparison.h"

#include <cmath>
#include <cstring>

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace receipt_parity {
namespace {

bool SameBytes(const at::Tensor& a, const at::Tensor& b) {
  if (a.scalar_type() != b.scalar_type()) return false;
  const at::Tensor ca = a.to(at::kCPU).contiguous();
  const at::Tensor cb = b.to(at::kCPU).contiguous();
  return std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0;
}

TensorComparison CompareOne(const std::string& name, const at::Tensor& actual,
                            const at::Tensor& reference, double rtol,
                            double atol) {
  TensorComparison result;
  result.name = name;
  result.shape = actual.sizes().vec();
  result.bitwise_equal = SameBytes(actual, reference);
  if (actual.numel() == 0) return result;
  const at::Tensor a = actual.detach().to(at::kCPU, at::kDouble);
  const at::Tensor ref = reference.detach().to(at::kCPU, at::kDouble);
  const at::Tensor diff = (a - ref).abs();
  const at::Tensor ref_abs = ref.abs();
  result.max_abs_diff = diff.max().item<double>();
  result.max_abs_reference = ref_abs.max().item<double>();
  const at::Tensor nonzero = ref != 0;
  const at::Tensor rel =
      at::where(nonzero, diff / at::where(nonzero, ref_abs, 1.0),
                at::zeros_like(diff));
  result.max_rel_diff = rel.max().item<double>();
  // A NaN anywhere makes the comparison false, as in torch.allclose.
  result.within_tolerance =
      (diff <= ref_abs * rtol + atol).all().item<bool>();
  return result;
}

}  // namespace

bool AllFinite(const at::Tensor& t) {
  return std::isfinite(t.sum(at::kDouble).item<double>());
}

absl::StatusOr<TensorListComparison> CompareTensors(
    const NamedTensors& actual, const NamedTensors& reference, double rtol,
    const std::vector<double>& atols) {
  absl::StatusOr<TensorListComparison> list =
      CompareTensors(actual, reference, std::vector<double>(atols.size(), rtol), atols);
  if (!list.ok()) return list;
  for (TensorComparison& t : list->tensors) t.rtol.reset();
  return list;
}

absl::StatusOr<TensorListComparison> CompareTensors(const NamedTensors& actual,
                                                    const NamedTensors& reference,
                                                    const std::vector<double>& rtols,
                                                    const std::vector<double>& atols) {
  for (size_t i = 0; i < atols.size() && i < rtols.size(); ++i) {
    if (std::isfinite(atols[i]) && atols[i] >= 0 && std::isfinite(rtols[i]) && rtols[i] >= 0) {
      continue;
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "tolerance: rtol and atol must be finite and >= 0, got rtol ", rtols[i], ", atol ",
        atols[i]));
  }
  if (atols.size() != actual.size() || rtols.size() != actual.size()) {
    return absl::InvalidArgumentError(absl::StrCat("comparing ", actual.size(), " tensors with ",
                                                   atols.size(), " atols and ", rtols.size(),
                                                   " rtols"));
  }
  if (actual.size() != reference.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("comparing ", actual.size(), " tensors with ",
                     reference.size(), " reference tensors"));
  }
  TensorListComparison list;
  for (size_t i = 0; i < actual.size(); ++i) {
    const auto& [name, a] = actual[i];
    const auto& [ref_name, ref] = reference[i];
    if (name != ref_name) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor ", i, " is '", name,
                       "' but the reference's is '", ref_name, "'"));
    }
    if (!a.defined() || !ref.defined()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", name, "' is undefined"));
    }
    if (a.sizes() != ref.sizes()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor '", name, "' has shape [", absl::StrJoin(a.sizes(), ","),
          "], the reference [", absl::StrJoin(ref.sizes(), ","), "]"));
    }
    try {
      list.tensors.push_back(CompareOne(name, a, ref, rtols[i], atols[i]));
      list.tensors.back().atol = atols[i];
      list.tensors.back().rtol = rtols[i];
    } catch (const c10::Error& e) {
      return absl::InternalError(absl::StrCat(
          "comparing '", name, "': ", e.what_without_backtrace()));
    }
    const TensorComparison& t = list.tensors.back();
    // std::fmax would drop a NaN; keep it visible.
    if (std::isnan(t.max_abs_diff) || t.max_abs_diff > list.max_abs_diff) {
      list.max_abs_diff = t.max_abs_diff;
    }
    if (std::isnan(t.max_rel_diff) || t.max_rel_diff > list.max_rel_diff) {
      list.max_rel_diff = t.max_rel_diff;
    }
    list.within_tolerance = list.within_tolerance && t.within_tolerance;
    list.bitwise_equal = list.bitwise_equal && t.bitwise_equal;
  }
  return list;
}

absl::StatusOr<TensorListComparison> CompareTensors(
    const NamedTensors& actual, const NamedTensors& reference, double rtol,
    double atol) {
  if (!std::isfinite(atol) || atol < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tolerance: rtol and atol must be finite and >= 0, got rtol ", rtol, ", atol ", atol));
  }
  absl::StatusOr<TensorListComparison> list =
      CompareTensors(actual, reference, rtol, std::vector<double>(actual.size(), atol));
  if (!list.ok()) return list;
  for (TensorComparison& t : list->tensors) {
    t.atol.reset();
    t.rtol.reset();
  }
  return list;
}

void AppendTensorParity(const TensorListComparison& comparison,
                        google::protobuf::RepeatedPtrField<TensorParity>* out) {
  for (const TensorComparison& t : comparison.tensors) {
    TensorParity* p = out->Add();
    p->set_name(t.name);
    for (int64_t d : t.shape) p->add_shape(static_cast<int32_t>(d));
    p->set_max_abs_diff(t.max_abs_diff);
    p->set_max_rel_diff(t.max_rel_diff);
    p->set_max_abs_reference(t.max_abs_reference);
    p->set_pass(t.within_tolerance);
    if (t.atol.has_value()) p->set_atol(*t.atol);
    if (t.rtol.has_value()) p->set_rtol(*t.rtol);
    p->set_bitwise_equal(t.bitwise_equal);
  }
}

}  // namespace receipt_parity

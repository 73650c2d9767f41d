#include "model/logits_check.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/grad_mode.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace receipt_parity {
namespace {

std::string ShapeText(at::IntArrayRef sizes) {
  return absl::StrCat("[", absl::StrJoin(sizes, ", "), "]");
}

}  // namespace

std::string FirstLineOf(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string what = c10_error ? c10_error->what_without_backtrace() : e.what();
  const size_t end = what.find('\n');
  return end == std::string::npos ? what : what.substr(0, end);
}

absl::Status CheckLogits(Classifier& model, const std::vector<int64_t>& input_shape,
                         int num_classes, absl::string_view source) {
  std::vector<int64_t> batch = {2};
  batch.insert(batch.end(), input_shape.begin(), input_shape.end());
  at::Tensor logits;
  try {
    torch::NoGradGuard no_grad;
    model.eval();
    logits = model.forward(at::zeros(batch));
    model.train();
  } catch (const std::exception& e) {
    model.train();
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": forward of a ", ShapeText(batch), " batch failed: ", FirstLineOf(e)));
  }
  if (logits.dim() != 2 || logits.size(0) != 2 || logits.size(1) != num_classes ||
      logits.scalar_type() != at::kFloat) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": maps a ", ShapeText(batch), " batch to ",
        c10::toString(logits.scalar_type()), " ", ShapeText(logits.sizes()),
        "; a receipt model must map [N, ", absl::StrJoin(input_shape, ", "), "] to float [N, ",
        num_classes, "] (one logit per label)"));
  }
  return absl::OkStatus();
}

}  // namespace receipt_parity

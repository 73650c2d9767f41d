// The shape check every model loaded from outside the project passes at
// load (a TorchScript file, a Python module): a batch of two zero examples,
// in eval mode without gradients, must give float [2, num_classes] logits.
#ifndef RECEIPT_PARITY_MODEL_LOGITS_CHECK_H_
#define RECEIPT_PARITY_MODEL_LOGITS_CHECK_H_

#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "model/classifier_interface.h"

namespace receipt_parity {

// OK, or InvalidArgument "`source`: forward of a [2, ...] batch failed:
// <the exception's first line>" or "`source`: maps a [2, ...] batch to
// <dtype> [<shape>]; a receipt model must map ...". The model is left in
// training mode either way.
absl::Status CheckLogits(Classifier& model, const std::vector<int64_t>& input_shape,
                         int num_classes, absl::string_view source);

// The first line of what `e` says, without LibTorch's C++ backtrace.
std::string FirstLineOf(const std::exception& e);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_MODEL_LOGITS_CHECK_H_

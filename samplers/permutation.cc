#include "samplers/permutation.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/randperm.h>

#include <exception>
#include <numeric>

#include "absl/strings/str_cat.h"

namespace receipt_parity {

absl::StatusOr<std::vector<int64_t>> EpochPermutation(int64_t num_examples,
                                                      uint64_t seed,
                                                      int64_t epoch,
                                                      bool shuffle) {
  if (num_examples < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_examples is ", num_examples, "; it must be >= 0"));
  }
  if (epoch < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("epoch is ", epoch, "; it must be >= 0"));
  }
  std::vector<int64_t> order(num_examples);
  if (!shuffle) {
    std::iota(order.begin(), order.end(), int64_t{0});
    return order;
  }
  try {
    at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(
        seed + static_cast<uint64_t>(epoch));
    at::Tensor permutation = at::randperm(num_examples, generator).contiguous();
    const int64_t* data = permutation.data_ptr<int64_t>();
    order.assign(data, data + num_examples);
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("randperm(", num_examples, ") failed: ", e.what()));
  }
  return order;
}

}  // namespace receipt_parity

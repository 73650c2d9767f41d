#include "reducers/ordered_sum_reducer.h"

#include <chrono>
#include <exception>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "absl/strings/str_cat.h"
#include "collectives/collective_error.h"

namespace receipt_parity {

absl::StatusOr<OrderedSumReducer> OrderedSumReducer::Create(int chunk_slots) {
  if (chunk_slots < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk_slots: must be >= 1, got ", chunk_slots));
  }
  return OrderedSumReducer(chunk_slots);
}

absl::Status OrderedSumReducer::ReduceBucket(at::Tensor& /*flat*/,
                                             c10d::ProcessGroup& /*group*/) {
  return absl::UnimplementedError(
      "ordered_sum reduces the update's chunk gradients (SumChunks), not buckets");
}

absl::StatusOr<at::Tensor> OrderedSumReducer::SumChunks(at::Tensor& chunks,
                                                        c10d::ProcessGroup* group) {
  const int64_t bytes = chunks.numel() * chunks.element_size();
  if (group != nullptr) {
    try {
      const auto start = std::chrono::steady_clock::now();
      c10d::AllreduceOptions sum;
      sum.reduceOp = c10d::ReduceOp::SUM;
      std::vector<at::Tensor> tensors = {chunks};
      group->allreduce(tensors, sum)->wait();
      ++stats_.collectives;
      stats_.bytes += bytes;
      stats_.seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } catch (const std::exception& e) {
      return CollectiveErrorToStatus(
          e, absl::StrCat("ordered_sum: ", chunks.size(0), " chunk gradients of ", bytes,
                          " bytes"));
    }
  }
  try {
    chunks.add_(0.0);  // -0 -> +0, as the all-reduce leaves it
    at::Tensor total = chunks[0].clone();
    for (int64_t k = 1; k < chunks.size(0); ++k) total.add_(chunks[k]);
    return total;
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("ordered_sum: LibTorch: ", e.what()));
  }
}

}  // namespace receipt_parity

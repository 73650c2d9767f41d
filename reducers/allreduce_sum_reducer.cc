#include "reducers/allreduce_sum_reducer.h"

#include <chrono>
#include <exception>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "absl/strings/str_cat.h"
#include "reducers/collective_error.h"

namespace receipt_parity {

std::vector<GradientBucket> PlanBuckets(const std::vector<at::Tensor>& grads,
                                        int64_t bucket_cap_bytes) {
  std::vector<GradientBucket> buckets;
  for (int i = 0; i < static_cast<int>(grads.size()); ++i) {
    const int64_t bytes = grads[i].numel() * grads[i].element_size();
    const bool fits =
        !buckets.empty() &&
        grads[buckets.back().begin].scalar_type() == grads[i].scalar_type() &&
        buckets.back().bytes + bytes <= bucket_cap_bytes;
    if (fits) {
      buckets.back().end = i + 1;
      buckets.back().bytes += bytes;
    } else {
      buckets.push_back({i, i + 1, bytes});
    }
  }
  return buckets;
}

absl::StatusOr<AllreduceSumReducer> AllreduceSumReducer::Create(
    int64_t bucket_cap_bytes) {
  if (bucket_cap_bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bucket_cap_bytes: must be >= 0 (0 = default ",
        kDefaultBucketCapBytes, "), got ", bucket_cap_bytes));
  }
  return AllreduceSumReducer(bucket_cap_bytes == 0 ? kDefaultBucketCapBytes
                                                   : bucket_cap_bytes);
}

absl::Status AllreduceSumReducer::Reduce(std::vector<at::Tensor>& grads,
                                         c10d::ProcessGroup& group) {
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined()) {
      return absl::InvalidArgumentError(
          absl::StrCat("allreduce_sum: gradient ", i, " is undefined"));
    }
    if (grads[i].device() != grads[0].device()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "allreduce_sum: gradient ", i, " is on ", grads[i].device().str(),
          ", gradient 0 on ", grads[0].device().str()));
    }
  }
  c10d::AllreduceOptions sum;
  sum.reduceOp = c10d::ReduceOp::SUM;
  for (const GradientBucket& bucket : PlanBuckets(grads, bucket_cap_bytes_)) {
    // Every rank plans the same buckets, so all skip the same empty ones.
    if (bucket.bytes == 0) continue;
    try {
      std::vector<at::Tensor> pieces;
      for (int i = bucket.begin; i < bucket.end; ++i) {
        pieces.push_back(grads[i].reshape({-1}));
      }
      std::vector<at::Tensor> flat = {at::cat(pieces)};
      const auto start = std::chrono::steady_clock::now();
      group.allreduce(flat, sum)->wait();
      stats_.seconds += std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - start)
                            .count();
      ++stats_.collectives;
      stats_.bytes += bucket.bytes;
      int64_t offset = 0;
      for (int i = bucket.begin; i < bucket.end; ++i) {
        const int64_t n = grads[i].numel();
        grads[i].copy_(flat[0].narrow(0, offset, n).view(grads[i].sizes()));
        offset += n;
      }
    } catch (const std::exception& e) {
      return CollectiveErrorToStatus(
          e, absl::StrCat("allreduce_sum: bucket of gradients [",
                          bucket.begin, ", ", bucket.end, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace receipt_parity

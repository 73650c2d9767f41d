#include "reducers/gradient_reducer.h"

#include "absl/strings/str_cat.h"

namespace receipt_parity {

std::vector<GradientBucket> PlanBuckets(const std::vector<at::Tensor>& tensors,
                                        int64_t bucket_cap_bytes) {
  std::vector<GradientBucket> buckets;
  for (int i = 0; i < static_cast<int>(tensors.size()); ++i) {
    const int64_t bytes = tensors[i].numel() * tensors[i].element_size();
    const bool fits =
        !buckets.empty() &&
        tensors[buckets.back().begin].scalar_type() == tensors[i].scalar_type() &&
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

std::vector<GradientBucket> GradientReducer::PlanBuckets(
    const std::vector<at::Tensor>& gradients) const {
  return receipt_parity::PlanBuckets(gradients, kDefaultBucketCapBytes);
}

absl::StatusOr<at::Tensor> GradientReducer::SumChunks(at::Tensor& /*chunks*/,
                                                      absl::Span<const int64_t> /*row_bounds*/,
                                                      c10d::ProcessGroup* /*group*/) {
  return absl::UnimplementedError(
      "this reducer reduces buckets; SumChunks is the ordered mode's (chunk_slots() > 0)");
}

absl::Status GradientReducer::BeginChunkBuckets(const at::Tensor& /*rows*/,
                                                ChunkTreeNode /*buckets_node*/,
                                                absl::Span<const int64_t> /*row_bounds*/) {
  return absl::UnimplementedError(
      "this reducer reduces buckets; BeginChunkBuckets is the ordered mode's (chunk_slots() > 0)");
}

absl::StatusOr<int64_t> BucketCapBytes(int64_t bucket_cap_bytes) {
  if (bucket_cap_bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bucket_cap_bytes: must be >= 0 (0 = default ",
        GradientReducer::kDefaultBucketCapBytes, "), got ", bucket_cap_bytes));
  }
  return bucket_cap_bytes == 0 ? GradientReducer::kDefaultBucketCapBytes : bucket_cap_bytes;
}

}  // namespace receipt_parity

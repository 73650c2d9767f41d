#include "reducers/allreduce_sum_reducer.h"

#include <chrono>
#include <exception>
#include <utility>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "absl/strings/str_cat.h"
#include "collectives/collective_error.h"

namespace receipt_parity {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string BucketContext(int64_t bytes) {
  return absl::StrCat("allreduce_sum: bucket of ", bytes, " bytes");
}

}  // namespace

absl::StatusOr<AllreduceSumReducer> AllreduceSumReducer::Create(
    int64_t bucket_cap_bytes, bool overlap_backward) {
  absl::StatusOr<int64_t> cap = BucketCapBytes(bucket_cap_bytes);
  if (!cap.ok()) return cap.status();
  return AllreduceSumReducer(*cap, overlap_backward);
}

std::vector<GradientBucket> AllreduceSumReducer::PlanBuckets(
    const std::vector<at::Tensor>& gradients) const {
  return receipt_parity::PlanBuckets(gradients, bucket_cap_bytes_);
}

c10::intrusive_ptr<c10d::Work> AllreduceSumReducer::Issue(at::Tensor& flat,
                                                          c10d::ProcessGroup& group) {
  c10d::AllreduceOptions sum;
  sum.reduceOp = c10d::ReduceOp::SUM;
  std::vector<at::Tensor> tensors = {flat};
  c10::intrusive_ptr<c10d::Work> work = group.allreduce(tensors, sum);
  ++stats_.collectives;
  stats_.bytes += flat.numel() * flat.element_size();
  return work;
}

absl::Status AllreduceSumReducer::ReduceBucket(at::Tensor& flat,
                                               c10d::ProcessGroup& group) {
  const int64_t bytes = flat.numel() * flat.element_size();
  try {
    const Clock::time_point start = Clock::now();
    Issue(flat, group)->wait();
    stats_.seconds += SecondsSince(start);
  } catch (const std::exception& e) {
    return CollectiveErrorToStatus(e, BucketContext(bytes));
  }
  return absl::OkStatus();
}

absl::Status AllreduceSumReducer::StartBucket(at::Tensor& flat,
                                              c10d::ProcessGroup& group) {
  if (!overlap_backward_) return ReduceBucket(flat, group);
  const int64_t bytes = flat.numel() * flat.element_size();
  try {
    in_flight_.emplace_back(Issue(flat, group), bytes);
  } catch (const std::exception& e) {
    return CollectiveErrorToStatus(e, BucketContext(bytes));
  }
  return absl::OkStatus();
}

absl::Status AllreduceSumReducer::FinishBuckets() {
  if (in_flight_.empty()) return absl::OkStatus();
  std::vector<std::pair<c10::intrusive_ptr<c10d::Work>, int64_t>> works =
      std::move(in_flight_);
  in_flight_.clear();
  absl::Status first_error;
  const Clock::time_point start = Clock::now();
  for (auto& [work, bytes] : works) {
    try {
      work->wait();
    } catch (const std::exception& e) {
      if (first_error.ok()) first_error = CollectiveErrorToStatus(e, BucketContext(bytes));
    }
  }
  stats_.seconds += SecondsSince(start);
  return first_error;
}

}  // namespace receipt_parity

#include "collectives/sum_across_ranks.h"

#include <exception>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "collectives/collective_error.h"

namespace receipt_parity {

absl::Status SumAcrossRanks(c10d::ProcessGroup& group, at::Tensor& tensor,
                            absl::string_view what) {
  try {
    c10d::AllreduceOptions sum;
    sum.reduceOp = c10d::ReduceOp::SUM;
    std::vector<at::Tensor> tensors = {tensor};
    group.allreduce(tensors, sum)->wait();
  } catch (const std::exception& e) {
    return CollectiveErrorToStatus(e, what);
  }
  return absl::OkStatus();
}

absl::StatusOr<RankSumInFlight> StartSumAcrossRanks(c10d::ProcessGroup& group,
                                                    at::Tensor& tensor, absl::string_view what) {
  try {
    c10d::AllreduceOptions sum;
    sum.reduceOp = c10d::ReduceOp::SUM;
    std::vector<at::Tensor> tensors = {tensor};
    c10::intrusive_ptr<c10d::Work> work = group.allreduce(tensors, sum);
    return RankSumInFlight([work, context = std::string(what)]() -> absl::Status {
      try {
        work->wait();
      } catch (const std::exception& e) {
        return CollectiveErrorToStatus(e, context);
      }
      return absl::OkStatus();
    });
  } catch (const std::exception& e) {
    return CollectiveErrorToStatus(e, what);
  }
}

RankSum RankSumOver(c10d::ProcessGroup* group, absl::string_view what) {
  if (group == nullptr) return [](at::Tensor&) { return absl::OkStatus(); };
  return [group, context = std::string(what)](at::Tensor& tensor) {
    return SumAcrossRanks(*group, tensor, context);
  };
}

}  // namespace receipt_parity

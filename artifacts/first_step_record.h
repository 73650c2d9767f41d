// first_step.json: the first update's parameters before, reduced gradients
// and parameters after, by parameter name, as flat float arrays with
// shapes; and the same named tensors read back for comparison.
#ifndef RECEIPT_PARITY_ARTIFACTS_FIRST_STEP_RECORD_H_
#define RECEIPT_PARITY_ARTIFACTS_FIRST_STEP_RECORD_H_

#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include "absl/status/statusor.h"
#include "google/protobuf/map.h"
#include "parity/tensor_comparison.h"  // NamedTensors
#include "artifacts/first_step.pb.h"

#include "samplers/epoch_plan.h"

namespace receipt_parity {

// Adds every rank's slots of `update` (receipt ids, dataset indices, valid
// flags, micro-batches of `micro_batches` per rank) to `record`'s batch.
void RecordBatch(const EpochPlan& plan, int64_t update,
                 const std::vector<std::string>& receipt_ids, int micro_batches,
                 FirstStep* record);

// Detached copies of the parameters (or, with `gradients`, of their
// gradients), in registration order.
NamedTensors SnapshotParameters(const torch::nn::Module& model);
NamedTensors SnapshotGradients(const torch::nn::Module& model);

void StoreNamedTensors(const NamedTensors& tensors,
                       google::protobuf::Map<std::string, NamedTensor>* out);

// Tensors of `map` in the order of `names`. InvalidArgument naming the
// parameter when one is missing, its values do not fill its shape, or
// LibTorch refuses the shape (e.g. a negative size).
absl::StatusOr<NamedTensors> LoadNamedTensors(
    const google::protobuf::Map<std::string, NamedTensor>& map,
    const std::vector<std::string>& names);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_ARTIFACTS_FIRST_STEP_RECORD_H_

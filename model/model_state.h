// A model's state as a checkpoint holds it: every named parameter as
// "model/<name>" and every named buffer (running statistics and the like)
// as "model_buffer/<name>". checkpointing/run_checkpoints.cc saves and restores
// models through these two functions, and the model conformance suite
// (conformance/model_conformance.h) round-trips a model through them.
//
// Thread safety: reads or writes the model; do not train it meanwhile.
#ifndef RECEIPT_PARITY_MODEL_MODEL_STATE_H_
#define RECEIPT_PARITY_MODEL_MODEL_STATE_H_

#include <map>
#include <string>

#include <ATen/core/Tensor.h>

#include "absl/status/status.h"
#include "model/classifier_interface.h"

namespace receipt_parity {

inline constexpr char kModelParameterPrefix[] = "model/";
// A model without buffers (every architecture model) writes none, so its
// shards are as before buffers were saved.
inline constexpr char kModelBufferPrefix[] = "model_buffer/";

// The live state by checkpoint name, detached (not copied).
std::map<std::string, at::Tensor> ModelStateByName(Classifier& model);

// Copies every parameter and buffer of `model` from state[checkpoint name],
// in place, without gradient tracking. Names in `state` without the two
// prefixes are ignored (a checkpoint also holds the optimizer's). Errors:
// DataLoss "checkpoint lacks parameter NAME" (or buffer), FailedPrecondition
// "checkpoint parameter NAME has another shape", DataLoss with LibTorch's
// message when a copy throws.
absl::Status LoadModelState(Classifier& model,
                            const std::map<std::string, at::Tensor>& state);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_MODEL_MODEL_STATE_H_

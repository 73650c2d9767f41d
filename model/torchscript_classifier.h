// A Classifier (model/classifier.h) that runs a TorchScript module saved by
// torch.jit.save with this project's torch.
//
// The classifier mirrors the script module's hierarchy with empty
// torch::nn::Module children registered under the same names ("conv",
// "bn", ...), each registering the module's own tensors (the same storage,
// not copies): named_parameters() gives "conv.weight" etc. and
// named_buffers() "bn.running_mean" etc., so checkpoints, reducers and
// parity never know it is TorchScript. Gradients of forward() land on
// those tensors, an optimizer step updates the module, and a buffer the
// module updates in place (batch norm's running statistics) is seen at
// once. A buffer the module reassigns in forward (self.b = self.b + 1) is
// rebound after each forward, so it is seen too. A parameter that does not
// require grad is state, not trained: it is registered as a buffer.
//
// forward(self, images) is called with the images; forward(self, images,
// keys: Tensor) also gets each example's int64 key for the update ([N],
// model/keyed_dropout.h UpdateKeys) in a training update, and zeros in any
// other forward (validation and the load-time check, in eval mode), so the
// module can draw dropout masks keyed by the example (examples/torchscript/
// --keyed_dropout).
//
// train(on) / eval() set the script module's mode too; a submodule saved
// in eval mode inside a module saved in training mode stays in eval mode
// when the classifier trains (the layer audit then does not count it). A
// module saved in eval mode as a whole trains in training mode. The TorchScript
// graph executor runs without its optimizations (fusion, specialised
// graphs), process-wide, from the first load on: every forward runs the
// same kernels, so runs are reproducible bit for bit.
//
// Thread safety: like any torch::nn::Module, one per thread.
#ifndef RECEIPT_PARITY_MODEL_TORCHSCRIPT_CLASSIFIER_H_
#define RECEIPT_PARITY_MODEL_TORCHSCRIPT_CLASSIFIER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/classifier.h"

namespace receipt_parity {

// Loads the module in `path` onto the CPU and checks that a batch of two
// zero examples of `input_shape` gives [2, num_classes] float logits (in
// eval mode, without gradients; the module is left in training mode).
// Describe() names the module's type, the SHA-1 of the file's bytes, the
// input shape and the classes, so the model revision (ModelRevision) hashes
// the file and the initial parameters. Errors name `path`:
//   NotFound         no such file;
//   InvalidArgument  not a TorchScript module LibTorch can load (corrupt,
//                    another format, a folder), a forward whose second
//                    argument is not a Tensor or that takes more, a forward
//                    that fails, or logits of another shape or type.
absl::StatusOr<std::shared_ptr<Classifier>> LoadTorchScriptClassifier(
    const std::string& path, const std::vector<int64_t>& input_shape,
    int num_classes);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_MODEL_TORCHSCRIPT_CLASSIFIER_H_

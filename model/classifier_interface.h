// The one model interface: every model plugin (model/classifier_builder.h)
// builds a Classifier, so checkpoints, reducers and parity never know which
// model they train. Its named_parameters() are what is trained, its
// named_buffers() the rest of its state; checkpoints save both.
//
// Header only, without protobuf: a model plugin built as a shared library
// compiles against it (//model:model_plugin_api). model/classifier.h
// includes it.
//
// Thread safety: a Classifier is a torch::nn::Module; use one per thread.
#ifndef RECEIPT_PARITY_MODEL_CLASSIFIER_INTERFACE_H_
#define RECEIPT_PARITY_MODEL_CLASSIFIER_INTERFACE_H_

#include <string>

#include <torch/nn/module.h>

namespace torch {
namespace jit {
struct Module;
}  // namespace jit
}  // namespace torch

namespace receipt_parity {

class Classifier : public torch::nn::Module {
 public:
  // images: [N, input_shape...] float; returns logits [N, num_classes].
  // N may be 0.
  virtual at::Tensor forward(const at::Tensor& images) = 0;

  // A training update's forward pass. `update_keys` (int64 [N] on the CPU)
  // holds each example's key for this update (model/keyed_dropout.h: its
  // receipt id and view mixed with the update's index), for layers whose
  // output must not depend on which rank, micro-batch or position holds an
  // example. The default ignores the keys: forward(images).
  virtual at::Tensor ForwardForUpdate(const at::Tensor& images,
                                      const at::Tensor& update_keys) {
    (void)update_keys;
    return forward(images);
  }

  // e.g. "cnn(conv=8,16;hidden=32;in=1x32x32;classes=4)".
  virtual std::string Describe() const = 0;

  // The TorchScript module this classifier runs (model/torchscript_classifier.h),
  // or nullptr for a C++ model.
  virtual const torch::jit::Module* script_module() const { return nullptr; }
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_MODEL_CLASSIFIER_INTERFACE_H_

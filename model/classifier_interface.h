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
#include <vector>

#include <torch/nn/module.h>

#include "absl/status/statusor.h"

namespace torch {
namespace jit {
struct Module;
}  // namespace jit
}  // namespace torch

namespace receipt_parity {

// One layer of a model as the model's own audit reports it: its module
// path ("" is the model), type name and finding kind (model/layer_audit.h).
struct ReportedLayer {
  std::string module;
  std::string module_type;
  std::string kind;
};

// A model whose layers the harness can walk neither as C++ modules nor as
// TorchScript graphs (a Python nn.Module, model/python_support.h) reports
// them itself, for the layer audit.
class LayerReporter {
 public:
  virtual ~LayerReporter() = default;
  // How the layers were found, one phrase (LayerAudit.method).
  virtual std::string method() const = 0;
  // Every finding, parity-safe kinds included; a module may be reported
  // with several kinds. Errors: Internal when the search itself fails.
  virtual absl::StatusOr<std::vector<ReportedLayer>> ReportLayers() const = 0;
};

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

  // What reports this classifier's layers when the harness cannot read
  // them (a Python module), or nullptr.
  virtual const LayerReporter* layer_reporter() const { return nullptr; }
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_MODEL_CLASSIFIER_INTERFACE_H_

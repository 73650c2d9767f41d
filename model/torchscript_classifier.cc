#include "model/torchscript_classifier.h"

#include <exception>
#include <sstream>
#include <utility>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <c10/util/hash.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/csrc/jit/serialization/import.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "io/atomic_file.h"
#include "model/logits_check.h"

namespace receipt_parity {
namespace {

// A tensor of the script module registered as a buffer of the classifier.
struct MirroredBuffer {
  torch::jit::Module owner;  // the (sub)module whose attribute it is
  std::string name;
  at::Tensor tensor;  // what the classifier registered
};

std::string TypeName(const torch::jit::Module& module) {
  const auto& name = module.type()->name();
  return name ? name->qualifiedName() : "torch::jit::Module";
}

// Registers `script`'s own parameters and buffers in `mirror` (the same
// tensors) and mirrors its children the same way, recursively.
void Mirror(const torch::jit::Module& script, torch::nn::Module& mirror,
            std::vector<MirroredBuffer>* buffers) {
  for (const torch::jit::NameTensor& p : script.named_parameters(/*recurse=*/false)) {
    if (p.value.requires_grad()) {
      mirror.register_parameter(p.name, p.value, /*requires_grad=*/true);
    } else {
      mirror.register_buffer(p.name, p.value);
      buffers->push_back({script, p.name, p.value});
    }
  }
  for (const torch::jit::NameTensor& b : script.named_buffers(/*recurse=*/false)) {
    mirror.register_buffer(b.name, b.value);
    buffers->push_back({script, b.name, b.value});
  }
  for (const torch::jit::NameModule& child : script.named_children()) {
    auto sub = std::make_shared<torch::nn::Module>(TypeName(child.value));
    Mirror(child.value, *sub, buffers);
    mirror.register_module(child.name, sub);
  }
}

class TorchScriptClassifier : public Classifier {
 public:
  // `takes_keys`: forward(images, keys) (ForwardTakesKeys).
  TorchScriptClassifier(torch::jit::Module script, std::string description,
                        bool takes_keys)
      : script_(std::move(script)),
        description_(std::move(description)),
        takes_keys_(takes_keys) {
    Mirror(script_, *this, &buffers_);
    // Submodules saved in eval mode inside a module saved in training mode
    // (a frozen batch norm) stay in eval mode when the classifier trains.
    if (script_.is_training()) {
      for (const torch::jit::NameModule& m : script_.named_modules()) {
        if (!m.name.empty() && !m.value.is_training()) eval_submodules_.push_back(m.value);
      }
    }
    train(true);
  }

  // A forward that is not a training update: a module that takes keys
  // gets zeros (it is in eval mode for validation and the load-time check,
  // where its keyed layers should not act).
  at::Tensor forward(const at::Tensor& images) override {
    return ForwardForUpdate(images, at::Tensor());
  }

  at::Tensor ForwardForUpdate(const at::Tensor& images,
                              const at::Tensor& update_keys) override {
    std::vector<c10::IValue> inputs = {images};
    if (takes_keys_) {
      inputs.push_back(update_keys.defined()
                           ? update_keys.to(images.device())
                           : at::zeros({images.size(0)}, images.options().dtype(at::kLong)));
    }
    const c10::IValue out = script_.forward(inputs);
    TORCH_CHECK(out.isTensor(), "the module's forward returned a ", out.tagKind(),
                ", not a tensor of logits");
    RebindReassignedBuffers();
    return out.toTensor();
  }

  std::string Describe() const override { return description_; }

  void train(bool on) override {
    torch::nn::Module::train(on);
    script_.train(on);
    if (!on) return;
    for (torch::jit::Module& m : eval_submodules_) m.train(false);
  }

  const torch::jit::Module* script_module() const override { return &script_; }

 private:
  // A buffer forward replaced by a new tensor: the classifier's tensor
  // takes its value and is put back, so both hold one tensor again.
  void RebindReassignedBuffers() {
    for (MirroredBuffer& b : buffers_) {
      at::Tensor now = b.owner.attr(b.name).toTensor();
      if (now.unsafeGetTensorImpl() == b.tensor.unsafeGetTensorImpl()) continue;
      torch::NoGradGuard no_grad;
      b.tensor.set_data(now.detach());
      b.owner.setattr(b.name, b.tensor);
    }
  }

  torch::jit::Module script_;
  std::string description_;
  bool takes_keys_;
  std::vector<torch::jit::Module> eval_submodules_;
  std::vector<MirroredBuffer> buffers_;
};

absl::Status Invalid(const std::string& path, const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat("path: ", path, ": ", message));
}

// Whether `script`'s forward takes each example's key after the images:
// forward(self, images) -> false; forward(self, images, keys: Tensor) ->
// true; any other signature is refused naming the argument.
absl::StatusOr<bool> ForwardTakesKeys(const torch::jit::Module& script,
                                      const std::string& path) {
  const std::optional<torch::jit::Method> forward = script.find_method("forward");
  if (!forward.has_value()) return Invalid(path, "the module has no forward method");
  const std::vector<c10::Argument>& arguments = forward->function().getSchema().arguments();
  // arguments[0] is self.
  if (arguments.size() == 2) return false;
  if (arguments.size() == 3 && arguments[2].type()->kind() == c10::TypeKind::TensorType) {
    return true;
  }
  const std::string harness =
      "; the harness passes forward(images) or forward(images, keys) with keys "
      "a Tensor: each example's int64 key for the update ([N]), for keyed "
      "dropout (examples/torchscript/)";
  if (arguments.size() == 3) {
    return Invalid(path, absl::StrCat("forward's second argument '", arguments[2].name(),
                                      "' is ", arguments[2].type()->str(), harness));
  }
  return Invalid(path, absl::StrCat("forward takes ", arguments.size() - 1,
                                    " arguments", harness));
}

}  // namespace

absl::StatusOr<std::shared_ptr<Classifier>> LoadTorchScriptClassifier(
    const std::string& path, const std::vector<int64_t>& input_shape,
    int num_classes) {
  absl::StatusOr<std::string> bytes = ReadFileToString(path);
  if (absl::IsNotFound(bytes.status())) {
    return absl::NotFoundError(absl::StrCat("path: ", path, ": no such file"));
  }
  if (!bytes.ok()) return Invalid(path, std::string(bytes.status().message()));
  std::shared_ptr<Classifier> model;
  try {
    torch::jit::setGraphExecutorOptimize(false);
    std::istringstream in(*bytes);
    torch::jit::Module script = torch::jit::load(in, at::Device(at::kCPU));
    absl::StatusOr<bool> takes_keys = ForwardTakesKeys(script, path);
    if (!takes_keys.ok()) return takes_keys.status();
    const std::string description = absl::StrCat(
        "torchscript(module=", TypeName(script), ";file_sha1=", c10::sha1(*bytes).str(),
        ";in=", absl::StrJoin(input_shape, "x"), ";classes=", num_classes, ")");
    model = std::make_shared<TorchScriptClassifier>(std::move(script), description,
                                                    *takes_keys);
  } catch (const std::exception& e) {
    return Invalid(path, absl::StrCat("not a TorchScript module saved by "
                                      "torch.jit.save (torch 2.11): ",
                                      FirstLineOf(e)));
  }
  if (absl::Status s = CheckLogits(*model, input_shape, num_classes, absl::StrCat("path: ", path));
      !s.ok()) {
    return s;
  }
  return model;
}

}  // namespace receipt_parity

#include "model/torchscript_model.h"

#include <utility>

#include "model/torchscript_classifier.h"

namespace receipt_parity {
namespace {

class TorchScriptBuilder : public ClassifierBuilder {
 public:
  explicit TorchScriptBuilder(std::string path) : path_(std::move(path)) {}

  absl::Status Check(const ClassifierSpec& spec) const override {
    return Build(spec).status();
  }

  absl::StatusOr<std::shared_ptr<Classifier>> Build(
      const ClassifierSpec& spec) const override {
    return LoadTorchScriptClassifier(spec.ResolvePath(path_), spec.input_shape,
                                     spec.num_classes);
  }

 private:
  std::string path_;  // as written in the options
};

}  // namespace

absl::StatusOr<std::unique_ptr<ClassifierBuilder>> TorchScriptModelFactory::CreateTyped(
    const TorchScriptModelOptions& options) const {
  if (options.path().empty()) {
    return absl::InvalidArgumentError(
        "path: missing; name the .pt file torch.jit.save wrote (relative to "
        "the config's folder, or absolute)");
  }
  return std::make_unique<TorchScriptBuilder>(options.path());
}

}  // namespace receipt_parity

// The torchscript model plugin: a module saved by torch.jit.save, trained
// as it is (model/torchscript_classifier.h).
//   model {
//     name: "torchscript"
//     options { [type.googleapis.com/receipt_parity.TorchScriptModelOptions] { path: "model.pt" } }
//   }
// The path is relative to the config's folder (ClassifierSpec::resolve_path),
// or absolute. Check loads the file and runs one batch, so a missing,
// corrupt or wrongly shaped module is refused when the config is loaded.
// The initial parameters are the file's: spec.init_seed is not used.
// Registered by :torchscript_registration.
//
// Thread safety: the factory and its builders are immutable.
#ifndef RECEIPT_PARITY_MODEL_TORCHSCRIPT_MODEL_H_
#define RECEIPT_PARITY_MODEL_TORCHSCRIPT_MODEL_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "model/classifier_builder.h"
#include "model/model_options.pb.h"
#include "plugins/plugin_factory.h"

namespace receipt_parity {

class TorchScriptModelFactory
    : public TypedFactory<ClassifierBuilder, TorchScriptModelOptions> {
 public:
  std::string name() const override { return "torchscript"; }

 private:
  // InvalidArgument "path: missing; ..." for an empty path.
  absl::StatusOr<std::unique_ptr<ClassifierBuilder>> CreateTyped(
      const TorchScriptModelOptions& options) const override;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_MODEL_TORCHSCRIPT_MODEL_H_

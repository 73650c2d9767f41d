// The python_module model plugin: a team's torch.nn.Module, trained as it
// is from its Python source, with no export step.
//   model {
//     name: "python_module"
//     options { [type.googleapis.com/receipt_parity.PythonModuleOptions] {
//       path: "model.py"  factory: "ReceiptNet"  kwargs_json: '{"hidden": 32}'
//     } }
//   }
// `path` (a .py file, relative to the config's folder) or `module` (an
// importable name, with the config's folder on sys.path) names the source;
// `factory` the class or function that builds the module, called with the
// keyword arguments of `kwargs_json` (a JSON object) or `kwargs` (a
// google.protobuf.Struct; not both). torch.manual_seed(spec.init_seed)
// runs before the module is built, so every rank builds the same replica.
// The module runs in an embedded interpreter (model/python_support.h),
// loaded only for this plugin; its parameters and buffers are the
// classifier's, names kept; forward(images) or forward(images, keys).
// Check builds it and runs one batch, so a module that fails to import, to
// build or in forward, or gives the wrong shape, is refused at load with
// the traceback's last frames. Registered by :python_module_registration.
//
// Thread safety: the factory and its builders are immutable.
#ifndef RECEIPT_PARITY_MODEL_PYTHON_MODULE_MODEL_H_
#define RECEIPT_PARITY_MODEL_PYTHON_MODULE_MODEL_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "model/classifier_builder.h"
#include "model/model_options.pb.h"
#include "plugins/plugin_factory.h"

namespace receipt_parity {

class PythonModuleModelFactory : public TypedFactory<ClassifierBuilder, PythonModuleOptions> {
 public:
  std::string name() const override { return "python_module"; }

 private:
  // InvalidArgument naming the option: neither or both of path and module,
  // no factory, kwargs given twice or kwargs_json that is not an object.
  absl::StatusOr<std::unique_ptr<ClassifierBuilder>> CreateTyped(
      const PythonModuleOptions& options) const override;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_MODEL_PYTHON_MODULE_MODEL_H_

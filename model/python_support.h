// What training a team's Python nn.Module needs from Python, behind one
// interface (the model plugin python_module, model/python_module_model.h).
//
// The project links libpython and torch's libtorch_python into one shared
// library only, the Python support library (model/libpython_support.so),
// which the host loads (model/python_support_loader.h) only when a config
// names `model { name: "python_module" }`. Importing torch from Python
// loads the wheel's libtorch_cuda as well (libtorch_python needs it), about
// 235 MB of resident memory, so runs with other models never do.
//
// This header is the whole contract between the two: the library defines a
// PythonSupport and hands it to RegisterPythonSupport from a static
// initializer; the host defines RegisterPythonSupport and exports it
// (-rdynamic), and exports the synchronized batch norm the library mirrors
// a Python SyncBatchNorm2d by (model/sync_batch_norm.h: one layer, one
// per-thread pass, the host's).
#ifndef RECEIPT_PARITY_MODEL_PYTHON_SUPPORT_H_
#define RECEIPT_PARITY_MODEL_PYTHON_SUPPORT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/classifier_interface.h"

namespace receipt_parity {

// One module to build.
struct PythonModuleRequest {
  // A .py file (resolved, absolute) when `file` is set, else an importable
  // module name ("team.models"), imported with `search_path` (the config's
  // folder, then the harness's layers, receipt_parity_layers.py) in front of
  // sys.path.
  std::string file;
  std::string module;
  std::vector<std::string> search_path;
  // The class or factory in it, called with the keyword arguments of
  // `kwargs_json` (a JSON object; "{}" for none).
  std::string factory;
  std::string kwargs_json;
  // torch.manual_seed before the module is built.
  uint64_t seed = 0;
  std::vector<int64_t> input_shape;
  int num_classes = 0;
  // How the config names the module, for messages ("examples/.../model.py").
  std::string written;
};

class PythonSupport {
 public:
  virtual ~PythonSupport() = default;

  // Builds the module (the interpreter starts on the first call, once per
  // process) and mirrors its parameters and buffers (the same tensors,
  // names kept), each receipt_parity_layers.SyncBatchNorm2d by the host's
  // SyncBatchNorm2dImpl over its tensors (model/sync_batch_norm.h), which
  // the Python layer's training forward calls. The classifier reports its layers (layer_reporter(): by
  // module type and two trial forwards, receipt_parity_layers.audit); its
  // forward raises a c10::Error with the traceback's last frames when the
  // module's forward raises. InvalidArgument naming `written` with the
  // Python traceback's last frames for a module that fails to import or to
  // build, a factory that makes no nn.Module, a forward of another
  // signature, or SyncBatchNorm2d layers not numbered in the order a
  // forward reaches them. The host checks the logits' shape (model/logits_check.h).
  virtual absl::StatusOr<std::shared_ptr<Classifier>> Build(
      const PythonModuleRequest& request) const = 0;
};

// Defined by the host; called once by the Python support library as it is
// loaded.
void RegisterPythonSupport(std::unique_ptr<PythonSupport> support);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_MODEL_PYTHON_SUPPORT_H_

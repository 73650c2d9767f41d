// The Python support library (model/python_support.h): an embedded
// interpreter of the project's torch environment, and a Classifier that
// runs a team's nn.Module on the trainer's tensors.
//
// The interpreter is Debian's Python 3.11 (the torch venv's base), started
// once per process without signal handlers (the trainer's own handling of
// SIGTERM and SIGINT stays), with the venv's site-packages, found from
// where libtorch_python lives, in front of sys.path. `import torch` there
// loads the torch/_C extension over the libtorch_cpu this process already
// runs: one autograd engine, one set of kernels, one generator. The GIL is
// released between calls; every call into Python takes it.
#include <Python.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>
#include <pybind11/embed.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/csrc/autograd/python_variable.h>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "model/python_support.h"
#include "model/sync_batch_norm.h"

namespace receipt_parity {
namespace {

namespace py = pybind11;
namespace fs = std::filesystem;

// The folder of the shared library holding `address`, symbolic links
// resolved; "" when unknown.
std::string FolderOfLibraryHolding(void* address) {
  Dl_info info;
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "";
  char resolved[PATH_MAX];
  if (realpath(info.dli_fname, resolved) == nullptr) return "";
  return fs::path(resolved).parent_path().string();
}

// The site-packages folder holding the torch whose libtorch_python this
// library links: .../site-packages/torch/lib/libtorch_python.so.
std::string TorchSitePackages() {
  const std::string lib =
      FolderOfLibraryHolding(reinterpret_cast<void*>(static_cast<PyObject* (*)(const at::TensorBase&)>(
                                 &THPVariable_Wrap)));
  return lib.empty() ? "" : fs::path(lib).parent_path().parent_path().string();
}

// Starts the interpreter once; its error, if it could not import torch.
absl::Status StartInterpreter() {
  static std::once_flag once;
  static absl::Status* started = nullptr;
  std::call_once(once, [] {
    started = new absl::Status();
    Py_InitializeEx(/*initsigs=*/0);
    {
      py::gil_scoped_acquire gil;
      try {
        py::module_ sys = py::module_::import("sys");
        // No __pycache__ written beside the team's sources.
        sys.attr("dont_write_bytecode") = true;
        const std::string site = TorchSitePackages();
        if (!site.empty()) sys.attr("path").attr("insert")(0, site);
        py::module_::import("torch");
      } catch (const std::exception& e) {
        *started = absl::FailedPreconditionError(
            absl::StrCat("the embedded Python cannot import torch: ", e.what()));
      }
    }
    // Release the GIL taken by initialisation: every call takes it again.
    PyEval_SaveThread();
  });
  return *started;
}

// A Python error on one line: its message, then the traceback's frames
// innermost first (pybind11 lists them so, after "At:"), at most `keep`,
// without torch.nn.Module's own call wrappers.
std::string LastFrames(const std::string& text, size_t keep = 5) {
  std::vector<std::string> message;
  std::vector<std::string> frames;
  bool in_frames = false;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    line = absl::StripAsciiWhitespace(line);
    if (line == "At:") {
      in_frames = true;
    } else if (in_frames) {
      if (absl::StrContains(line, "/torch/nn/modules/module.py(")) continue;
      if (frames.size() < keep) frames.emplace_back(line);
    } else {
      message.emplace_back(line);
    }
  }
  std::string out = absl::StrJoin(message, " ");
  if (!frames.empty()) {
    absl::StrAppend(&out, " (traceback, innermost first: ", absl::StrJoin(frames, "; "), ")");
  }
  return out;
}

at::Tensor ToTensor(const py::handle& object, absl::string_view what) {
  if (!THPVariable_Check(object.ptr())) {
    throw std::runtime_error(absl::StrCat(what, " is a ",
                                          py::str(py::type::of(object).attr("__name__"))
                                              .cast<std::string>(),
                                          ", not a torch.Tensor"));
  }
  return THPVariable_Unpack(object.ptr());
}

py::object ToPython(const at::Tensor& tensor) {
  return py::reinterpret_steal<py::object>(THPVariable_Wrap(tensor));
}

std::string TypeName(const py::handle& object) {
  return py::str(py::type::of(object).attr("__name__")).cast<std::string>();
}

// What a Python error says: its traceback's last frames (pybind11 puts
// them after "At:"), on one line.
std::string PythonError(py::error_already_set& e) { return LastFrames(e.what()); }

// The shape of the harness's trial batches of a module: two examples.
std::vector<int64_t> TrialShape(const std::vector<int64_t>& input_shape) {
  std::vector<int64_t> shape = {2};
  shape.insert(shape.end(), input_shape.begin(), input_shape.end());
  return shape;
}

// The harness's layers module (receipt_parity_layers.py). REQUIRES: the GIL.
py::module_ HarnessLayers() { return py::module_::import("receipt_parity_layers"); }

// A receipt_parity_layers.SyncBatchNorm2d's state: its own tensors.
// REQUIRES: the GIL.
SyncBatchNormTensors SyncBatchNormState(const py::object& layer) {
  return {ToTensor(layer.attr("weight"), "SyncBatchNorm2d.weight"),
          ToTensor(layer.attr("bias"), "SyncBatchNorm2d.bias"),
          ToTensor(layer.attr("running_mean"), "SyncBatchNorm2d.running_mean"),
          ToTensor(layer.attr("running_var"), "SyncBatchNorm2d.running_var"),
          ToTensor(layer.attr("num_batches_tracked"), "SyncBatchNorm2d.num_batches_tracked")};
}

class PythonModuleClassifier : public Classifier, public LayerReporter {
 public:
  // REQUIRES: the GIL is held; the module's SyncBatchNorm2d layers are
  // numbered in the order forward reaches them
  // (receipt_parity_layers.sync_batch_norms).
  PythonModuleClassifier(py::object module, std::string description, bool takes_keys,
                         std::vector<int64_t> input_shape)
      : module_(std::move(module)), description_(std::move(description)),
        takes_keys_(takes_keys), input_shape_(std::move(input_shape)),
        sync_batch_norm_type_(HarnessLayers().attr("SyncBatchNorm2d")) {
    Mirror(module_, *this);
    // Submodules built in eval mode (a frozen batch norm) stay in eval
    // mode when the classifier trains.
    for (const py::handle item : module_.attr("named_modules")()) {
      const auto pair = item.cast<py::tuple>();
      if (!pair[0].cast<std::string>().empty() && !pair[1].attr("training").cast<bool>()) {
        eval_submodules_.push_back(py::reinterpret_borrow<py::object>(pair[1]));
      }
    }
    Classifier::train(true);
    SetPythonMode(true);
  }

  ~PythonModuleClassifier() override {
    py::gil_scoped_acquire gil;
    buffers_.clear();
    eval_submodules_.clear();
    sync_batch_norm_type_ = py::object();
    module_ = py::object();
  }

  at::Tensor forward(const at::Tensor& images) override {
    return ForwardForUpdate(images, at::Tensor());
  }

  // Keys for a module that takes them: zeros outside a training update
  // (validation and the load-time check run in eval mode anyway).
  at::Tensor ForwardForUpdate(const at::Tensor& images, const at::Tensor& update_keys) override {
    py::gil_scoped_acquire gil;
    try {
      py::object out;
      if (takes_keys_) {
        at::Tensor keys = update_keys.defined()
                              ? update_keys
                              : at::zeros({images.size(0)}, images.options().dtype(at::kLong));
        out = module_(ToPython(images), ToPython(keys));
      } else {
        out = module_(ToPython(images));
      }
      at::Tensor logits = ToTensor(out, "the module's forward returned a value that");
      RebindReassignedBuffers();
      return logits;
    } catch (py::error_already_set& e) {
      const std::string text = PythonError(e);
      TORCH_CHECK(false, "the Python module's forward raised: ", text);
    }
  }

  std::string Describe() const override { return description_; }

  void train(bool on) override {
    Classifier::train(on);
    py::gil_scoped_acquire gil;
    SetPythonMode(on);
  }

  const LayerReporter* layer_reporter() const override { return this; }

  std::string method() const override {
    return "Python module: torch.nn module types over named_modules(), and two trial "
           "training forwards (buffers changed, torch's generator drawn)";
  }

  absl::StatusOr<std::vector<ReportedLayer>> ReportLayers() const override {
    py::gil_scoped_acquire gil;
    try {
      py::object found =
          HarnessLayers().attr("audit")(module_, TrialShape(input_shape_), takes_keys_);
      std::vector<ReportedLayer> layers;
      for (const py::handle item : found) {
        const auto entry = item.cast<py::tuple>();
        layers.push_back({entry[0].cast<std::string>(), entry[1].cast<std::string>(),
                          entry[2].cast<std::string>()});
      }
      return layers;
    } catch (py::error_already_set& e) {
      return absl::InternalError(
          absl::StrCat("layer audit of the Python module: Python raised: ", PythonError(e)));
    }
  }

 private:
  // A buffer of a Python module, mirrored by `tensor`.
  struct MirroredBuffer {
    py::object owner;
    std::string name;
    at::Tensor tensor;
  };

  // REQUIRES: the GIL.
  void SetPythonMode(bool on) {
    module_.attr("train")(on);
    if (!on) return;
    for (const py::object& m : eval_submodules_) m.attr("train")(false);
  }

  // Registers `python`'s own parameters and buffers in `mirror` (the same
  // tensors) and mirrors its children the same way, recursively. A
  // parameter that does not require grad is state: a buffer.
  void Mirror(const py::object& python, torch::nn::Module& mirror) {
    for (const py::handle item : python.attr("named_parameters")(py::arg("recurse") = false)) {
      const auto pair = item.cast<py::tuple>();
      const std::string name = pair[0].cast<std::string>();
      at::Tensor tensor = ToTensor(pair[1], name);
      if (tensor.requires_grad()) {
        mirror.register_parameter(name, tensor, /*requires_grad=*/true);
      } else {
        mirror.register_buffer(name, tensor);
      }
    }
    for (const py::handle item : python.attr("named_buffers")(py::arg("recurse") = false)) {
      const auto pair = item.cast<py::tuple>();
      const std::string name = pair[0].cast<std::string>();
      at::Tensor tensor = ToTensor(pair[1], name);
      mirror.register_buffer(name, tensor);
      buffers_.push_back({python, name, tensor});
    }
    for (const py::handle item : python.attr("named_children")()) {
      const auto pair = item.cast<py::tuple>();
      const py::object child = py::reinterpret_borrow<py::object>(pair[1]);
      if (py::isinstance(child, sync_batch_norm_type_)) {
        MirrorSyncBatchNorm(pair[0].cast<std::string>(), child, mirror);
        continue;
      }
      auto sub = std::make_shared<torch::nn::Module>(
          py::str(py::type::of(child).attr("__qualname__")).cast<std::string>());
      Mirror(child, *sub);
      mirror.register_module(pair[0].cast<std::string>(), sub);
    }
  }

  // A receipt_parity_layers.SyncBatchNorm2d is mirrored by the harness's
  // own layer over the same tensors, which the Python layer's training
  // forward calls: the update's passes (model/sync_batch_norm_update.h)
  // find it among the classifier's modules and drive it through the
  // calling thread's pass, as they drive a built-in model's.
  // REQUIRES: the GIL.
  static void MirrorSyncBatchNorm(const std::string& name, const py::object& python,
                                  torch::nn::Module& mirror) {
    auto layer = std::make_shared<SyncBatchNorm2dImpl>(python.attr("layer").cast<int>(),
                                                       SyncBatchNormState(python));
    mirror.register_module(name, layer);
    python.attr("_harness_forward") = py::cpp_function([layer](const py::object& x) {
      const at::Tensor input = ToTensor(x, "SyncBatchNorm2d's input");
      at::Tensor output;
      {
        // Its synchronized forward waits for the other ranks' sums: the
        // other ranks of a replay are this process's threads, whose
        // forwards need the GIL meanwhile.
        const py::gil_scoped_release unlocked;
        output = layer->forward(input);
      }
      return ToPython(output);
    });
  }

  // A buffer forward replaced by a new tensor (self.count = self.count + 1):
  // the mirrored tensor takes its value and is put back, so both hold one
  // tensor again. REQUIRES: the GIL.
  void RebindReassignedBuffers() {
    for (MirroredBuffer& b : buffers_) {
      py::object now = b.owner.attr(b.name.c_str());
      if (!THPVariable_Check(now.ptr())) continue;
      const at::Tensor& tensor = THPVariable_Unpack(now.ptr());
      if (tensor.unsafeGetTensorImpl() == b.tensor.unsafeGetTensorImpl()) continue;
      torch::NoGradGuard no_grad;
      b.tensor.set_data(tensor.detach());
      b.owner.attr("__setattr__")(b.name, ToPython(b.tensor));
    }
  }

  py::object module_;
  std::string description_;
  bool takes_keys_;
  std::vector<int64_t> input_shape_;
  py::object sync_batch_norm_type_;
  std::vector<py::object> eval_submodules_;
  std::vector<MirroredBuffer> buffers_;
};

absl::Status Invalid(const PythonModuleRequest& r, const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat(r.written, ": ", message));
}

// The Python module the request names, imported. REQUIRES: the GIL.
py::module_ ImportSource(const PythonModuleRequest& r) {
  py::module_ sys = py::module_::import("sys");
  for (auto it = r.search_path.rbegin(); it != r.search_path.rend(); ++it) {
    py::list path = sys.attr("path");
    if (!path.contains(*it)) path.insert(0, *it);
  }
  if (r.file.empty()) return py::module_::import(r.module.c_str());
  py::module_ util = py::module_::import("importlib.util");
  const std::string name =
      absl::StrCat("receipt_parity_model_", fs::path(r.file).stem().string());
  py::object spec = util.attr("spec_from_file_location")(name, r.file);
  py::object module = util.attr("module_from_spec")(spec);
  sys.attr("modules")[py::str(name)] = module;
  spec.attr("loader").attr("exec_module")(module);
  return module.cast<py::module_>();
}

// Whether forward takes the keys: forward(self, images) or
// forward(self, images, keys). REQUIRES: the GIL.
absl::StatusOr<bool> ForwardTakesKeys(const PythonModuleRequest& r, const py::object& module) {
  py::module_ inspect = py::module_::import("inspect");
  py::object parameters = inspect.attr("signature")(module.attr("forward")).attr("parameters");
  const size_t count = py::len(parameters);
  if (count == 1) return false;
  if (count == 2) return true;
  return Invalid(r, absl::StrCat("forward takes ", count,
                                 " arguments; the harness calls forward(images) or "
                                 "forward(images, keys) with keys each example's int64 key "
                                 "for the update ([N]), for keyed dropout "
                                 "(receipt_parity_layers.KeyedDropout)"));
}

// SHA-1 of the module's source file (hashlib), so the model revision
// changes with the team's code. REQUIRES: the GIL.
std::string SourceDigest(const py::module_& source) {
  if (!py::hasattr(source, "__file__") || source.attr("__file__").is_none()) return "none";
  py::object data = py::module_::import("pathlib")
                        .attr("Path")(source.attr("__file__"))
                        .attr("read_bytes")();
  return py::module_::import("hashlib").attr("sha1")(data).attr("hexdigest")()
      .cast<std::string>();
}

// Builds the module, seeded. REQUIRES: the GIL.
absl::StatusOr<std::shared_ptr<Classifier>> BuildWithGil(const PythonModuleRequest& r) {
  py::module_ source = ImportSource(r);
  if (!py::hasattr(source, r.factory.c_str())) {
    return Invalid(r, absl::StrCat("has no '", r.factory, "' (the options' factory)"));
  }
  py::object kwargs = py::module_::import("json").attr("loads")(r.kwargs_json);
  if (!py::isinstance<py::dict>(kwargs)) return Invalid(r, "kwargs must be a JSON object");
  py::module_ torch = py::module_::import("torch");
  torch.attr("manual_seed")(r.seed);
  py::object module = source.attr(r.factory.c_str())(**kwargs.cast<py::dict>());
  if (!py::isinstance(module, torch.attr("nn").attr("Module"))) {
    return Invalid(r, absl::StrCat("'", r.factory, "' made a ", TypeName(module),
                                   ", not a torch.nn.Module"));
  }
  absl::StatusOr<bool> takes_keys = ForwardTakesKeys(r, module);
  if (!takes_keys.ok()) return takes_keys.status();
  HarnessLayers().attr("sync_batch_norms")(module, TrialShape(r.input_shape), *takes_keys);
  const std::string type =
      py::str(py::type::of(module).attr("__qualname__")).cast<std::string>();
  return std::make_shared<PythonModuleClassifier>(
      module,
      absl::StrCat("python_module(", r.file.empty() ? r.module : fs::path(r.file).filename().string(),
                   ":", r.factory, ";type=", type, ";source_sha1=", SourceDigest(source),
                   ";kwargs=", r.kwargs_json, ";in=", absl::StrJoin(r.input_shape, "x"),
                   ";classes=", r.num_classes, ")"),
      *takes_keys, r.input_shape);
}

class EmbeddedPython : public PythonSupport {
 public:
  absl::StatusOr<std::shared_ptr<Classifier>> Build(
      const PythonModuleRequest& r) const override {
    if (absl::Status s = StartInterpreter(); !s.ok()) return Invalid(r, std::string(s.message()));
    py::gil_scoped_acquire gil;
    try {
      return BuildWithGil(r);
    } catch (py::error_already_set& e) {
      return Invalid(r, absl::StrCat("Python raised: ", PythonError(e)));
    } catch (const std::exception& e) {
      return Invalid(r, e.what());
    }
  }
};

const bool registered = [] {
  RegisterPythonSupport(std::make_unique<EmbeddedPython>());
  return true;
}();

}  // namespace
}  // namespace receipt_parity

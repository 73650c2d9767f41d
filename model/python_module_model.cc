#include "model/python_module_model.h"

#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "model/logits_check.h"
#include "model/python_support_loader.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;

class PythonModuleBuilder : public ClassifierBuilder {
 public:
  PythonModuleBuilder(PythonModuleOptions options, std::string kwargs_json)
      : options_(std::move(options)), kwargs_json_(std::move(kwargs_json)) {}

  absl::Status Check(const ClassifierSpec& spec) const override { return Build(spec).status(); }

  absl::StatusOr<std::shared_ptr<Classifier>> Build(const ClassifierSpec& spec) const override {
    PythonModuleRequest request;
    request.factory = options_.factory();
    request.kwargs_json = kwargs_json_;
    request.seed = spec.init_seed;
    request.input_shape = spec.input_shape;
    request.num_classes = spec.num_classes;
    // The config's folder (what a relative path resolves against), on
    // sys.path for `module` and for the source's own imports.
    const std::string folder =
        fs::path(spec.ResolvePath("any_file")).parent_path().string();
    if (!folder.empty()) request.search_path.push_back(folder);
    // Then the harness's layers (receipt_parity_layers.py).
    if (std::string layers = PythonLayersFolder(); !layers.empty()) {
      request.search_path.push_back(layers);
    }
    if (!options_.path().empty()) {
      request.file = spec.ResolvePath(options_.path());
      request.written = absl::StrCat("path: ", request.file);
      std::error_code error;
      if (!fs::is_regular_file(request.file, error)) {
        return absl::NotFoundError(absl::StrCat(request.written, ": no such file"));
      }
    } else {
      request.module = options_.module();
      request.written = absl::StrCat("module: ", request.module);
    }
    absl::StatusOr<const PythonSupport*> python = LoadPythonSupport();
    if (!python.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat(request.written, ": ", python.status().message()));
    }
    absl::StatusOr<std::shared_ptr<Classifier>> model = (*python)->Build(request);
    if (!model.ok()) return model.status();
    if (absl::Status s = CheckLogits(**model, spec.input_shape, spec.num_classes,
                                     request.written);
        !s.ok()) {
      return s;
    }
    return model;
  }

 private:
  PythonModuleOptions options_;
  std::string kwargs_json_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ClassifierBuilder>> PythonModuleModelFactory::CreateTyped(
    const PythonModuleOptions& options) const {
  if (options.path().empty() == options.module().empty()) {
    return absl::InvalidArgumentError(
        "path, module: name one: a .py file (relative to the config's folder) or an "
        "importable module");
  }
  if (options.factory().empty()) {
    return absl::InvalidArgumentError(
        "factory: missing; name the class or function in the module that builds the "
        "torch.nn.Module");
  }
  if (!options.kwargs_json().empty() && options.has_kwargs()) {
    return absl::InvalidArgumentError("kwargs, kwargs_json: give the keyword arguments once");
  }
  std::string kwargs_json = "{}";
  if (options.has_kwargs()) {
    kwargs_json.clear();
    if (!google::protobuf::util::MessageToJsonString(options.kwargs(), &kwargs_json).ok()) {
      return absl::InvalidArgumentError("kwargs: cannot be written as JSON");
    }
  } else if (!options.kwargs_json().empty()) {
    google::protobuf::Struct parsed;
    if (!google::protobuf::util::JsonStringToMessage(options.kwargs_json(), &parsed).ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "kwargs_json: not a JSON object: ", options.kwargs_json()));
    }
    kwargs_json = options.kwargs_json();
  }
  return std::make_unique<PythonModuleBuilder>(options, kwargs_json);
}

}  // namespace receipt_parity

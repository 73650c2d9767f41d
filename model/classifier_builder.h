// The model plugin kind ("model"): what a model plugin's factory makes from
// its options is a ClassifierBuilder, which builds the run's Classifier
// (model/classifier.h) for the run's inputs and labels.
//
//   class MyModelFactory : public TypedFactory<ClassifierBuilder, MyModelOptions> {
//    public:
//     std::string name() const override { return "my_model"; }  // stable
//    private:
//     absl::StatusOr<std::unique_ptr<ClassifierBuilder>> CreateTyped(
//         const MyModelOptions& options) const override;
//   };
//   static PluginRegistrar<MyModelFactory, ClassifierBuilder> registrar;
//
// A config selects it with
//   model { name: "my_model" options { [type.googleapis.com/receipt_parity.MyModelOptions] { ... } } }
// (model/model_forms.h). The built-ins: cnn, mlp, linear
// (model/builtin_models.h) and torchscript (model/torchscript_model.h).
//
// Thread safety: a builder is immutable; Check and Build may be called
// concurrently (each Build makes a new Classifier).
#ifndef RECEIPT_PARITY_MODEL_CLASSIFIER_BUILDER_H_
#define RECEIPT_PARITY_MODEL_CLASSIFIER_BUILDER_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/classifier_interface.h"
#include "model/classifier_spec.h"

namespace receipt_parity {

class ClassifierBuilder {
 public:
  static constexpr char kKind[] = "model";

  virtual ~ClassifierBuilder() = default;

  // Whether Build(spec) will succeed, checked when the config is loaded,
  // before any receipt is read. InvalidArgument (NotFound for a missing
  // file) whose message starts with the option it is about
  // ("conv_channels: ...", "path: FILE: ..."); the caller puts the config
  // field ("model.options: ") in front.
  virtual absl::Status Check(const ClassifierSpec& spec) const = 0;

  // A new classifier mapping [N, input_shape...] float to [N, num_classes]
  // logits. Every call with the same spec gives bitwise-identical initial
  // parameters (and buffers). Errors as Check's.
  virtual absl::StatusOr<std::shared_ptr<Classifier>> Build(
      const ClassifierSpec& spec) const = 0;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_MODEL_CLASSIFIER_BUILDER_H_

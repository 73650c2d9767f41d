#include "conformance/model_conformance.h"

#include <algorithm>
#include <exception>
#include <iostream>
#include <map>
#include <memory>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/grad_mode.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "checkpoint/shard_state.h"
#include "model/classifier_builder.h"
#include "model/layer_audit.h"
#include "model/logits_check.h"
#include "model/model_state.h"
#include "parity/tensor_comparison.h"
#include "plugins/plugin_selection.h"

namespace receipt_parity {
namespace {

constexpr double kBatchTolerance = 1e-5;
const std::vector<std::string>& RandomKinds() {
  static const std::vector<std::string> kinds = {kDropout, kRandom};
  return kinds;
}

at::Tensor Receipts(const std::vector<int64_t>& shape, int64_t n, uint64_t seed) {
  std::vector<int64_t> sizes = {n};
  sizes.insert(sizes.end(), shape.begin(), shape.end());
  at::Generator generator = at::detail::createCPUGenerator(seed);
  return at::rand(sizes, generator, at::TensorOptions().dtype(at::kFloat));
}

std::string Shape(const at::Tensor& t) {
  return absl::StrCat(std::string(c10::toString(t.scalar_type())), " [",
                      absl::StrJoin(t.sizes(), ", "), "]");
}

NamedTensors StateOf(Classifier& model) {
  NamedTensors named;
  for (const auto& [name, tensor] : ModelStateByName(model)) named.emplace_back(name, tensor);
  return named;
}

// Names of `a` that differ from `b` bitwise (or that `b` lacks).
std::vector<std::string> BitwiseDifferences(const NamedTensors& a, const NamedTensors& b,
                                            const std::string& what) {
  absl::StatusOr<TensorListComparison> comparison = CompareTensors(a, b, 0, 0);
  if (!comparison.ok()) return {absl::StrCat(what, ": ", comparison.status().message())};
  std::vector<std::string> names;
  for (const TensorComparison& c : comparison->tensors) {
    if (!c.bitwise_equal) names.push_back(absl::StrCat(what, ": ", c.name, " differs"));
  }
  return names;
}

class ModelSuite {
 public:
  ModelSuite(const ModelSuiteOptions& options, const ClassifierBuilder& builder)
      : options_(options), builder_(builder) {
    spec_.input_shape = options.input_shape;
    spec_.num_classes = options.num_classes;
    spec_.init_seed = options.init_seed;
  }

  // Check(spec) refusing the suite's spec is an error, not a finding: the
  // options or the spec (--input_shape, --num_classes) are wrong.
  absl::StatusOr<SuiteReport> Run() {
    if (absl::Status s = builder_.Check(spec_); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("model.options: ", s.message()));
    }
    absl::StatusOr<std::shared_ptr<Classifier>> first = builder_.Build(spec_);
    absl::StatusOr<std::shared_ptr<Classifier>> second = builder_.Build(spec_);
    if (!first.ok() || !second.ok()) {
      report_.Add("Build(spec)", {std::string((first.ok() ? second : first).status().message())});
      return report_;
    }
    std::cout << "  model: " << (*first)->Describe() << "\n";
    Guarded("two builds start bitwise the same",
            [&] { return BitwiseDifferences(StateOf(**second), StateOf(**first), "second build"); });
    const LayerAudit audit = Audit(**first);
    Guarded("forward: float [N, num_classes], finite, N = 0, 1, 2, 5", [&] { return Shapes(**first); });
    Guarded("deterministic forward", [&] { return Deterministic(**first, audit); });
    Guarded("an example's logits do not depend on its batch", [&] { return BatchIndependent(**first); });
    Guarded("every trainable parameter gets a finite gradient", [&] { return Gradients(**first); });
    Guarded("parameters and buffers round-trip through a checkpoint",
            [&] { return CheckpointRoundTrip(**first); });
    return report_;
  }

 private:
  // Runs a check, LibTorch's exceptions a failure of it.
  template <typename Check>
  void Guarded(const std::string& name, Check check) {
    try {
      report_.Add(name, check());
    } catch (const std::exception& e) {
      report_.Add(name, {absl::StrCat("LibTorch: ", FirstLineOf(e))});
    }
  }

  LayerAudit Audit(Classifier& model) {
    absl::StatusOr<LayerAudit> audit = AuditLayers(model);
    std::vector<std::string> failures;
    if (!audit.ok()) {
      report_.Add("the layer audit runs", {std::string(audit.status().message())});
      return LayerAudit();
    }
    std::cout << "  layer audit (" << audit->method() << "): " << audit->findings_size()
              << " findings, " << audit->parity_safe_size() << " parity-safe\n";
    for (const LayerFinding& f : audit->parity_safe()) {
      std::cout << "    parity-safe " << f.kind() << ": " << f.module() << " (" << f.module_type()
                << ")\n";
    }
    for (const LayerFinding& f : audit->findings()) {
      std::cout << "    finding " << f.kind() << ": " << f.module() << " (" << f.module_type()
                << "): " << f.effect() << "\n";
      if (std::find(options_.allowed_findings.begin(), options_.allowed_findings.end(),
                    f.kind()) == options_.allowed_findings.end()) {
        failures.push_back(absl::StrCat(f.kind(), " at module '", f.module(), "' (",
                                        f.module_type(), "): ", f.effect(),
                                        " (declare the kind in allowed_findings to accept it)"));
      }
    }
    report_.Add("the layer audit finds nothing undeclared", failures);
    return *audit;
  }

  std::vector<std::string> Shapes(Classifier& model) {
    std::vector<std::string> failures;
    if (absl::Status s = CheckLogits(model, spec_.input_shape, spec_.num_classes, "the model");
        !s.ok()) {
      failures.push_back(std::string(s.message()));
    }
    model.eval();
    torch::NoGradGuard no_grad;
    for (int64_t n : {0, 1, 2, 5}) {
      const at::Tensor logits = model.forward(Receipts(spec_.input_shape, n, 11));
      if (logits.scalar_type() != at::kFloat || logits.dim() != 2 || logits.size(0) != n ||
          logits.size(1) != spec_.num_classes) {
        failures.push_back(absl::StrCat(n, " receipts give ", Shape(logits), ", not Float [", n,
                                        ", ", spec_.num_classes, "]"));
      } else if (!AllFinite(logits)) {
        failures.push_back(absl::StrCat(n, " receipts give logits that are not finite"));
      }
    }
    model.train();
    return failures;
  }

  std::vector<std::string> Deterministic(Classifier& model, const LayerAudit& audit) {
    std::vector<std::string> failures;
    const at::Tensor images = Receipts(spec_.input_shape, 5, 12);
    torch::NoGradGuard no_grad;
    model.eval();
    failures = BitwiseDifferences({{"eval logits", model.forward(images)}},
                                  {{"eval logits", model.forward(images)}}, "two eval forwards");
    model.train();
    for (const LayerFinding& f : audit.findings()) {
      if (std::find(RandomKinds().begin(), RandomKinds().end(), f.kind()) != RandomKinds().end()) {
        std::cout << "  training forward not compared: " << f.kind() << " at '" << f.module()
                  << "' draws per-rank randomness (the layer audit's finding)\n";
        return failures;
      }
    }
    const at::Tensor keys = at::arange(5, at::kLong) * 7919 + 3;
    const at::Tensor a = model.ForwardForUpdate(images, keys);
    const at::Tensor b = model.ForwardForUpdate(images, keys);
    for (const std::string& d : BitwiseDifferences({{"training logits", a}}, {{"training logits", b}},
                                                   "two training forwards with the same keys")) {
      failures.push_back(d);
    }
    return failures;
  }

  std::vector<std::string> BatchIndependent(Classifier& model) {
    std::vector<std::string> failures;
    const at::Tensor images = Receipts(spec_.input_shape, 5, 13);
    torch::NoGradGuard no_grad;
    model.eval();
    const at::Tensor together = model.forward(images);
    for (int64_t i = 0; i < 5; ++i) {
      const at::Tensor alone = model.forward(images.narrow(0, i, 1));
      const double diff = (alone[0] - together[i]).abs().max().item<double>();
      const double scale = std::max(1.0, together[i].abs().max().item<double>());
      if (!(diff <= kBatchTolerance * scale)) {
        failures.push_back(absl::StrCat("example ", i, " alone differs from it in a batch of 5 by ",
                                        diff, " (eval mode)"));
      }
    }
    model.train();
    return failures;
  }

  std::vector<std::string> Gradients(Classifier& model) {
    std::vector<std::string> failures;
    model.train();
    model.zero_grad();
    const at::Tensor images = Receipts(spec_.input_shape, 4, 14);
    model.ForwardForUpdate(images, at::arange(4, at::kLong)).sum().backward();
    for (const auto& item : model.named_parameters()) {
      if (!item.value().requires_grad()) continue;
      const at::Tensor grad = item.value().grad();
      if (!grad.defined()) {
        failures.push_back(absl::StrCat(item.key(), " gets no gradient"));
      } else if (!AllFinite(grad)) {
        failures.push_back(absl::StrCat(item.key(), "'s gradient is not finite"));
      }
    }
    model.zero_grad();
    return failures;
  }

  std::vector<std::string> CheckpointRoundTrip(Classifier& model) {
    std::vector<std::string> failures;
    {
      torch::NoGradGuard no_grad;
      at::Generator generator = at::detail::createCPUGenerator(99);
      for (auto& [name, tensor] : ModelStateByName(model)) {
        if (at::isFloatingType(tensor.scalar_type())) {
          tensor.add_(at::randn(tensor.sizes(), generator, tensor.options()) * 0.01);
        } else {
          tensor.add_(3);
        }
      }
    }
    ShardState shard;
    shard.owned_tensors = ModelStateByName(model);
    absl::StatusOr<std::string> bytes = SerializeShardState(shard);
    if (!bytes.ok()) return {std::string(bytes.status().message())};
    absl::StatusOr<ShardState> read = DeserializeShardState(*bytes, "the suite's checkpoint");
    if (!read.ok()) return {std::string(read.status().message())};
    absl::StatusOr<std::shared_ptr<Classifier>> fresh = builder_.Build(spec_);
    if (!fresh.ok()) return {std::string(fresh.status().message())};
    if (absl::Status s = LoadModelState(**fresh, read->owned_tensors); !s.ok()) {
      return {std::string(s.message())};
    }
    failures = BitwiseDifferences(StateOf(**fresh), StateOf(model), "restored");
    const at::Tensor images = Receipts(spec_.input_shape, 3, 15);
    torch::NoGradGuard no_grad;
    model.eval();
    (*fresh)->eval();
    for (const std::string& d : BitwiseDifferences({{"logits", (*fresh)->forward(images)}},
                                                   {{"logits", model.forward(images)}},
                                                   "the restored model's eval forward")) {
      failures.push_back(absl::StrCat(d, ": the model holds state that is neither a parameter "
                                         "nor a buffer"));
    }
    model.train();
    return failures;
  }

  const ModelSuiteOptions& options_;
  const ClassifierBuilder& builder_;
  ClassifierSpec spec_;
  SuiteReport report_;
};

}  // namespace

absl::StatusOr<SuiteReport> RunModelSuite(const ModelSuiteOptions& options) {
  absl::StatusOr<std::unique_ptr<ClassifierBuilder>> builder =
      CreateSelectedPlugin<ClassifierBuilder>(options.selection, "model");
  if (!builder.ok()) return builder.status();
  return ModelSuite(options, **builder).Run();
}

}  // namespace receipt_parity

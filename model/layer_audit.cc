#include "model/layer_audit.h"

#include <exception>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/instancenorm.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace receipt_parity {
namespace {

std::string EffectOf(const std::string& kind) {
  static const auto* effects = new std::map<std::string, std::string>{
      {kBatchNormTraining,
       "batch norm in training mode: normalizes by each rank's local batch "
       "statistics, so an N-worker update differs from the one-worker update "
       "unless every rank's batch equals the global batch; its running "
       "statistics are updated from each rank's own batch and differ across "
       "ranks (nothing reduces them)"},
      {kInstanceNormRunningStats,
       "instance norm tracking running statistics: its training output is per "
       "example, but the running statistics are updated from each rank's own "
       "batch and differ across ranks, so evaluation differs by rank"},
      {kDropout,
       "dropout in training mode: each rank draws its mask from its own random "
       "generator, so the N-worker update is not the one-worker update (the "
       "masks differ from the reference's)"},
      {kRandom,
       "draws random numbers in forward from each rank's own generator, so the "
       "N-worker update is not the one-worker update"},
      {kStateUpdate,
       "assigns module state in forward from each rank's own batch: nothing "
       "reduces it, so it can differ across ranks"},
      {kBufferUpdate,
       "updates a buffer in place in forward from each rank's own batch: "
       "nothing reduces it, so it can differ across ranks"},
      {kModuleWithBuffers,
       "holds buffers that its forward may update from each rank's own batch: "
       "nothing reduces them, so they can differ across ranks (the run compares "
       "them at its end)"}};
  auto it = effects->find(kind);
  return it == effects->end() ? "" : it->second;
}

LayerFinding MakeFinding(const std::string& module, const std::string& type,
                         const std::string& kind) {
  LayerFinding finding;
  finding.set_module(module);
  finding.set_module_type(type);
  finding.set_kind(kind);
  finding.set_effect(EffectOf(kind));
  return finding;
}

void Summarize(LayerAudit* audit) {
  audit->set_clean(audit->findings_size() == 0);
  if (audit->clean()) {
    audit->set_summary(
        "no module whose output depends on the local batch or on per-rank "
        "random state, and none that updates state in forward");
    return;
  }
  std::vector<std::string> names;
  for (const LayerFinding& f : audit->findings()) {
    names.push_back(absl::StrCat(f.module().empty() ? "(model)" : f.module(), " (",
                                 f.module_type(), ": ", f.kind(), ")"));
  }
  audit->set_summary(absl::StrCat(
      audit->findings_size(), " module(s) that break parity unless accounted for: ",
      absl::StrJoin(names, ", ")));
}

// ---- C++ module tree ----

template <typename Impl>
bool Is(const torch::nn::Module& m) {
  return dynamic_cast<const Impl*>(&m) != nullptr;
}

// The finding kind and type name of one module; kind empty: none.
std::pair<std::string, std::string> ClassifyModule(const torch::nn::Module& m) {
  using namespace torch::nn;  // NOLINT: the module types read better bare.
  if (Is<BatchNorm1dImpl>(m)) return {kBatchNormTraining, "BatchNorm1d"};
  if (Is<BatchNorm2dImpl>(m)) return {kBatchNormTraining, "BatchNorm2d"};
  if (Is<BatchNorm3dImpl>(m)) return {kBatchNormTraining, "BatchNorm3d"};
  for (auto [tracks, type] :
       {std::make_pair(Is<InstanceNorm1dImpl>(m) &&
                           dynamic_cast<const InstanceNorm1dImpl&>(m).options.track_running_stats(),
                       "InstanceNorm1d"),
        std::make_pair(Is<InstanceNorm2dImpl>(m) &&
                           dynamic_cast<const InstanceNorm2dImpl&>(m).options.track_running_stats(),
                       "InstanceNorm2d"),
        std::make_pair(Is<InstanceNorm3dImpl>(m) &&
                           dynamic_cast<const InstanceNorm3dImpl&>(m).options.track_running_stats(),
                       "InstanceNorm3d")}) {
    if (tracks) return {kInstanceNormRunningStats, type};
  }
  if (Is<DropoutImpl>(m)) return {kDropout, "Dropout"};
  if (Is<Dropout2dImpl>(m)) return {kDropout, "Dropout2d"};
  if (Is<Dropout3dImpl>(m)) return {kDropout, "Dropout3d"};
  if (Is<AlphaDropoutImpl>(m)) return {kDropout, "AlphaDropout"};
  if (Is<FeatureAlphaDropoutImpl>(m)) return {kDropout, "FeatureAlphaDropout"};
  if (!m.named_buffers(/*recurse=*/false).is_empty()) {
    return {kModuleWithBuffers, m.name()};
  }
  return {"", ""};
}

// ---- TorchScript graphs ----

namespace jit = torch::jit;

// Walks graphs, knowing which submodule each module-typed value is.
class GraphWalker {
 public:
  explicit GraphWalker(LayerAudit* audit) : audit_(audit) {}

  void WalkMethod(const jit::Module& module, const std::string& path,
                  const std::string& method) {
    if (!visited_.insert(absl::StrCat(path, "#", method)).second) return;
    std::optional<jit::Method> m = module.find_method(method);
    if (!m.has_value()) return;
    std::shared_ptr<jit::Graph> graph = m->graph();
    modules_[graph->inputs()[0]] = {module, path};
    WalkBlock(graph->block(), path);
  }

 private:
  struct ModuleRef {
    jit::Module module;
    std::string path;
  };

  void WalkBlock(const jit::Block* block, const std::string& path) {
    for (const jit::Node* node : block->nodes()) {
      VisitNode(node, path);
      for (const jit::Block* inner : node->blocks()) WalkBlock(inner, path);
    }
  }

  void VisitNode(const jit::Node* node, const std::string& path);
  void VisitGetAttr(const jit::Node* node);
  void VisitCallFunction(const jit::Node* node, const std::string& path);
  void Add(const std::string& path, const jit::Node* node, const std::string& kind) {
    const std::string type = node->kind().toQualString();
    if (!seen_.insert(absl::StrCat(path, "|", type, "|", kind)).second) return;
    *audit_->add_findings() = MakeFinding(path, type, kind);
  }

  LayerAudit* audit_;
  std::map<const jit::Value*, ModuleRef> modules_;
  std::set<const jit::Value*> buffers_;
  std::set<std::string> visited_;
  std::set<std::string> seen_;
};

bool IsConstantFalse(const jit::Value* v) {
  std::optional<c10::IValue> constant = jit::toIValue(v);
  return constant.has_value() && constant->isBool() && !constant->toBool();
}

bool IsNone(const jit::Value* v) { return v->type()->kind() == c10::TypeKind::NoneType; }

bool IsRandomOp(const std::string& op) {
  static const auto* ops = new std::set<std::string>{
      "aten::bernoulli", "aten::bernoulli_", "aten::rand", "aten::rand_like",
      "aten::randn", "aten::randn_like", "aten::randint", "aten::randint_like",
      "aten::randperm", "aten::normal", "aten::normal_", "aten::uniform_",
      "aten::exponential_", "aten::geometric_", "aten::cauchy_", "aten::log_normal_",
      "aten::multinomial", "aten::poisson", "aten::random_", "aten::rrelu",
      "aten::rrelu_", "aten::rrelu_with_noise"};
  return ops->count(op) > 0;
}

bool IsDropoutOp(const std::string& op) {
  static const auto* ops = new std::set<std::string>{
      "aten::dropout", "aten::dropout_", "aten::feature_dropout",
      "aten::feature_dropout_", "aten::alpha_dropout", "aten::alpha_dropout_",
      "aten::feature_alpha_dropout", "aten::feature_alpha_dropout_"};
  return ops->count(op) > 0;
}

void GraphWalker::VisitNode(const jit::Node* node, const std::string& path) {
  const std::string op = node->kind().toQualString();
  if (node->kind() == c10::prim::GetAttr) return VisitGetAttr(node);
  if (node->kind() == c10::prim::SetAttr) return Add(path, node, kStateUpdate);
  if (node->kind() == c10::prim::CallMethod) {
    auto callee = modules_.find(node->inputs()[0]);
    if (callee != modules_.end()) {
      WalkMethod(callee->second.module, callee->second.path, node->s(c10::attr::name));
    }
    return;
  }
  if (node->kind() == c10::prim::CallFunction) return VisitCallFunction(node, path);
  const auto inputs = node->inputs();
  if (op == "aten::batch_norm" && inputs.size() > 5 && !IsConstantFalse(inputs[5])) {
    return Add(path, node, kBatchNormTraining);
  }
  if (op == "aten::instance_norm" && inputs.size() > 5 && !IsNone(inputs[3]) &&
      !IsConstantFalse(inputs[5])) {
    return Add(path, node, kInstanceNormRunningStats);
  }
  if (IsDropoutOp(op) && inputs.size() > 2 && !IsConstantFalse(inputs[2])) {
    return Add(path, node, kDropout);
  }
  if (IsRandomOp(op)) return Add(path, node, kRandom);
  if (node->kind().is_aten() && op.back() == '_' && !inputs.empty() &&
      buffers_.count(inputs[0]) > 0) {
    Add(path, node, kBufferUpdate);
  }
}

// A submodule (remembered with its path) or a buffer (remembered for
// in-place updates).
void GraphWalker::VisitGetAttr(const jit::Node* node) {
  auto owner = modules_.find(node->inputs()[0]);
  if (owner == modules_.end()) return;
  const std::string name = node->s(c10::attr::name);
  const jit::Module& module = owner->second.module;
  const c10::ClassTypePtr type = module.type();
  std::optional<size_t> slot = type->findAttributeSlot(name);
  if (!slot.has_value()) return;
  if (type->getAttribute(*slot)->kind() == c10::TypeKind::ClassType &&
      type->getAttribute(*slot)->expectRef<c10::ClassType>().is_module()) {
    const std::string& parent = owner->second.path;
    modules_[node->output()] = {module.attr(name).toModule(),
                                parent.empty() ? name : absl::StrCat(parent, ".", name)};
  } else if (type->is_buffer(*slot)) {
    buffers_.insert(node->output());
  }
}

// A TorchScript function called from forward: its graph holds the module's
// nodes too (it sees no `self`).
void GraphWalker::VisitCallFunction(const jit::Node* node, const std::string& path) {
  const c10::FunctionTypePtr type = node->inputs()[0]->type()->cast<c10::FunctionType>();
  if (type == nullptr) return;
  jit::GraphFunction* function = jit::tryToGraphFunction(*type->function());
  if (function == nullptr) return;
  if (!visited_.insert(absl::StrCat(path, "#fn:", function->qualname().qualifiedName()))
           .second) {
    return;
  }
  WalkBlock(function->graph()->block(), path);
}

}  // namespace

LayerAudit AuditModuleTree(const torch::nn::Module& root) {
  LayerAudit audit;
  audit.set_method("torch::nn module tree");
  // The root by reference: it need not live in a shared_ptr.
  if (auto [kind, type] = ClassifyModule(root); !kind.empty()) {
    *audit.add_findings() = MakeFinding("", type, kind);
  }
  for (const auto& item : root.named_modules(/*name_prefix=*/"", /*include_self=*/false)) {
    auto [kind, type] = ClassifyModule(*item.value());
    if (!kind.empty()) *audit.add_findings() = MakeFinding(item.key(), type, kind);
  }
  Summarize(&audit);
  return audit;
}

absl::StatusOr<LayerAudit> AuditScriptModule(const torch::jit::Module& root) {
  LayerAudit audit;
  audit.set_method(
      "TorchScript graphs: forward and every method and function it calls");
  try {
    if (!root.find_method("forward").has_value()) {
      return absl::InvalidArgumentError("layer audit: the TorchScript module has no forward");
    }
    GraphWalker walker(&audit);
    walker.WalkMethod(root, "", "forward");
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("layer audit: reading the TorchScript graphs: LibTorch: ", e.what()));
  }
  Summarize(&audit);
  return audit;
}

absl::StatusOr<LayerAudit> AuditLayers(const Classifier& model) {
  if (const torch::jit::Module* script = model.script_module(); script != nullptr) {
    return AuditScriptModule(*script);
  }
  try {
    return AuditModuleTree(model);
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("layer audit: the module tree: LibTorch: ", e.what()));
  }
}

std::string DescribeFinding(const LayerFinding& finding) {
  return absl::StrCat(finding.module().empty() ? "(model)" : finding.module(), " (",
                      finding.module_type(), "): ", finding.effect());
}

bool HasFinding(const LayerAudit& audit, const std::string& kind) {
  for (const LayerFinding& f : audit.findings()) {
    if (f.kind() == kind) return true;
  }
  return false;
}

}  // namespace receipt_parity

#include "model/layer_audit.h"

#include <algorithm>
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

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/keyed_dropout.h"
#include "model/sync_batch_norm.h"

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
       "them at its end)"},
      {kKeyedDropout,
       "keyed dropout: the mask of an example is drawn from its key and the "
       "update (model/keyed_dropout.h), not from a rank's generator, so every "
       "rank and the one-worker reference drop the same elements of it"},
      {kSyncBatchNorm,
       "synchronized batch norm: normalizes by the statistics of the whole "
       "update's accepted examples on every rank and in every micro-batch "
       "(model/sync_batch_norm.h), so its output, its gradient and its running "
       "statistics are the one-worker reference's, the same on every rank"}};
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

// Which kind names a module best when several operations of it are
// findings (batch norm's forward updates a buffer before it normalizes):
// the lower, the better.
int KindRank(const std::string& kind) {
  static const auto* order = new std::vector<std::string>{
      kBatchNormTraining, kInstanceNormRunningStats, kDropout, kRandom,
      kBufferUpdate, kStateUpdate, kModuleWithBuffers};
  for (size_t i = 0; i < order->size(); ++i) {
    if ((*order)[i] == kind) return static_cast<int>(i);
  }
  return static_cast<int>(order->size());
}

std::string SafeSummary(const LayerAudit& audit) {
  if (audit.parity_safe_size() == 0) return "";
  std::vector<std::string> names;
  for (const LayerFinding& f : audit.parity_safe()) {
    names.push_back(absl::StrCat(f.module(), " (", f.module_type(), ": ", f.kind(), ")"));
  }
  return absl::StrCat("; ", audit.parity_safe_size(),
                      " parity-safe: ", absl::StrJoin(names, ", "));
}

void Summarize(LayerAudit* audit) {
  audit->set_clean(audit->findings_size() == 0);
  if (audit->clean()) {
    audit->set_summary(absl::StrCat(
        "no module whose output depends on the local batch or on per-rank "
        "random state, and none that updates state in forward",
        SafeSummary(*audit)));
    return;
  }
  std::vector<std::string> names;
  for (const LayerFinding& f : audit->findings()) {
    names.push_back(absl::StrCat(f.module().empty() ? "(model)" : f.module(), " (",
                                 f.module_type(), ": ", f.kind(), ")"));
  }
  audit->set_summary(absl::StrCat(
      audit->findings_size(), " module(s) that break parity unless accounted for: ",
      absl::StrJoin(names, ", "), SafeSummary(*audit)));
}

// ---- C++ module tree ----

template <typename Impl>
bool Is(const torch::nn::Module& m) {
  return dynamic_cast<const Impl*>(&m) != nullptr;
}

// A dropout that drops nothing.
bool DropsNothing(const torch::nn::Module& m) {
  using namespace torch::nn;  // NOLINT: the module types read better bare.
  if (const auto* d = dynamic_cast<const DropoutImpl*>(&m)) return d->options.p() == 0;
  if (const auto* d = dynamic_cast<const Dropout2dImpl*>(&m)) return d->options.p() == 0;
  if (const auto* d = dynamic_cast<const Dropout3dImpl*>(&m)) return d->options.p() == 0;
  if (const auto* d = dynamic_cast<const AlphaDropoutImpl*>(&m)) return d->options.p() == 0;
  if (const auto* d = dynamic_cast<const FeatureAlphaDropoutImpl*>(&m)) {
    return d->options.p() == 0;
  }
  if (const auto* d = dynamic_cast<const KeyedDropoutImpl*>(&m)) return d->p() == 0;
  return false;
}

// The finding kind and type name of one module; kind empty: none. A module
// in eval mode (it runs as in evaluation: batch norm on its running
// statistics, dropout off) and a dropout of p = 0 are none.
std::pair<std::string, std::string> ClassifyModule(const torch::nn::Module& m) {
  using namespace torch::nn;  // NOLINT: the module types read better bare.
  if (!m.is_training() || DropsNothing(m)) return {"", ""};
  if (Is<KeyedDropoutImpl>(m)) return {kKeyedDropout, "KeyedDropout"};
  if (Is<SyncBatchNorm2dImpl>(m)) return {kSyncBatchNorm, "SyncBatchNorm2d"};
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

// Which module `module` is, whichever attribute path reaches it: its own
// parameters and buffers (torch.jit.load gives a module saved under two
// attributes two objects that share those tensors), or, for a module
// without tensors, the object.
std::string ModuleIdentity(const jit::Module& module) {
  std::vector<std::string> tensors;
  for (const jit::NameTensor& p : module.named_parameters(/*recurse=*/false)) {
    tensors.push_back(absl::StrCat(reinterpret_cast<uintptr_t>(p.value.unsafeGetTensorImpl())));
  }
  for (const jit::NameTensor& b : module.named_buffers(/*recurse=*/false)) {
    tensors.push_back(absl::StrCat(reinterpret_cast<uintptr_t>(b.value.unsafeGetTensorImpl())));
  }
  if (tensors.empty()) {
    return absl::StrCat("object ", reinterpret_cast<uintptr_t>(module._ivalue().get()));
  }
  return absl::StrCat("tensors ", absl::StrJoin(tensors, ","));
}

// Walks graphs, knowing which submodule each module-typed value is.
class GraphWalker {
 public:
  explicit GraphWalker(LayerAudit* audit) : audit_(audit) {}

  // A submodule in eval mode runs as in evaluation (the harness keeps each
  // module's mode): it is not searched. The model itself is trained in
  // training mode whatever mode it was saved in.
  void WalkMethod(const jit::Module& module, const std::string& path,
                  const std::string& method) {
    if (!path.empty() && !module.is_training()) return;
    if (!visited_.insert(absl::StrCat(path, "#", method)).second) return;
    std::optional<jit::Method> m = module.find_method(method);
    if (!m.has_value()) return;
    identities_.emplace(path, ModuleIdentity(module));
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
  // One finding per module: a later operation of the same module replaces
  // the kind only when it names the module better (KindRank).
  void Add(const std::string& path, const jit::Node* node, const std::string& kind) {
    const std::string type = node->kind().toQualString();
    auto identity = identities_.find(path);
    const std::string key = identity == identities_.end() ? path : identity->second;
    auto [it, added] = finding_of_module_.emplace(key, audit_->findings_size());
    if (added) {
      *audit_->add_findings() = MakeFinding(path, type, kind);
      return;
    }
    LayerFinding* finding = audit_->mutable_findings(it->second);
    std::string other = kind;
    if (KindRank(kind) < KindRank(finding->kind())) {
      other = finding->kind();
      LayerFinding better = MakeFinding(finding->module(), type, kind);
      *better.mutable_also() = finding->also();
      *finding = std::move(better);
    }
    if (other != finding->kind() &&
        std::find(finding->also().begin(), finding->also().end(), other) ==
            finding->also().end()) {
      finding->add_also(other);
    }
  }

  // The value of `v` when the graph fixes it: a constant, or an attribute
  // of a module the walk knows (self.p, self.training).
  std::optional<c10::IValue> Resolve(const jit::Value* v) const;
  // `v` resolves to false, or to the number 0.
  bool ResolvesFalse(const jit::Value* v) const;
  bool ResolvesZero(const jit::Value* v) const;

  LayerAudit* audit_;
  std::map<const jit::Value*, ModuleRef> modules_;
  std::set<const jit::Value*> buffers_;
  std::set<std::string> visited_;
  std::map<std::string, std::string> identities_;
  std::map<std::string, int> finding_of_module_;
};

std::optional<c10::IValue> GraphWalker::Resolve(const jit::Value* v) const {
  if (std::optional<c10::IValue> constant = jit::toIValue(v); constant.has_value()) {
    return constant;
  }
  const jit::Node* node = v->node();
  if (node->kind() != c10::prim::GetAttr) return std::nullopt;
  auto owner = modules_.find(node->inputs()[0]);
  if (owner == modules_.end()) return std::nullopt;
  const std::string name = node->s(c10::attr::name);
  if (!owner->second.module.hasattr(name)) return std::nullopt;
  return owner->second.module.attr(name);
}

bool GraphWalker::ResolvesFalse(const jit::Value* v) const {
  std::optional<c10::IValue> value = Resolve(v);
  return value.has_value() && value->isBool() && !value->toBool();
}

bool GraphWalker::ResolvesZero(const jit::Value* v) const {
  std::optional<c10::IValue> value = Resolve(v);
  return value.has_value() && ((value->isDouble() && value->toDouble() == 0) ||
                               (value->isInt() && value->toInt() == 0));
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

// A functional dropout's qualified name, as a loaded module names it
// ("__torch__.torch.nn.functional.dropout") or not.
bool IsFunctionalDropout(std::string qualified_name) {
  constexpr absl::string_view kLoadedPrefix = "__torch__.";
  if (absl::StartsWith(qualified_name, kLoadedPrefix)) {
    qualified_name.erase(0, kLoadedPrefix.size());
  }
  static const auto* names = new std::set<std::string>{
      "torch.nn.functional.dropout", "torch.nn.functional.dropout1d",
      "torch.nn.functional.dropout2d", "torch.nn.functional.dropout3d",
      "torch.nn.functional.alpha_dropout", "torch.nn.functional.feature_alpha_dropout"};
  return names->count(qualified_name) > 0;
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
  if (op == "aten::batch_norm" && inputs.size() > 5 && !ResolvesFalse(inputs[5])) {
    return Add(path, node, kBatchNormTraining);
  }
  if (op == "aten::instance_norm" && inputs.size() > 5 && !IsNone(inputs[3]) &&
      !ResolvesFalse(inputs[5])) {
    return Add(path, node, kInstanceNormRunningStats);
  }
  // aten::dropout(input, p, train): nothing with p = 0 or train false.
  if (IsDropoutOp(op)) {
    if (inputs.size() > 2 && !ResolvesFalse(inputs[2]) && !ResolvesZero(inputs[1])) {
      Add(path, node, kDropout);
    }
    return;
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
  // F.dropout(input, p, training, ...) and its variants, called with p = 0
  // or training false (nn.Dropout(p=0.0), a dropout in eval mode), drop
  // nothing: their graph is not searched.
  const auto inputs = node->inputs();
  if (IsFunctionalDropout(function->qualname().qualifiedName()) && inputs.size() > 3 &&
      (ResolvesZero(inputs[2]) || ResolvesFalse(inputs[3]))) {
    return;
  }
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
  // Each module once, under the first name that reaches it.
  std::set<const torch::nn::Module*> seen = {&root};
  auto classify = [&audit](const std::string& name, const torch::nn::Module& m) {
    auto [kind, type] = ClassifyModule(m);
    if (kind.empty()) return;
    *(IsParitySafe(kind) ? audit.add_parity_safe() : audit.add_findings()) =
        MakeFinding(name, type, kind);
  };
  // The root by reference: it need not live in a shared_ptr.
  classify("", root);
  for (const auto& item : root.named_modules(/*name_prefix=*/"", /*include_self=*/false)) {
    if (!seen.insert(item.value().get()).second) continue;
    classify(item.key(), *item.value());
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

LayerAudit AuditReportedLayers(const std::string& method,
                               const std::vector<ReportedLayer>& layers) {
  LayerAudit audit;
  audit.set_method(method);
  // One finding per module: its best-naming kind, the others in `also`.
  std::map<std::string, int> finding_of_module;
  for (const ReportedLayer& layer : layers) {
    if (IsParitySafe(layer.kind)) {
      *audit.add_parity_safe() = MakeFinding(layer.module, layer.module_type, layer.kind);
      continue;
    }
    auto [it, added] = finding_of_module.emplace(layer.module, audit.findings_size());
    if (added) {
      *audit.add_findings() = MakeFinding(layer.module, layer.module_type, layer.kind);
      continue;
    }
    LayerFinding* finding = audit.mutable_findings(it->second);
    std::string other = layer.kind;
    if (KindRank(layer.kind) < KindRank(finding->kind())) {
      other = finding->kind();
      LayerFinding better = MakeFinding(finding->module(), finding->module_type(), layer.kind);
      *better.mutable_also() = finding->also();
      *finding = std::move(better);
    }
    if (other != finding->kind() &&
        std::find(finding->also().begin(), finding->also().end(), other) ==
            finding->also().end()) {
      finding->add_also(other);
    }
  }
  Summarize(&audit);
  return audit;
}

absl::StatusOr<LayerAudit> AuditLayers(const Classifier& model) {
  if (const LayerReporter* reporter = model.layer_reporter(); reporter != nullptr) {
    absl::StatusOr<std::vector<ReportedLayer>> layers = reporter->ReportLayers();
    if (!layers.ok()) return layers.status();
    return AuditReportedLayers(reporter->method(), *layers);
  }
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

bool IsParitySafe(const std::string& kind) {
  return kind == kKeyedDropout || kind == kSyncBatchNorm;
}

bool HasFinding(const LayerAudit& audit, const std::string& kind) {
  for (const LayerFinding& f : audit.findings()) {
    if (f.kind() == kind) return true;
  }
  return false;
}

}  // namespace receipt_parity

// The layer audit: before training, find the modules of a model whose
// output depends on the local batch or on per-rank random state, and those
// that update state in forward. Data parallelism does not reduce any of
// them: batch norm in training mode normalizes by each rank's own batch,
// dropout draws each rank's own mask, and buffers updated in forward
// (running statistics) drift apart across ranks. Each finding names the
// module, its kind and what it does to parity.
//
// Each module is one finding at most, however many paths or operations
// lead to it (a module registered under two names; batch norm that both
// updates a buffer and normalizes: the finding is its batch norm). A module
// in eval mode is not a finding (it runs as in evaluation: batch norm on its
// running statistics, dropout off; the harness keeps each module's mode),
// nor is a dropout with p = 0. Keyed dropout (model/keyed_dropout.h) is
// listed in parity_safe, not in findings.
//
// C++ models are searched by module type over the torch::nn module tree
// (children recursively): BatchNorm1d/2d/3d (the harness trains in training
// mode), InstanceNorm1d/2d/3d with track_running_stats, Dropout,
// Dropout2d/3d, AlphaDropout, FeatureAlphaDropout, KeyedDropout, and any
// other module that holds buffers of its own. A model that reports its own
// layers (Classifier::layer_reporter(): a Python module, whose audit is
// receipt_parity_layers.audit) is taken at its word. A TorchScript model
// (Classifier::script_module() non-null) is searched by node kind in the
// graph of forward and of every method (prim::CallMethod) and function
// (prim::CallFunction) it calls, naming the submodule whose method holds the
// node: aten::batch_norm and aten::instance_norm whose `training` /
// `use_input_stats` is not the constant False, aten::dropout and its
// feature/alpha variants likewise, random ops (aten::bernoulli, rand*,
// normal, ...), prim::SetAttr, and in-place ops on a buffer.
//
// Thread safety: reads the model only; do not train it meanwhile.
#ifndef RECEIPT_PARITY_MODEL_LAYER_AUDIT_H_
#define RECEIPT_PARITY_MODEL_LAYER_AUDIT_H_

#include <string>
#include <vector>

#include <torch/nn/module.h>

#include "absl/status/statusor.h"
#include "model/classifier.h"  // also declares torch::jit::Module
#include "model/layer_audit.pb.h"

namespace receipt_parity {

// The finding kinds (LayerFinding.kind); stable: written into artifacts.
inline constexpr char kBatchNormTraining[] = "batch_norm_training";
inline constexpr char kInstanceNormRunningStats[] = "instance_norm_running_stats";
inline constexpr char kDropout[] = "dropout";
inline constexpr char kRandom[] = "random";
inline constexpr char kStateUpdate[] = "state_update";
inline constexpr char kBufferUpdate[] = "buffer_update";
inline constexpr char kModuleWithBuffers[] = "module_with_buffers";
// Parity-safe kinds (LayerAudit.parity_safe).
inline constexpr char kKeyedDropout[] = "keyed_dropout";
// Parity-safe: synchronized batch norm (model/sync_batch_norm.h), whose
// statistics are the whole update's.
inline constexpr char kSyncBatchNorm[] = "sync_batch_norm";

// A kind listed in parity_safe: it does not make the audit unclean.
bool IsParitySafe(const std::string& kind);

// The model's findings: through script_module() when it is non-null, else
// over its module tree. `policy` is left empty (the trainer sets it).
// Errors: Internal when LibTorch throws while reading a graph.
absl::StatusOr<LayerAudit> AuditLayers(const Classifier& model);

// The module tree of `root` (named_modules, the root named "").
LayerAudit AuditModuleTree(const torch::nn::Module& root);

// The graphs of `root`'s forward and what it calls. InvalidArgument when
// `root` has no forward method.
absl::StatusOr<LayerAudit> AuditScriptModule(const torch::jit::Module& root);

// The layers a model reported itself (Classifier::layer_reporter()), as
// findings: parity-safe kinds in parity_safe, each other module one
// finding (its best-naming kind; the rest in `also`).
LayerAudit AuditReportedLayers(const std::string& method,
                               const std::vector<ReportedLayer>& layers);

// What `finding` does to parity, for an explanation: "bn (BatchNorm2d):
// batch norm in training mode: ...".
std::string DescribeFinding(const LayerFinding& finding);

// True when `audit` has a finding of `kind`.
bool HasFinding(const LayerAudit& audit, const std::string& kind);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_MODEL_LAYER_AUDIT_H_

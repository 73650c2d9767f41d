#include "model/sync_batch_norm.h"

#include <algorithm>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/grad_mode.h>

namespace receipt_parity {
namespace {

thread_local SyncBatchNormPass* current_pass = nullptr;

// [C] as [1, C, 1, 1].
at::Tensor PerChannel(const at::Tensor& t) { return t.view({1, -1, 1, 1}); }

// The valid rows as 0/1 of `dtype`, [N, 1, 1, 1] (every row when undefined).
at::Tensor RowWeights(const at::Tensor& valid, const at::Tensor& x) {
  if (!valid.defined()) return at::ones({x.size(0), 1, 1, 1}, x.options());
  TORCH_CHECK(valid.dim() == 1 && valid.size(0) == x.size(0),
              "synchronized batch norm: ", valid.numel(), " valid flags for ", x.size(0),
              " rows");
  return valid.to(x.options()).view({-1, 1, 1, 1});
}

int64_t ValidRows(const at::Tensor& valid, const at::Tensor& x) {
  return valid.defined() ? valid.sum().item<int64_t>() : x.size(0);
}

}  // namespace

SyncBatchNormPassScope::SyncBatchNormPassScope(SyncBatchNormPass* pass)
    : previous_(current_pass) {
  current_pass = pass;
}

SyncBatchNormPassScope::~SyncBatchNormPassScope() { current_pass = previous_; }

SyncBatchNormPass* CurrentSyncBatchNormPass() { return current_pass; }

SyncBatchNorm2dImpl::SyncBatchNorm2dImpl(int64_t channels, int layer)
    : channels_(channels), layer_(layer) {
  weight_ = register_parameter("weight", at::ones({channels}));
  bias_ = register_parameter("bias", at::zeros({channels}));
  running_mean_ = register_buffer("running_mean", at::zeros({channels}));
  running_var_ = register_buffer("running_var", at::ones({channels}));
  num_batches_tracked_ = register_buffer("num_batches_tracked", at::zeros({}, at::kLong));
}

SyncBatchNorm2dImpl::SyncBatchNorm2dImpl(int layer, const SyncBatchNormTensors& tensors)
    : channels_(tensors.weight.size(0)), layer_(layer) {
  weight_ = register_parameter("weight", tensors.weight);
  bias_ = register_parameter("bias", tensors.bias);
  running_mean_ = register_buffer("running_mean", tensors.running_mean);
  running_var_ = register_buffer("running_var", tensors.running_var);
  num_batches_tracked_ = register_buffer("num_batches_tracked", tensors.num_batches_tracked);
}

at::Tensor SyncBatchNorm2dImpl::Normalize(const at::Tensor& x, const at::Tensor& mean,
                                          const at::Tensor& var) {
  const at::Tensor scale = weight_ * at::rsqrt(var + kEps);
  return (x - PerChannel(mean)) * PerChannel(scale) + PerChannel(bias_);
}

at::Tensor SyncBatchNorm2dImpl::Direct(const at::Tensor& x, const at::Tensor& valid,
                                       bool update_running) {
  const int64_t count = ValidRows(valid, x) * x.size(2) * x.size(3);
  if (count == 0) return Normalize(x, running_mean_, running_var_);
  const at::Tensor rows = RowWeights(valid, x);
  const at::Tensor mean = (x * rows).sum({0, 2, 3}) / static_cast<double>(count);
  const at::Tensor centered = x - PerChannel(mean);
  const at::Tensor var = (centered.pow(2) * rows).sum({0, 2, 3}) / static_cast<double>(count);
  if (update_running) {
    UpdateRunningStatistics(mean.detach().to(at::kDouble), var.detach().to(at::kDouble), count);
  }
  return centered * PerChannel(weight_ * at::rsqrt(var + kEps)) + PerChannel(bias_);
}

void SyncBatchNorm2dImpl::Collect(const at::Tensor& x, SyncBatchNormPass& pass) {
  const torch::NoGradGuard no_grad;
  BatchNormLayerPass& mine = pass.layers.at(layer_);
  const at::Tensor xd = x.to(at::kDouble);
  const at::Tensor rows = RowWeights(pass.valid, xd);
  if (!mine.local_sum.defined()) {
    mine.local_sum = at::zeros({channels_}, xd.options());
    mine.local_sum_of_squares = at::zeros({channels_}, xd.options());
  }
  mine.local_sum += (xd * rows).sum({0, 2, 3});
  mine.local_sum_of_squares += (xd * xd * rows).sum({0, 2, 3});
  mine.local_count += ValidRows(pass.valid, x) * x.size(2) * x.size(3);
}

void SyncBatchNorm2dImpl::AddSurrogate(const at::Tensor& x, SyncBatchNormPass& pass) {
  const BatchNormLayerPass& mine = pass.layers.at(layer_);
  const double count = static_cast<double>(mine.count);
  const at::Tensor rows = RowWeights(pass.valid, x);
  const at::Tensor mean = mine.mean.to(x.scalar_type());
  const at::Tensor mean_gradient = (mine.mean_adjoint / count).to(x.scalar_type());
  const at::Tensor var_gradient = (mine.var_adjoint / count).to(x.scalar_type());
  // d/dx_i of sum_c g_mean[c] * mean[c] + g_var[c] * var[c] over the update:
  // (g_mean + 2 g_var (x_i - mean)) / count (the mean's own dependence on
  // x_i drops out of the variance's, since sum_j (x_j - mean) = 0).
  const at::Tensor contribution =
      ((x * rows).sum({0, 2, 3}) * mean_gradient).sum() +
      (((x - PerChannel(mean)).pow(2) * rows).sum({0, 2, 3}) * var_gradient).sum();
  pass.surrogate = pass.surrogate.defined() ? pass.surrogate + contribution : contribution;
}

at::Tensor SyncBatchNorm2dImpl::forward(const at::Tensor& input) {
  TORCH_CHECK(input.dim() == 4 && input.size(1) == channels_,
              "SyncBatchNorm2d: expected [N, ", channels_, ", H, W], got ", input.sizes());
  // Under autocast a convolution hands on bfloat16: normalized in the
  // layer's own dtype.
  const at::Tensor x =
      input.scalar_type() == weight_.scalar_type() ? input : input.to(weight_.scalar_type());
  if (!is_training()) return Normalize(x, running_mean_, running_var_);
  SyncBatchNormPass* pass = CurrentSyncBatchNormPass();
  if (pass == nullptr) return Direct(x, at::Tensor(), /*update_running=*/false);
  const at::ScalarType dtype = weight_.scalar_type();
  switch (pass->phase) {
    case BatchNormPhase::kDirect:
      return Direct(x, pass->valid, /*update_running=*/true);
    case BatchNormPhase::kCollect: {
      if (layer_ > pass->target) return input;
      if (layer_ == pass->target) {
        Collect(x, *pass);
        return input;
      }
      const BatchNormLayerPass& mine = pass->layers.at(layer_);
      return Normalize(x, mine.mean.to(dtype), mine.var.to(dtype));
    }
    case BatchNormPhase::kApply: {
      const BatchNormLayerPass& mine = pass->layers.at(layer_);
      return Normalize(x, mine.mean_leaf, mine.var_leaf);
    }
    case BatchNormPhase::kSurrogate: {
      if (layer_ > pass->target) return input;
      if (layer_ == pass->target) {
        AddSurrogate(x, *pass);
        return input;
      }
      const BatchNormLayerPass& mine = pass->layers.at(layer_);
      return Normalize(x, mine.mean_leaf, mine.var_leaf);
    }
  }
  return input;
}

void SyncBatchNorm2dImpl::UpdateRunningStatistics(const at::Tensor& mean,
                                                  const at::Tensor& var, int64_t count) {
  const torch::NoGradGuard no_grad;
  const at::Tensor unbiased =
      count > 1 ? var * (static_cast<double>(count) / static_cast<double>(count - 1)) : var;
  const at::ScalarType dtype = running_mean_.scalar_type();
  running_mean_.copy_(running_mean_ * (1 - kMomentum) + mean.to(dtype) * kMomentum);
  running_var_.copy_(running_var_ * (1 - kMomentum) + unbiased.to(dtype) * kMomentum);
  num_batches_tracked_.add_(1);
}

std::vector<SyncBatchNorm2dImpl*> SyncBatchNorms(torch::nn::Module& model) {
  std::vector<SyncBatchNorm2dImpl*> layers;
  for (const std::shared_ptr<torch::nn::Module>& m : model.modules(/*include_self=*/true)) {
    if (auto* layer = dynamic_cast<SyncBatchNorm2dImpl*>(m.get())) layers.push_back(layer);
  }
  std::sort(layers.begin(), layers.end(),
            [](const SyncBatchNorm2dImpl* a, const SyncBatchNorm2dImpl* b) {
              return a->layer() < b->layer();
            });
  for (size_t i = 0; i < layers.size(); ++i) {
    TORCH_CHECK(layers[i]->layer() == static_cast<int>(i),
                "synchronized batch norms: layer indices must be 0..n-1, each once");
  }
  return layers;
}

}  // namespace receipt_parity

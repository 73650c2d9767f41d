#include "model/sync_batch_norm.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <tuple>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/custom_class.h>

#include "absl/strings/str_cat.h"

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

// What a kSynchronized forward leaves its backward besides tensors to save
// (a context's saved data holds it as a capsule): the sum across the ranks
// and the valid rows (undefined: every row; a custom function's tensor
// inputs must be defined).
struct HeldForBackward : torch::CustomClassHolder {
  HeldForBackward(std::shared_ptr<StatisticsSum> s, at::Tensor r)
      : sum(std::move(s)), rows(std::move(r)) {}
  std::shared_ptr<StatisticsSum> sum;
  at::Tensor rows;
};

// y = (x - mean) * weight / sqrt(var + eps) + bias with the update's mean
// and var given (LibTorch's fused batch norm over given statistics); its
// backward adds the loss's gradient with respect to them over the ranks and
// carries it to x's valid rows (`rows`, 0/1 [N, 1, 1, 1]; undefined: every
// row) over the update's `count` elements per channel.
class SynchronizedNorm : public torch::autograd::Function<SynchronizedNorm> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x,
                            const at::Tensor& weight, const at::Tensor& bias,
                            const at::Tensor& mean, const at::Tensor& var, int64_t count,
                            c10::intrusive_ptr<HeldForBackward> held) {
    ctx->save_for_backward({x, weight, mean, var});
    ctx->saved_data["count"] = count;
    ctx->saved_data["held"] = c10::IValue::make_capsule(std::move(held));
    // A rank with no rows takes part in the sums all the same.
    if (x.numel() == 0) return x.clone();
    return at::batch_norm(x, weight, bias, mean, var, /*training=*/false, /*momentum=*/0,
                          SyncBatchNorm2dImpl::kEps, /*cudnn_enabled=*/false);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &weight = saved[1], &mean = saved[2], &var = saved[3];
    const double count = static_cast<double>(ctx->saved_data["count"].toInt());
    const auto& held = *static_cast<HeldForBackward*>(ctx->saved_data["held"].toCapsule().get());
    StatisticsSum& sum = *held.sum;
    const at::Tensor& rows = held.rows;
    // With the statistics held: gy * weight * invstd, and the weight's and
    // bias's gradients, sum gy (x - mean) invstd and sum gy.
    auto [gx, grad_weight, grad_bias] =
        x.numel() == 0
            ? std::make_tuple(at::zeros_like(x), at::zeros_like(weight), at::zeros_like(weight))
            : at::native_batch_norm_backward(grad_outputs[0].contiguous(), x, weight, mean, var,
                                             /*save_mean=*/{}, /*save_invstd=*/{},
                                             /*train=*/false, SyncBatchNorm2dImpl::kEps,
                                             {true, true, true});
    const at::Tensor invstd = at::rsqrt(var + SyncBatchNorm2dImpl::kEps);
    // This rank's gradient of the loss with respect to the update's mean
    // and (biased) variance, added over the ranks.
    at::Tensor adjoints = at::cat({-(grad_bias * weight * invstd),
                                   grad_weight * weight * (-0.5) * invstd * invstd})
                              .to(at::kDouble);
    sum.Add(adjoints);
    // d mean / d x_i = 1 / count, d var / d x_i = 2 (x_i - mean) / count on
    // a valid row (the mean's own part drops out: the centered rows sum to
    // 0), nothing on a masked one: x_i * slope + offset per channel.
    const int64_t c = mean.size(0);
    const at::Tensor mean_gradient = adjoints.narrow(0, 0, c) / count;
    const at::Tensor slope = 2 * adjoints.narrow(0, c, c) / count;
    const at::Tensor offset = mean_gradient - slope * mean.to(at::kDouble);
    const at::Tensor slope_c = PerChannel(slope.to(x.scalar_type()));
    const at::Tensor offset_c = PerChannel(offset.to(x.scalar_type()));
    if (rows.defined()) {
      gx.add_(at::addcmul(offset_c, x, slope_c).mul_(rows));
    } else {
      gx.addcmul_(x, slope_c).add_(offset_c);
    }
    return {gx, grad_weight, grad_bias, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// This rank's valid rows' count per channel and the sums the ranks add
// (double, [3C + 1]): count * mean, count * var (biased) and count * mean^2
// of each channel (LibTorch's batch norm statistics in x's dtype), then the
// count; so the update's variance is (sum count var + sum count mean^2) / N
// - mean^2, every rank's part exact in double (Chan et al.'s combination).
at::Tensor LocalMoments(const at::Tensor& x, const at::Tensor& valid, bool every_row_valid,
                        int64_t channels) {
  const torch::NoGradGuard no_grad;
  const at::Tensor rows =
      every_row_valid ? x : x.index_select(0, valid.nonzero().squeeze(1).to(x.device()));
  const int64_t count = rows.size(0) * x.size(2) * x.size(3);
  const at::TensorOptions doubles = x.options().dtype(at::kDouble);
  if (count == 0) return at::zeros({3 * channels + 1}, doubles);
  auto [mean, var] = at::batch_norm_update_stats(rows, {}, {}, /*momentum=*/0);
  const at::Tensor mean_d = mean.to(at::kDouble);
  const double n = static_cast<double>(count);
  return at::cat({mean_d * n, var.to(at::kDouble) * n, mean_d * mean_d * n,
                  at::full({1}, n, doubles)});
}

}  // namespace

void StatisticsSum::Add(at::Tensor& tensor) {
  if (absl::Status s = sum_(tensor); !s.ok()) Fail(s);
}

void StatisticsSum::Fail(const absl::Status& status) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (first_error_.ok()) first_error_ = status;
  }
  throw std::runtime_error(std::string(status.message()));
}

absl::Status StatisticsSum::first_error() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return first_error_;
}

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

at::Tensor SyncBatchNorm2dImpl::Synchronized(const at::Tensor& x, const SyncBatchNormPass& pass) {
  TORCH_CHECK(pass.sum != nullptr, "synchronized batch norm: a synchronized pass without a sum");
  const bool every_row_valid = !pass.valid.defined() || pass.valid.all().item<bool>();
  at::Tensor moments = LocalMoments(x, pass.valid, every_row_valid, channels_);
  pass.sum->Add(moments);
  const int64_t c = channels_;
  const int64_t count = static_cast<int64_t>(moments[3 * c].item<double>());
  if (count == 0) {
    pass.sum->Fail(absl::InvalidArgumentError(absl::StrCat(
        "synchronized batch norm: layer ", layer_, " saw no valid example in the update")));
  }
  const double n = static_cast<double>(count);
  const at::Tensor mean = moments.narrow(0, 0, c) / n;
  const at::Tensor var = at::clamp_min(
      (moments.narrow(0, c, c) + moments.narrow(0, 2 * c, c)) / n - mean * mean, 0);
  UpdateRunningStatistics(mean, var, count);
  const at::ScalarType dtype = weight_.scalar_type();
  const at::Tensor rows = every_row_valid ? at::Tensor() : RowWeights(pass.valid, x);
  return SynchronizedNorm::apply(x.contiguous(), weight_, bias_, mean.to(dtype), var.to(dtype),
                                 count, c10::make_intrusive<HeldForBackward>(pass.sum, rows));
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
  switch (pass->phase) {
    case BatchNormPhase::kDirect:
      return Direct(x, pass->valid, /*update_running=*/true);
    case BatchNormPhase::kSynchronized:
      return Synchronized(x, *pass);
    case BatchNormPhase::kCollect:
      if (layer_ > pass->target) return input;
      if (layer_ == pass->target) {
        Collect(x, *pass);
        return input;
      }
      return Normalize(x, pass->layers.at(layer_).mean.to(dtype()),
                       pass->layers.at(layer_).var.to(dtype()));
    case BatchNormPhase::kApply:
      return Normalize(x, pass->layers.at(layer_).mean_leaf, pass->layers.at(layer_).var_leaf);
    case BatchNormPhase::kSurrogate:
      if (layer_ > pass->target) return input;
      if (layer_ == pass->target) {
        AddSurrogate(x, *pass);
        return input;
      }
      return Normalize(x, pass->layers.at(layer_).mean_leaf, pass->layers.at(layer_).var_leaf);
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

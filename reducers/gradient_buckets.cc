#include "reducers/gradient_buckets.h"

#include <exception>
#include <utility>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include "absl/strings/str_cat.h"
#include "collectives/collective_error.h"

namespace receipt_parity {

// Tells the buckets that one parameter's gradient is accumulated.
class GradientBuckets::ReadyHook : public torch::autograd::FunctionPostHook {
 public:
  ReadyHook(GradientBuckets* owner, int index) : owner_(owner), index_(index) {}

  torch::autograd::variable_list operator()(
      const torch::autograd::variable_list& outputs,
      const torch::autograd::variable_list& /*inputs*/) override {
    owner_->OnAccumulated(index_);
    return outputs;
  }

 private:
  GradientBuckets* owner_;
  int index_;
};

namespace {

absl::Status CheckTensors(const std::vector<at::Tensor>& tensors) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!tensors[i].defined()) {
      return absl::InvalidArgumentError(
          absl::StrCat("gradient buckets: gradient ", i, " is undefined"));
    }
    if (tensors[i].device() != tensors[0].device()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "gradient buckets: gradient ", i, " is on ", tensors[i].device().str(),
          ", gradient 0 on ", tensors[0].device().str()));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckPlan(const std::vector<at::Tensor>& tensors,
                       const std::vector<GradientBucket>& plan) {
  int next = 0;
  for (size_t b = 0; b < plan.size(); ++b) {
    if (plan[b].begin != next || plan[b].end <= plan[b].begin ||
        plan[b].end > static_cast<int>(tensors.size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "gradient buckets: bucket ", b, " holds [", plan[b].begin, ", ",
          plan[b].end, "); the buckets must cover the ", tensors.size(),
          " gradients in order"));
    }
    for (int i = plan[b].begin; i < plan[b].end; ++i) {
      if (tensors[i].scalar_type() != tensors[plan[b].begin].scalar_type()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "gradient buckets: bucket ", b, " mixes dtypes (gradient ", i, ")"));
      }
    }
    next = plan[b].end;
  }
  if (next != static_cast<int>(tensors.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gradient buckets: the buckets cover ", next, " of ", tensors.size(),
        " gradients"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<GradientBuckets>> GradientBuckets::Allocate(
    const std::vector<at::Tensor>& tensors, const std::vector<GradientBucket>& plan,
    int64_t rider_elements) {
  if (absl::Status s = CheckTensors(tensors); !s.ok()) return s;
  if (absl::Status s = CheckPlan(tensors, plan); !s.ok()) return s;
  std::unique_ptr<GradientBuckets> buckets(new GradientBuckets());
  try {
    for (size_t b = 0; b < plan.size(); ++b) {
      int64_t numel = 0;
      for (int i = plan[b].begin; i < plan[b].end; ++i) numel += tensors[i].numel();
      const bool last = b + 1 == plan.size();
      const int64_t rider = last ? rider_elements : 0;
      at::Tensor flat = at::zeros({numel + rider}, tensors[plan[b].begin].options());
      int64_t offset = 0;
      for (int i = plan[b].begin; i < plan[b].end; ++i) {
        const int64_t n = tensors[i].numel();
        buckets->views_.push_back(flat.narrow(0, offset, n).view(tensors[i].sizes()));
        buckets->bucket_of_.push_back(static_cast<int>(b));
        offset += n;
      }
      buckets->offsets_.push_back(
          b == 0 ? 0 : buckets->offsets_.back() + buckets->gradients_.back().numel());
      buckets->gradients_.push_back(flat.narrow(0, 0, numel));
      if (rider > 0) buckets->rider_ = flat.narrow(0, numel, rider);
      buckets->flats_.push_back(std::move(flat));
      buckets->bucket_sizes_.push_back(plan[b].end - plan[b].begin);
    }
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "gradient buckets: allocating");
  }
  buckets->ResetReadiness();
  return buckets;
}

absl::StatusOr<std::unique_ptr<GradientBuckets>> GradientBuckets::ForTensors(
    std::vector<at::Tensor>& tensors, const std::vector<GradientBucket>& plan) {
  absl::StatusOr<std::unique_ptr<GradientBuckets>> buckets = Allocate(tensors, plan);
  if (!buckets.ok()) return buckets.status();
  try {
    for (size_t i = 0; i < tensors.size(); ++i) {
      (*buckets)->views_[i].copy_(tensors[i]);
      tensors[i] = (*buckets)->views_[i];
    }
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "gradient buckets: copying in");
  }
  return buckets;
}

absl::StatusOr<std::unique_ptr<GradientBuckets>> GradientBuckets::ForParameters(
    const std::vector<at::Tensor>& params, const GradientReducer& reducer,
    int64_t rider_elements) {
  const std::vector<at::Tensor> layout(params.rbegin(), params.rend());
  absl::StatusOr<std::unique_ptr<GradientBuckets>> buckets =
      Allocate(layout, reducer.PlanBuckets(layout), rider_elements);
  if (!buckets.ok()) return buckets.status();
  try {
    for (size_t i = 0; i < layout.size(); ++i) {
      at::Tensor param = layout[i];
      if (param.grad().defined()) (*buckets)->views_[i].copy_(param.grad());
      param.mutable_grad() = (*buckets)->views_[i];
    }
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "gradient buckets: gradients as views");
  }
  if (absl::Status s = (*buckets)->AttachHooks(layout); !s.ok()) return s;
  return buckets;
}

absl::Status GradientBuckets::AttachHooks(const std::vector<at::Tensor>& params) {
  try {
    for (size_t i = 0; i < params.size(); ++i) {
      params_.push_back(params[i]);
      // A frozen parameter gets no gradient from backward: its bucket is
      // started by Reduce().
      if (!params[i].requires_grad()) continue;
      std::shared_ptr<torch::autograd::Node> accumulator =
          torch::autograd::impl::grad_accumulator(params[i]);
      if (accumulator == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            "gradient buckets: parameter ", params.size() - 1 - i,
            " has no gradient accumulator (not a leaf)"));
      }
      hook_keys_.push_back(accumulator->add_post_hook(
          std::make_unique<ReadyHook>(this, static_cast<int>(i))));
      accumulators_.push_back(std::move(accumulator));
    }
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "gradient buckets: gradient hooks");
  }
  return absl::OkStatus();
}

GradientBuckets::~GradientBuckets() {
  for (size_t i = 0; i < accumulators_.size(); ++i) {
    accumulators_[i]->del_post_hook(hook_keys_[i]);
  }
}

bool GradientBuckets::GradientsAreViews() const {
  for (size_t i = 0; i < params_.size(); ++i) {
    const at::Tensor& grad = params_[i].grad();
    if (!grad.defined() || grad.data_ptr() != views_[i].data_ptr() ||
        grad.sizes() != views_[i].sizes() || grad.strides() != views_[i].strides()) {
      return false;
    }
  }
  return true;
}

absl::Status GradientBuckets::ZeroGradients() {
  try {
    for (at::Tensor& gradients : gradients_) gradients.zero_();
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "gradient buckets: zeroing");
  }
  return absl::OkStatus();
}

void GradientBuckets::ResetReadiness() {
  armed_reducer_ = nullptr;
  armed_group_ = nullptr;
  pending_ = bucket_sizes_;
  accumulated_.assign(views_.size(), false);
  next_bucket_ = 0;
  start_error_ = absl::OkStatus();
}

void GradientBuckets::ArmBackward(GradientReducer& reducer, c10d::ProcessGroup& group) {
  std::lock_guard<std::mutex> lock(mutex_);
  ResetReadiness();
  if (!reducer.overlaps_backward() || accumulators_.empty()) return;
  armed_reducer_ = &reducer;
  armed_group_ = &group;
}

void GradientBuckets::OnAccumulated(int index) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (armed_reducer_ == nullptr) return;
  accumulated_[static_cast<size_t>(index)] = true;
  --pending_[bucket_of_[index]];
  StartReadyBuckets();
}

absl::StatusOr<std::vector<at::Tensor>> GradientBuckets::NotAccumulated() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (armed_reducer_ == nullptr) {
    return absl::FailedPreconditionError(
        "gradient buckets: which gradients a backward accumulated is known only after "
        "ArmBackward with a reducer that overlaps the backward");
  }
  std::vector<at::Tensor> left;
  for (size_t i = 0; i < views_.size(); ++i) {
    if (!accumulated_[i]) left.push_back(views_[i]);
  }
  return left;
}

void GradientBuckets::StartReadyBuckets() {
  while (start_error_.ok() && next_bucket_ < size() && pending_[next_bucket_] <= 0) {
    start_error_ = StartBucket(next_bucket_);
    ++next_bucket_;
  }
}

void GradientBuckets::ObserveStarts(StartObserver observer) {
  std::lock_guard<std::mutex> lock(mutex_);
  start_observer_ = std::move(observer);
}

absl::Status GradientBuckets::StartBucket(int bucket) {
  // Every rank plans the same buckets, so all skip the same empty ones.
  if (flats_[bucket].numel() == 0) return absl::OkStatus();
  if (start_observer_) {
    if (absl::Status s = start_observer_(bucket, gradients_[bucket], offsets_[bucket]);
        !s.ok()) {
      return s;
    }
  }
  try {
    return armed_reducer_->StartBucket(flats_[bucket], *armed_group_);
  } catch (const std::exception& e) {
    // A reducer that lets LibTorch's exception out.
    return CollectiveErrorToStatus(e, "LibTorch");
  }
}

absl::Status GradientBuckets::Reduce(GradientReducer& reducer, c10d::ProcessGroup& group) {
  std::lock_guard<std::mutex> lock(mutex_);
  armed_reducer_ = &reducer;
  armed_group_ = &group;
  for (int& pending : pending_) pending = 0;
  StartReadyBuckets();
  absl::Status status = start_error_;
  absl::Status finished;
  try {
    finished = reducer.FinishBuckets();
  } catch (const std::exception& e) {
    finished = CollectiveErrorToStatus(e, "LibTorch");
  }
  if (status.ok()) status = finished;
  ResetReadiness();
  return status;
}

absl::Status ReduceInBuckets(GradientReducer& reducer, std::vector<at::Tensor>& tensors,
                             c10d::ProcessGroup& group) {
  if (absl::Status s = CheckTensors(tensors); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<GradientBuckets>> buckets =
      GradientBuckets::ForTensors(tensors, reducer.PlanBuckets(tensors));
  if (!buckets.ok()) return buckets.status();
  return (*buckets)->Reduce(reducer, group);
}

}  // namespace receipt_parity

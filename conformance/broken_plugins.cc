// Deliberately broken plugins, one per conformance check they must fail
// (conformance/BUILD's expect_failure tests), as a team's shared library:
//
//   reducer swallows_errors          a failed all-reduce returns OK (a dead
//                                    peer goes unnoticed);
//   sampler_policy rank_dependent    the order depends on RANK (each rank
//                                    trains another plan);
//   sampler_policy repeats_undeclared pads with repeats but declares
//                                    exactly_once (the default);
//   loss_weighting weighs_masked     masked slots weigh like valid ones;
//   metric_dedup unsorted_once       each id once, in the gathered order;
//   model hidden_state               state outside parameters and buffers
//                                    (a forward counter), which a
//                                    checkpoint loses.
#include <cstdlib>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/empty.pb.h"
#include "metrics/metric_dedup.h"
#include "model/classifier_builder.h"
#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"
#include "reducers/gradient_reducer.h"
#include "samplers/sampler_policy.h"
#include "weighting/loss_weighting.h"

namespace receipt_parity {
namespace {

using Empty = google::protobuf::Empty;

class SwallowsErrors : public GradientReducer {
 public:
  absl::Status ReduceBucket(at::Tensor& flat, c10d::ProcessGroup& group) override {
    try {
      std::vector<at::Tensor> tensors = {flat};
      c10d::AllreduceOptions sum;
      sum.reduceOp = c10d::ReduceOp::SUM;
      group.allreduce(tensors, sum)->wait();
    } catch (const std::exception&) {
      // The mistake: the peer's death is dropped here.
    }
    return absl::OkStatus();
  }
  ReduceStats stats() const override { return {}; }
};

// Masked pads to a multiple of the global batch, after the receipts in an
// order rotated by the epoch and, wrongly, by this process's RANK.
class RankDependent : public SamplerPolicy {
 public:
  absl::StatusOr<GlobalOrder> Order(const OrderRequest& request) const override {
    if (request.num_examples < 0 || request.world_size < 1 || request.global_batch < 1) {
      return absl::InvalidArgumentError("rank_dependent: a bad request");
    }
    const char* rank = std::getenv("RANK");
    const int64_t shift = request.epoch + (rank != nullptr ? std::atoi(rank) : 0);
    GlobalOrder order;
    const int64_t n = request.num_examples;
    for (int64_t p = 0; p < n; ++p) order.slots.push_back({(p + shift) % n, true});
    while (n > 0 && order.slots.size() % request.global_batch != 0) {
      order.slots.push_back({0, false});
    }
    return order;
  }
};

// DistributedSampler(drop_last=False)'s padding without its declaration.
class RepeatsUndeclared : public SamplerPolicy {
 public:
  absl::StatusOr<GlobalOrder> Order(const OrderRequest& request) const override {
    if (request.num_examples < 0 || request.world_size < 1) {
      return absl::InvalidArgumentError("repeats_undeclared: a bad request");
    }
    GlobalOrder order;
    const int64_t n = request.num_examples;
    const int64_t total = (n + request.world_size - 1) / request.world_size * request.world_size;
    for (int64_t p = 0; p < total; ++p) {
      order.slots.push_back({(p * 7 + request.epoch) % n, true});
    }
    return order;
  }
};

class WeighsMasked : public LossWeighting {
 public:
  std::vector<double> Weights(const UpdateComposition& update, int rank) const override {
    size_t slots = 0;
    bool any_valid = false;
    for (const auto& ranks : update.by_rank) {
      slots += ranks.size();
      for (const WeightedSlot& s : ranks) any_valid = any_valid || s.valid;
    }
    return std::vector<double>(update.by_rank[rank].size(), any_valid ? 1.0 / slots : 0.0);
  }
  bool split_independent() const override { return true; }
};

class UnsortedOnce : public MetricDedup {
 public:
  absl::StatusOr<DedupResult> Dedup(const std::vector<Prediction>& gathered) const override {
    DedupResult result;
    std::map<std::string, int> seen;
    for (const Prediction& p : gathered) {
      if (seen.emplace(p.receipt_id, p.predicted).second) {
        result.counted.push_back(p);
      } else if (seen[p.receipt_id] != p.predicted) {
        return absl::FailedPreconditionError(absl::StrCat(p.receipt_id, " disagrees"));
      } else {
        ++result.duplicates_dropped;
      }
    }
    return result;
  }
};

class HiddenStateModel : public Classifier {
 public:
  explicit HiddenStateModel(const ClassifierSpec& spec) {
    int64_t inputs = 1;
    for (int64_t s : spec.input_shape) inputs *= s;
    linear_ = register_module("linear", torch::nn::Linear(inputs, spec.num_classes));
  }
  at::Tensor forward(const at::Tensor& images) override {
    if (is_training()) forwards_ += 1;
    return linear_->forward(images.flatten(1)) + forwards_;
  }
  std::string Describe() const override { return "hidden_state"; }

 private:
  torch::nn::Linear linear_{nullptr};
  double forwards_ = 0;  // the mistake: neither a parameter nor a buffer
};

class HiddenStateBuilder : public ClassifierBuilder {
 public:
  absl::Status Check(const ClassifierSpec&) const override { return absl::OkStatus(); }
  absl::StatusOr<std::shared_ptr<Classifier>> Build(const ClassifierSpec& spec) const override {
    torch::manual_seed(spec.init_seed);
    return std::shared_ptr<Classifier>(std::make_shared<HiddenStateModel>(spec));
  }
};

// A factory named kName over google.protobuf.Empty options making `Plugin`.
template <typename Product, typename Plugin, const char* kName>
class EmptyOptionsFactory : public TypedFactory<Product, Empty> {
 public:
  std::string name() const override { return kName; }

 private:
  absl::StatusOr<std::unique_ptr<Product>> CreateTyped(const Empty&) const override {
    return std::unique_ptr<Product>(std::make_unique<Plugin>());
  }
};

constexpr char kSwallowsErrors[] = "swallows_errors";
constexpr char kRankDependent[] = "rank_dependent";
constexpr char kRepeatsUndeclared[] = "repeats_undeclared";
constexpr char kWeighsMasked[] = "weighs_masked";
constexpr char kUnsortedOnce[] = "unsorted_once";
constexpr char kHiddenState[] = "hidden_state";

PluginRegistrar<EmptyOptionsFactory<GradientReducer, SwallowsErrors, kSwallowsErrors>,
                GradientReducer>
    swallows_errors;
PluginRegistrar<EmptyOptionsFactory<SamplerPolicy, RankDependent, kRankDependent>, SamplerPolicy>
    rank_dependent;
PluginRegistrar<EmptyOptionsFactory<SamplerPolicy, RepeatsUndeclared, kRepeatsUndeclared>,
                SamplerPolicy>
    repeats_undeclared;
PluginRegistrar<EmptyOptionsFactory<LossWeighting, WeighsMasked, kWeighsMasked>, LossWeighting>
    weighs_masked;
PluginRegistrar<EmptyOptionsFactory<MetricDedup, UnsortedOnce, kUnsortedOnce>, MetricDedup>
    unsorted_once;
PluginRegistrar<EmptyOptionsFactory<ClassifierBuilder, HiddenStateBuilder, kHiddenState>,
                ClassifierBuilder>
    hidden_state;

}  // namespace
}  // namespace receipt_parity

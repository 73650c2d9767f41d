#include "parity/simulated_parity.h"

#include <cmath>
#include <exception>
#include <numeric>
#include <utility>

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/weighted_loss.h"
#include "parity/tensor_comparison.h"
#include "collectives/collective_error.h"
#include "reducers/gradient_buckets.h"
#include "collectives/local_process_group.h"

namespace receipt_parity {
namespace {

absl::Status CheckRequest(const SimulatedParityRequest& request) {
  if (!request.make_model || !request.make_reducer ||
      request.weighting == nullptr) {
    return absl::InvalidArgumentError(
        "parity request: make_model, make_reducer and weighting are required");
  }
  if (request.split.empty()) {
    return absl::InvalidArgumentError("split: needs at least one rank");
  }
  int64_t total = 0;
  for (size_t r = 0; r < request.split.size(); ++r) {
    if (request.split[r] < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "split: rank ", r, " holds ", request.split[r], " examples"));
    }
    total += request.split[r];
  }
  if (total == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("split: ", absl::StrJoin(request.split, ","),
                     " holds no example"));
  }
  if (!request.inputs.defined() || request.inputs.dim() < 1 ||
      request.inputs.size(0) != total) {
    return absl::InvalidArgumentError(absl::StrCat(
        "inputs: the split ", absl::StrJoin(request.split, ","),
        " adds up to ", total, " examples, the batch has ",
        request.inputs.defined() && request.inputs.dim() >= 1
            ? request.inputs.size(0)
            : 0));
  }
  if (!request.labels.defined() || request.labels.dim() != 1 ||
      request.labels.size(0) != total ||
      request.labels.scalar_type() != at::kLong) {
    return absl::InvalidArgumentError(absl::StrCat(
        "labels: must be int64 [", total, "]"));
  }
  if (request.class_counts.empty()) {
    return absl::InvalidArgumentError(
        "class_counts: empty; the training set's class counts are needed");
  }
  const at::Tensor labels = request.labels.to(at::kCPU).contiguous();
  const int64_t* label = labels.data_ptr<int64_t>();
  for (int64_t i = 0; i < total; ++i) {
    if (label[i] < 0 ||
        label[i] >= static_cast<int64_t>(request.class_counts.size()) ||
        request.class_counts[label[i]] <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "labels: example ", i, " has label ", label[i],
          ", which has no training examples in class_counts [",
          absl::StrJoin(request.class_counts, ","), "]"));
    }
  }
  if (!std::isfinite(request.rtol) || request.rtol < 0 ||
      !std::isfinite(request.atol) || request.atol < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("rtol/atol: must be finite and >= 0, got ", request.rtol,
                     " and ", request.atol));
  }
  return absl::OkStatus();
}

// The update as the plan would describe it: every example valid, rank r
// holding the next `split[r]` labels.
UpdateComposition Composition(const std::vector<int64_t>& labels,
                              const std::vector<int>& split,
                              const std::vector<int64_t>& class_counts) {
  UpdateComposition update;
  update.class_counts = class_counts;
  size_t next = 0;
  for (int n : split) {
    update.by_rank.emplace_back();
    for (int i = 0; i < n; ++i) {
      update.by_rank.back().push_back(
          {static_cast<int>(labels[next++]), /*valid=*/true});
    }
  }
  return update;
}

// Detached copies of the gradients, named by parameter.
NamedTensors NamedGradients(Classifier& model) {
  NamedTensors named;
  for (const auto& item : model.named_parameters(/*recurse=*/true)) {
    named.emplace_back(item.key(), item.value().grad().detach().clone());
  }
  return named;
}

NamedTensors Rename(const NamedTensors& names,
                    const std::vector<at::Tensor>& tensors) {
  NamedTensors named;
  for (size_t i = 0; i < tensors.size(); ++i) {
    named.emplace_back(names[i].first, tensors[i]);
  }
  return named;
}

struct Shard {
  int64_t begin = 0;
  int64_t size = 0;
};

std::vector<Shard> Shards(const std::vector<int>& split) {
  std::vector<Shard> shards;
  int64_t begin = 0;
  for (int n : split) {
    shards.push_back({begin, n});
    begin += n;
  }
  return shards;
}

// The update keys of `size` examples from `begin`, or none.
at::Tensor KeysOf(const SimulatedParityRequest& request, int64_t begin, int64_t size) {
  return request.update_keys.defined() ? request.update_keys.narrow(0, begin, size)
                                       : at::Tensor();
}

std::vector<double> Slice(const std::vector<double>& v, const Shard& shard) {
  return std::vector<double>(v.begin() + shard.begin,
                             v.begin() + shard.begin + shard.size);
}

// The one-worker reference gradient: one backward over the whole batch, or
// (partition-matched) one backward per shard summed in rank order.
absl::StatusOr<NamedTensors> ReferenceGradients(
    const SimulatedParityRequest& request, const std::vector<double>& weights,
    const std::vector<Shard>& shards) {
  absl::StatusOr<std::shared_ptr<Classifier>> model = request.make_model();
  if (!model.ok()) return model.status();
  if (!request.partition_matched) {
    absl::StatusOr<WeightedBackwardResult> backward =
        WeightedBackward(**model, request.inputs, request.labels, weights,
                         GradientStart::kZero, /*bf16=*/false, request.update_keys);
    if (!backward.ok()) return backward.status();
    return NamedGradients(**model);
  }
  NamedTensors sum;
  for (const Shard& shard : shards) {
    absl::StatusOr<WeightedBackwardResult> backward = WeightedBackward(
        **model, request.inputs.narrow(0, shard.begin, shard.size),
        request.labels.narrow(0, shard.begin, shard.size), Slice(weights, shard),
        GradientStart::kZero, /*bf16=*/false, KeysOf(request, shard.begin, shard.size));
    if (!backward.ok()) return backward.status();
    NamedTensors shard_grads = NamedGradients(**model);
    if (sum.empty()) {
      sum = std::move(shard_grads);
      continue;
    }
    for (size_t i = 0; i < sum.size(); ++i) {
      sum[i].second = sum[i].second + shard_grads[i].second;
    }
  }
  return sum;
}

double Sum(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0);
}

// What every report says: the split, the plugins, the tolerances.
ParityReport ReportHeader(const SimulatedParityRequest& request, int total) {
  ParityReport report;
  report.set_simulated(true);
  report.set_note(kSimulatedParityNote);
  report.set_pass_rule(kParityPassRule);
  report.set_reducer_stats_scope("the one simulated update, rank 0's reducer");
  for (int n : request.split) report.add_split(n);
  report.set_world_size(static_cast<int>(request.split.size()));
  report.set_weighting(request.weighting_name);
  report.set_reducer(request.reducer_name);
  report.set_rtol(request.rtol);
  report.set_atol(request.atol);
  report.set_partition_matched(request.partition_matched);
  report.set_accepted_examples(total);
  return report;
}

// The simulated ranks: each its own model, shard and weights, its backward
// run here, and its own reducer.
struct SimulatedRanks {
  std::vector<std::shared_ptr<Classifier>> models;
  std::vector<std::vector<at::Tensor>> grads;
  std::vector<std::unique_ptr<GradientReducer>> reducers;
};

absl::StatusOr<SimulatedRanks> RankBackwards(const SimulatedParityRequest& request,
                                             const std::vector<int64_t>& labels,
                                             const std::vector<Shard>& shards,
                                             ParityReport* report) {
  const UpdateComposition update =
      Composition(labels, request.split, request.class_counts);
  SimulatedRanks ranks;
  for (int r = 0; r < static_cast<int>(shards.size()); ++r) {
    absl::StatusOr<std::shared_ptr<Classifier>> model = request.make_model();
    if (!model.ok()) return model.status();
    const std::vector<double> weights = request.weighting->Weights(update, r);
    report->add_rank_weight_sums(Sum(weights));
    absl::StatusOr<WeightedBackwardResult> backward = WeightedBackward(
        **model, request.inputs.narrow(0, shards[r].begin, shards[r].size),
        request.labels.narrow(0, shards[r].begin, shards[r].size), weights,
        GradientStart::kZero, /*bf16=*/false,
        KeysOf(request, shards[r].begin, shards[r].size));
    if (!backward.ok()) {
      return absl::Status(backward.status().code(),
                          absl::StrCat("rank ", r, ": ",
                                       backward.status().message()));
    }
    ranks.grads.push_back(Gradients(**model));
    ranks.models.push_back(*std::move(model));
    absl::StatusOr<std::unique_ptr<GradientReducer>> reducer =
        request.make_reducer();
    if (!reducer.ok()) return reducer.status();
    ranks.reducers.push_back(*std::move(reducer));
  }
  return ranks;
}

// The configured reducer over a real Gloo group of threads.
absl::Status ReduceOnLocalGroup(const SimulatedParityRequest& request,
                                SimulatedRanks& ranks, ParityReport* report) {
  absl::Status reduced = RunOnLocalGroup(
      static_cast<int>(ranks.reducers.size()),
      [&](int rank, c10d::ProcessGroup& group) {
        return ReduceInBuckets(*ranks.reducers[rank], ranks.grads[rank], group);
      },
      request.collective_timeout);
  if (!reduced.ok()) {
    return absl::Status(reduced.code(),
                        absl::StrCat("reducer '", request.reducer_name,
                                     "': ", reduced.message()));
  }
  const ReduceStats stats = ranks.reducers[0]->stats();
  report->set_reducer_collectives(static_cast<int32_t>(stats.collectives));
  report->set_reducer_bytes(stats.bytes);
  return absl::OkStatus();
}

// Rank 0's reduced gradients against the reference, and every rank's
// against rank 0's; the verdict and what fails.
absl::Status Compare(const SimulatedParityRequest& request,
                     const NamedTensors& reference, const SimulatedRanks& ranks,
                     ParityReport* report) {
  const NamedTensors reduced_rank0 = Rename(reference, ranks.grads[0]);
  absl::StatusOr<TensorListComparison> comparison = CompareTensors(
      reduced_rank0, reference, request.rtol, request.atol);
  if (!comparison.ok()) return comparison.status();
  AppendTensorParity(*comparison, report->mutable_gradients());
  report->set_max_abs_diff(comparison->max_abs_diff);
  report->set_max_rel_diff(comparison->max_rel_diff);
  report->set_bitwise_equal(comparison->bitwise_equal);

  bool ranks_agree = true;
  for (size_t r = 1; r < ranks.grads.size(); ++r) {
    absl::StatusOr<TensorListComparison> same = CompareTensors(
        Rename(reference, ranks.grads[r]), reduced_rank0, 0, 0);
    if (!same.ok()) return same.status();
    ranks_agree = ranks_agree && same->bitwise_equal;
  }
  report->set_ranks_agree(ranks_agree);

  if (!comparison->within_tolerance) {
    int outside = 0;
    for (const TensorComparison& t : comparison->tensors) {
      outside += t.within_tolerance ? 0 : 1;
    }
    report->add_failures(absl::StrCat(
        outside, " of ", comparison->tensors.size(),
        " gradients differ from the one-worker reference beyond atol ",
        request.atol, " + rtol ", request.rtol, " * |reference| (max abs diff ",
        comparison->max_abs_diff, ")"));
  }
  if (!ranks_agree) {
    report->add_failures("the ranks ended with different reduced gradients");
  }
  if (request.partition_matched && ranks.grads.size() == 2 &&
      !comparison->bitwise_equal) {
    report->add_failures(
        "partition-matched with two ranks: the reduced gradient is not "
        "bitwise equal to the rank-order sum of the shard gradients");
  }
  report->set_pass(report->failures_size() == 0);
  return absl::OkStatus();
}

absl::StatusOr<ParityReport> Run(const SimulatedParityRequest& request) {
  const at::Tensor label_tensor = request.labels.to(at::kCPU).contiguous();
  const std::vector<int64_t> labels(
      label_tensor.data_ptr<int64_t>(),
      label_tensor.data_ptr<int64_t>() + label_tensor.numel());
  const std::vector<Shard> shards = Shards(request.split);
  const int total = std::accumulate(request.split.begin(),
                                    request.split.end(), 0);
  ParityReport report = ReportHeader(request, total);

  // The reference: one worker holding all N examples.
  const std::vector<double> one_worker_weights = request.weighting->Weights(
      Composition(labels, {total}, request.class_counts), 0);
  absl::StatusOr<NamedTensors> reference =
      ReferenceGradients(request, one_worker_weights, shards);
  if (!reference.ok()) return reference.status();

  absl::StatusOr<SimulatedRanks> ranks =
      RankBackwards(request, labels, shards, &report);
  if (!ranks.ok()) return ranks.status();
  if (absl::Status s = ReduceOnLocalGroup(request, *ranks, &report); !s.ok()) {
    return s;
  }
  if (absl::Status s = Compare(request, *reference, *ranks, &report); !s.ok()) {
    return s;
  }
  return report;
}

}  // namespace

absl::StatusOr<ParityReport> RunSimulatedParity(
    const SimulatedParityRequest& request) {
  try {
    if (absl::Status s = CheckRequest(request); !s.ok()) return s;
    return Run(request);
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "simulated parity");
  }
}

}  // namespace receipt_parity

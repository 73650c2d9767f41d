#include "parity/simulated_parity.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <numeric>
#include <utility>

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/sync_batch_norm.h"
#include "model/sync_batch_norm_update.h"
#include "model/weighted_loss.h"
#include "parity/tensor_comparison.h"
#include "collectives/collective_error.h"
#include "reducers/gradient_buckets.h"
#include "collectives/local_process_group.h"
#include "collectives/sum_across_ranks.h"

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
  if (!SyncBatchNorms(**model).empty()) {
    return absl::InvalidArgumentError(
        "partition_matched: a model with synchronized batch norm normalizes over the whole "
        "update, so a sum of per-shard backwards is not its reference");
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

// Each rank's backward on the calling thread.
absl::Status BackwardOneByOne(const SimulatedParityRequest& request,
                              const std::vector<Shard>& shards,
                              const std::vector<std::vector<double>>& weights,
                              SimulatedRanks& ranks) {
  for (int r = 0; r < static_cast<int>(shards.size()); ++r) {
    absl::StatusOr<WeightedBackwardResult> backward = WeightedBackward(
        *ranks.models[r], request.inputs.narrow(0, shards[r].begin, shards[r].size),
        request.labels.narrow(0, shards[r].begin, shards[r].size), weights[r],
        GradientStart::kZero, /*bf16=*/false,
        KeysOf(request, shards[r].begin, shards[r].size));
    if (!backward.ok()) {
      return absl::Status(backward.status().code(),
                          absl::StrCat("rank ", r, ": ", backward.status().message()));
    }
  }
  return absl::OkStatus();
}

// A model with synchronized batch norms: each rank's forward and backward
// on its own thread, their statistics summed over the real Gloo group of
// threads.
absl::Status BackwardSynchronized(const SimulatedParityRequest& request,
                                  const std::vector<Shard>& shards,
                                  const std::vector<std::vector<double>>& weights,
                                  SimulatedRanks& ranks) {
  return RunOnLocalGroup(
      static_cast<int>(shards.size()),
      [&](int r, c10d::ProcessGroup& group) -> absl::Status {
        UpdateMicroBatch share;
        share.images = request.inputs.narrow(0, shards[r].begin, shards[r].size);
        share.labels = request.labels.narrow(0, shards[r].begin, shards[r].size);
        share.update_keys = KeysOf(request, shards[r].begin, shards[r].size);
        share.valid = at::ones({shards[r].size}, share.images.options().dtype(at::kBool));
        share.weights = weights[r];
        return SyncBatchNormBackward(*ranks.models[r], {share}, /*bf16=*/false,
                                     RankSumOver(&group, "synchronized batch norm"))
            .status();
      },
      request.collective_timeout);
}

absl::StatusOr<SimulatedRanks> RankBackwards(const SimulatedParityRequest& request,
                                             const std::vector<int64_t>& labels,
                                             const std::vector<Shard>& shards,
                                             ParityReport* report) {
  const UpdateComposition update =
      Composition(labels, request.split, request.class_counts);
  SimulatedRanks ranks;
  std::vector<std::vector<double>> weights;
  for (int r = 0; r < static_cast<int>(shards.size()); ++r) {
    absl::StatusOr<std::shared_ptr<Classifier>> model = request.make_model();
    if (!model.ok()) return model.status();
    weights.push_back(request.weighting->Weights(update, r));
    report->add_rank_weight_sums(Sum(weights.back()));
    ranks.models.push_back(*std::move(model));
    absl::StatusOr<std::unique_ptr<GradientReducer>> reducer =
        request.make_reducer();
    if (!reducer.ok()) return reducer.status();
    ranks.reducers.push_back(*std::move(reducer));
  }
  const absl::Status backward =
      SyncBatchNorms(*ranks.models[0]).empty()
          ? BackwardOneByOne(request, shards, weights, ranks)
          : BackwardSynchronized(request, shards, weights, ranks);
  if (!backward.ok()) return backward;
  for (const std::shared_ptr<Classifier>& model : ranks.models) {
    ranks.grads.push_back(Gradients(*model));
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
                     const std::vector<double>& atols, ParityReport* report) {
  const NamedTensors reduced_rank0 = Rename(reference, ranks.grads[0]);
  absl::StatusOr<TensorListComparison> comparison =
      CompareTensors(reduced_rank0, reference, request.rtol, atols);
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
        report->atol(), report->atol() != request.atol ? " (the largest of the derived) " : "",
        " + rtol ", request.rtol, " * |reference| (max abs diff ",
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

// Each tensor's atol: the request's; for a model with synchronized batch
// norm, whose ranks compute its gradient by other passes than the
// reference's one backward, at least kSyncBatchNormSafetyFactor x the fp32
// reference's own error against the same backward in fp64 (the reason in
// `report`).
absl::StatusOr<std::vector<double>> Tolerances(const SimulatedParityRequest& request,
                                               const std::vector<double>& weights,
                                               const NamedTensors& reference,
                                               ParityReport* report) {
  std::vector<double> atols(reference.size(), request.atol);
  report->set_tolerance_reason(
      "the request's: every element within atol + rtol * |reference|");
  absl::StatusOr<std::shared_ptr<Classifier>> model = request.make_model();
  if (!model.ok()) return model.status();
  if (SyncBatchNorms(**model).empty()) return atols;
  (*model)->to(at::kDouble);
  absl::StatusOr<WeightedBackwardResult> backward =
      WeightedBackward(**model, request.inputs.to(at::kDouble), request.labels, weights,
                       GradientStart::kZero, /*bf16=*/false, request.update_keys);
  if (!backward.ok()) return backward.status();
  const NamedTensors exact = NamedGradients(**model);
  double largest = 0;
  for (size_t i = 0; i < reference.size(); ++i) {
    const double error =
        (reference[i].second.to(at::kDouble) - exact[i].second).abs().max().item<double>();
    atols[i] = std::max(request.atol, kSyncBatchNormSafetyFactor * error);
    largest = std::max(largest, atols[i]);
  }
  report->set_atol(largest);
  report->set_tolerance_reason(absl::StrCat(
      "derived (synchronized batch norm), per tensor (each tensor's atol is in "
      "gradients[]; atol here is the largest): the ranks compute the batch norm's gradient "
      "by other passes than the reference's one backward, so each tensor's atol is at least ",
      kSyncBatchNormSafetyFactor,
      " x the fp32 reference's own largest error against the same backward in fp64"));
  return atols;
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
  absl::StatusOr<std::vector<double>> atols =
      Tolerances(request, one_worker_weights, *reference, &report);
  if (!atols.ok()) return atols.status();
  if (absl::Status s = Compare(request, *reference, *ranks, *atols, &report); !s.ok()) {
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

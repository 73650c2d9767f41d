#include "conformance/sampler_policy_conformance.h"

#include <sys/wait.h>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "conformance/rank_result.h"
#include "plugins/plugin_selection.h"
#include "runtime/distributed_env.h"
#include "runtime/wait_status.h"
#include "samplers/sampler_policy.h"

namespace receipt_parity {
namespace {

// The "every rank" scenario's plan.
constexpr int kRankWorld = 3;
constexpr int64_t kRankExamples = 50;
constexpr int kRankLocalBatch = 4;
constexpr uint64_t kSeed = 1234;

absl::StatusOr<std::unique_ptr<SamplerPolicy>> MakePolicy(const PluginSelection& selection) {
  return CreateSelectedPlugin<SamplerPolicy>(selection, "sampler");
}

OrderRequest Request(int64_t examples, int world_size, int local_batch, uint64_t seed,
                     int64_t epoch) {
  OrderRequest request;
  request.num_examples = examples;
  request.world_size = world_size;
  request.seed = seed;
  request.epoch = epoch;
  request.global_batch = static_cast<int64_t>(world_size) * local_batch;
  return request;
}

std::string Describe(const OrderRequest& r) {
  return absl::StrCat(r.num_examples, " receipts, ", r.world_size, " ranks, global batch ",
                      r.global_batch, ", seed ", r.seed, ", epoch ", r.epoch);
}

bool SameOrder(const GlobalOrder& a, const GlobalOrder& b) {
  return a.slots == b.slots && a.dropped == b.dropped;
}

// What is wrong with `order` under `coverage` ("" when nothing).
std::string CoverageError(const GlobalOrder& order, const OrderRequest& request,
                          EpochCoverage coverage) {
  std::vector<int> valid(request.num_examples, 0);
  std::vector<int> dropped(request.num_examples, 0);
  for (const Slot& slot : order.slots) {
    if (slot.dataset_index < 0 || slot.dataset_index >= request.num_examples) {
      return absl::StrCat("slot of dataset index ", slot.dataset_index, " is out of range");
    }
    if (slot.valid) ++valid[slot.dataset_index];
  }
  for (int64_t index : order.dropped) {
    if (index < 0 || index >= request.num_examples) {
      return absl::StrCat("dropped index ", index, " is out of range");
    }
    ++dropped[index];
  }
  if (coverage != EpochCoverage::kOnceOrDropped && !order.dropped.empty()) {
    return absl::StrCat("drops ", order.dropped.size(), " receipts (index ", order.dropped[0],
                        " first), which ", EpochCoverageName(coverage), " does not allow");
  }
  int64_t repeated = 0;
  for (int64_t i = 0; i < request.num_examples; ++i) {
    switch (coverage) {
      case EpochCoverage::kExactlyOnce:
        if (valid[i] != 1) return absl::StrCat("receipt ", i, " is trained ", valid[i], " times");
        break;
      case EpochCoverage::kOnceOrDropped:
        if (valid[i] + dropped[i] != 1) {
          return absl::StrCat("receipt ", i, " is trained ", valid[i], " times and dropped ",
                              dropped[i], " times");
        }
        break;
      case EpochCoverage::kOnceWithRepeatedPadding:
        if (valid[i] < 1) {
          return absl::StrCat("receipt ", i, " is trained ", valid[i], " times");
        }
        repeated += valid[i] - 1;
        break;
    }
  }
  if (repeated >= request.world_size) {
    return absl::StrCat(repeated, " slots repeat a receipt, more than world_size - 1 = ",
                        request.world_size - 1);
  }
  return "";
}

void CheckCoverageAndDeterminism(const SamplerSuiteOptions& options, const SamplerPolicy& policy,
                                 SuiteReport* report) {
  std::vector<std::string> coverage, determinism;
  absl::StatusOr<std::unique_ptr<SamplerPolicy>> again = MakePolicy(options.selection);
  if (!again.ok()) {
    report->Add("a second plugin from the same options", {std::string(again.status().message())});
    return;
  }
  for (int64_t examples : {1, 7, 12, 50, 53}) {
    for (int world_size : {1, 2, 3, 4}) {
      for (int local_batch : {1, 4}) {
        for (uint64_t seed : {uint64_t{0}, kSeed}) {
          for (int64_t epoch : {0, 1, 2}) {
            const OrderRequest request = Request(examples, world_size, local_batch, seed, epoch);
            absl::StatusOr<GlobalOrder> order = policy.Order(request);
            if (!order.ok()) {
              coverage.push_back(absl::StrCat(Describe(request), ": ", order.status().message()));
              continue;
            }
            if (std::string error = CoverageError(*order, request, policy.epoch_coverage());
                !error.empty()) {
              coverage.push_back(absl::StrCat(Describe(request), ": ", error));
            }
            absl::StatusOr<GlobalOrder> twice = policy.Order(request);
            absl::StatusOr<GlobalOrder> other = (*again)->Order(request);
            if (!twice.ok() || !SameOrder(*order, *twice)) {
              determinism.push_back(absl::StrCat(Describe(request), ": a second call differs"));
            } else if (!other.ok() || !SameOrder(*order, *other)) {
              determinism.push_back(absl::StrCat(Describe(request), ": a new plugin differs"));
            }
          }
        }
      }
    }
  }
  report->Add(absl::StrCat("each receipt as often as declared per epoch (",
                           EpochCoverageName(policy.epoch_coverage()), ")"),
              coverage);
  report->Add("the same order on every call and from a new plugin", determinism);
}

void CheckSetEpoch(const SamplerPolicy& policy, SuiteReport* report) {
  std::vector<std::string> failures;
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    const OrderRequest a = Request(kRankExamples, 2, 4, kSeed, epoch);
    const OrderRequest b = Request(kRankExamples, 2, 4, kSeed, epoch + 1);
    absl::StatusOr<GlobalOrder> first = policy.Order(a);
    absl::StatusOr<GlobalOrder> second = policy.Order(b);
    if (first.ok() && second.ok() && first->slots == second->slots) {
      failures.push_back(absl::StrCat("epochs ", epoch, " and ", epoch + 1,
                                      " train the same order (", Describe(a),
                                      "): set_epoch changes nothing"));
    }
  }
  report->Add("a different order after set_epoch", failures);
}

void CheckWorldSizeIndependence(const SamplerPolicy& policy, SuiteReport* report) {
  if (!policy.world_size_independent()) return;
  std::vector<std::string> failures;
  constexpr int64_t kGlobalBatch = 12;
  std::optional<GlobalOrder> one;
  for (int world_size : {1, 2, 3, 4}) {
    OrderRequest request = Request(53, world_size, 1, kSeed, 1);
    request.global_batch = kGlobalBatch;
    absl::StatusOr<GlobalOrder> order = policy.Order(request);
    if (!order.ok()) {
      failures.push_back(absl::StrCat(Describe(request), ": ", order.status().message()));
      continue;
    }
    if (!one.has_value()) {
      one = *order;
    } else if (!SameOrder(*one, *order)) {
      failures.push_back(absl::StrCat(Describe(request),
                                      ": not the order one rank gets, although "
                                      "world_size_independent() says so"));
    }
  }
  report->Add("world_size_independent: the same order at 1, 2, 3 and 4 ranks", failures);
}

void CheckBadRequests(const SamplerPolicy& policy, SuiteReport* report) {
  std::vector<std::string> failures;
  OrderRequest negative = Request(-1, 2, 2, kSeed, 0);
  OrderRequest no_ranks = Request(10, 0, 2, kSeed, 0);
  no_ranks.global_batch = 2;
  for (const OrderRequest& request : {negative, no_ranks}) {
    absl::StatusOr<GlobalOrder> order = policy.Order(request);
    if (order.ok() || order.status().code() != absl::StatusCode::kInvalidArgument) {
      failures.push_back(absl::StrCat(Describe(request), ": ",
                                      order.ok() ? "accepted" : order.status().ToString(),
                                      ", not InvalidArgument"));
    }
  }
  report->Add("a bad request is InvalidArgument", failures);
}

// Every rank's slots of every update as [slots, 4] (rank, update,
// dataset index, valid).
absl::StatusOr<at::Tensor> PlanTensor(const SamplerPolicy& policy) {
  const OrderRequest request = Request(kRankExamples, kRankWorld, kRankLocalBatch, kSeed, 1);
  absl::StatusOr<EpochPlan> plan = BuildEpochPlan(
      policy, request, std::vector<int>(kRankWorld, kRankLocalBatch));
  if (!plan.ok()) return plan.status();
  std::vector<int64_t> rows;
  for (int rank = 0; rank < kRankWorld; ++rank) {
    for (int64_t update = 0; update < plan->num_updates(); ++update) {
      for (const Slot slot : plan->UpdateSlots(rank, update)) {
        rows.insert(rows.end(), {rank, update, slot.dataset_index, slot.valid ? 1 : 0});
      }
    }
  }
  return at::tensor(rows, at::kLong).reshape({-1, 4});
}

void CheckEveryRank(const SamplerSuiteOptions& options, const SamplerPolicy& policy,
                    SuiteReport* report) {
  std::vector<std::string> failures;
  const std::string folder = options.work_folder + "/sampler-every-rank";
  std::filesystem::create_directories(folder);
  RankLaunch launch;
  launch.argv = options.rank_command("plan", folder);
  launch.world_size = kRankWorld;
  absl::StatusOr<at::Tensor> mine = PlanTensor(policy);
  absl::StatusOr<std::vector<RankExit>> exits = RunRankProcesses(launch);
  if (!mine.ok()) failures.push_back(std::string(mine.status().message()));
  if (!exits.ok()) failures.push_back(std::string(exits.status().message()));
  for (int rank = 0; failures.empty() && rank < kRankWorld; ++rank) {
    const RankExit& exit = (*exits)[rank];
    if (exit.killed || !WIFEXITED(exit.wait_status) || WEXITSTATUS(exit.wait_status) != 0) {
      failures.push_back(absl::StrCat("rank ", rank, " ", exit.killed ? "hung" : DescribeWaitStatus(exit.wait_status)));
      continue;
    }
    absl::StatusOr<RankResult> result = ReadRankResult(folder, rank);
    if (!result.ok() || !result->message.empty()) {
      failures.push_back(absl::StrCat("rank ", rank, ": ",
                                      result.ok() ? result->message : result.status().message()));
      continue;
    }
    const at::Tensor& theirs = result->tensors["plan"];
    if (!theirs.defined() || !at::equal(theirs, *mine)) {
      failures.push_back(absl::StrCat("rank ", rank, "'s process builds another plan of epoch 1 (",
                                      kRankExamples, " receipts, ", kRankWorld, " ranks)"));
    }
  }
  report->Add("the same plan on every rank (3 rank processes)", failures);
}

}  // namespace

absl::StatusOr<SuiteReport> RunSamplerPolicySuite(const SamplerSuiteOptions& options) {
  absl::StatusOr<std::unique_ptr<SamplerPolicy>> policy = MakePolicy(options.selection);
  if (!policy.ok()) return policy.status();
  SuiteReport report;
  CheckCoverageAndDeterminism(options, **policy, &report);
  CheckSetEpoch(**policy, &report);
  CheckWorldSizeIndependence(**policy, &report);
  CheckBadRequests(**policy, &report);
  CheckEveryRank(options, **policy, &report);
  return report;
}

absl::Status RunSamplerPolicyRank(const SamplerSuiteOptions& options, const std::string& folder) {
  absl::StatusOr<std::optional<DistributedEnv>> env = DistributedEnvFromEnvironment();
  if (!env.ok()) return env.status();
  if (!env->has_value()) return absl::InvalidArgumentError("a rank needs RANK and WORLD_SIZE");
  absl::StatusOr<std::unique_ptr<SamplerPolicy>> policy = MakePolicy(options.selection);
  if (!policy.ok()) return policy.status();
  RankResult result;
  absl::StatusOr<at::Tensor> plan = PlanTensor(**policy);
  if (plan.ok()) {
    result.tensors["plan"] = *plan;
  } else {
    result.message = std::string(plan.status().message());
  }
  return WriteRankResult(folder, (*env)->rank, result);
}

}  // namespace receipt_parity

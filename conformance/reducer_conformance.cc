#include "conformance/reducer_conformance.h"

#include <signal.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include "absl/strings/str_cat.h"
#include "conformance/rank_result.h"
#include "parity/tensor_comparison.h"
#include "plugins/plugin_selection.h"
#include "reducers/gradient_reducer.h"
#include "runtime/distributed_env.h"
#include "runtime/process_group.h"
#include "runtime/wait_status.h"

namespace receipt_parity {
namespace {

using Clock = std::chrono::steady_clock;

// Gradient lengths of uneven sizes; under kUnevenCapBytes they make buckets
// of one to several tensors, and one tensor larger than the cap.
const std::vector<int64_t>& GradientLengths() {
  static const std::vector<int64_t> lengths = {3, 1, 257, 1000, 31, 4099, 2, 64};
  return lengths;
}
constexpr int64_t kUnevenCapBytes = 1024;
constexpr int kUpdates = 2;
constexpr int kChunks = 6;
constexpr int64_t kChunkElements = 777;
constexpr double kRelativeTolerance = 1e-6;
constexpr char kHealthyKey[] = "conformance/healthy_reduction_done";
const std::vector<int>& WorldSizes() {
  static const std::vector<int> sizes = {2, 3};
  return sizes;
}

at::Tensor RandomVector(int64_t length, uint64_t seed, double scale) {
  at::Generator generator = at::detail::createCPUGenerator(seed);
  return at::randn({length}, generator, at::TensorOptions().dtype(at::kFloat)) * scale;
}

// Rank `rank`'s gradients in update `update`; in the second update the last
// rank has no accepted examples and passes zeros.
std::vector<at::Tensor> RankGradients(int rank, int world_size, int update) {
  std::vector<at::Tensor> gradients;
  for (size_t t = 0; t < GradientLengths().size(); ++t) {
    const int64_t length = GradientLengths()[t];
    if (update == 1 && rank == world_size - 1) {
      gradients.push_back(at::zeros({length}, at::kFloat));
      continue;
    }
    const uint64_t seed = 1 + 1000003ULL * update + 7919ULL * world_size + 101ULL * rank + t;
    gradients.push_back(RandomVector(length, seed, std::pow(10.0, static_cast<int>(t % 3) - 1)));
  }
  return gradients;
}

// Which chunk rows each rank computes in the ordered mode: contiguous
// shares, rank r the rows [bounds[r], bounds[r + 1]).
std::vector<int64_t> ChunkBounds(int world_size) {
  std::vector<int64_t> bounds;
  for (int r = 0; r <= world_size; ++r) bounds.push_back(int64_t{kChunks} * r / world_size);
  return bounds;
}

// Chunk rows of the ordered mode: the rows rank `rank` computed
// (ChunkBounds), zeros elsewhere; rank -1: every row (one rank).
at::Tensor ChunkRows(int rank, int world_size) {
  at::Tensor rows = at::zeros({kChunks, kChunkElements}, at::kFloat);
  const std::vector<int64_t> bounds = ChunkBounds(world_size);
  for (int k = 0; k < kChunks; ++k) {
    if (rank < 0 || (bounds[rank] <= k && k < bounds[rank + 1])) {
      rows[k].copy_(RandomVector(kChunkElements, 5000 + k, 1.0));
    }
  }
  return rows;
}

absl::StatusOr<std::unique_ptr<GradientReducer>> MakeReducer(const PluginSelection& selection) {
  return CreateSelectedPlugin<GradientReducer>(selection, "reducer");
}

// OK when `plan` covers every tensor once, in order, one dtype per bucket.
absl::Status CheckPlan(const std::vector<GradientBucket>& plan,
                       const std::vector<at::Tensor>& gradients) {
  int next = 0;
  for (size_t b = 0; b < plan.size(); ++b) {
    if (plan[b].begin != next || plan[b].end <= plan[b].begin ||
        plan[b].end > static_cast<int>(gradients.size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "PlanBuckets: bucket ", b, " holds tensors [", plan[b].begin, ", ", plan[b].end,
          "), the next bucket must start at tensor ", next));
    }
    next = plan[b].end;
  }
  if (next != static_cast<int>(gradients.size())) {
    return absl::InvalidArgumentError(absl::StrCat("PlanBuckets leaves tensors [", next, ", ",
                                                   gradients.size(), ") in no bucket"));
  }
  return absl::OkStatus();
}

// The flat buckets of `plan` over `tensors` (copies).
std::vector<at::Tensor> Flatten(const std::vector<at::Tensor>& tensors,
                                const std::vector<GradientBucket>& plan) {
  std::vector<at::Tensor> flats;
  for (const GradientBucket& bucket : plan) {
    std::vector<at::Tensor> members(tensors.begin() + bucket.begin, tensors.begin() + bucket.end);
    flats.push_back(at::cat(members).contiguous());
  }
  return flats;
}

// The two bucket plans the suite reduces: the reducer's own and uneven ones.
std::vector<std::pair<std::string, std::vector<GradientBucket>>> BucketPlans(
    const GradientReducer& reducer, const std::vector<at::Tensor>& gradients) {
  return {{"own", reducer.PlanBuckets(gradients)},
          {"uneven", PlanBuckets(gradients, kUnevenCapBytes)}};
}

absl::Status ReduceAll(GradientReducer& reducer, std::vector<at::Tensor>& flats,
                       c10d::ProcessGroup& group) {
  for (at::Tensor& flat : flats) {
    if (absl::Status s = reducer.StartBucket(flat, group); !s.ok()) return s;
  }
  return reducer.FinishBuckets();
}

std::string Key(int update, const std::string& plan, size_t bucket) {
  return absl::StrCat("u", update, "/", plan, "/", bucket);
}

// Every update's buckets, reduced by `reducer` (and by allreduce_sum under
// "allreduce_sum/" when `allreduce_sum` is non-null).
absl::Status ReduceBuckets(GradientReducer& reducer, GradientReducer* allreduce_sum,
                           c10d::ProcessGroup& group, int rank, int world_size,
                           RankResult* result) {
  for (int update = 0; update < kUpdates; ++update) {
    const std::vector<at::Tensor> gradients = RankGradients(rank, world_size, update);
    for (const auto& [plan_name, plan] : BucketPlans(reducer, gradients)) {
      if (absl::Status s = CheckPlan(plan, gradients); !s.ok()) return s;
      std::vector<at::Tensor> flats = Flatten(gradients, plan);
      if (absl::Status s = ReduceAll(reducer, flats, group); !s.ok()) return s;
      for (size_t b = 0; b < flats.size(); ++b) result->tensors[Key(update, plan_name, b)] = flats[b];
      if (allreduce_sum == nullptr) continue;
      std::vector<at::Tensor> reference = Flatten(gradients, plan);
      if (absl::Status s = ReduceAll(*allreduce_sum, reference, group); !s.ok()) return s;
      for (size_t b = 0; b < reference.size(); ++b) {
        result->tensors["allreduce_sum/" + Key(update, plan_name, b)] = reference[b];
      }
    }
  }
  return absl::OkStatus();
}

absl::Status SumScenario(const ReducerSuiteOptions& options, GradientReducer& reducer,
                         c10d::ProcessGroup& group, int rank, int world_size,
                         RankResult* result) {
  if (reducer.chunk_slots() > 0) {
    at::Tensor rows = ChunkRows(rank, world_size);
    absl::StatusOr<at::Tensor> total = reducer.SumChunks(rows, ChunkBounds(world_size), &group);
    if (!total.ok()) return total.status();
    result->tensors["chunks/sum"] = *total;
    return absl::OkStatus();
  }
  std::unique_ptr<GradientReducer> allreduce_sum;
  if (options.bitwise_allreduce_sum) {
    PluginSelection builtin;
    builtin.set_name("allreduce_sum");
    absl::StatusOr<std::unique_ptr<GradientReducer>> made = MakeReducer(builtin);
    if (!made.ok()) return made.status();
    allreduce_sum = *std::move(made);
  }
  return ReduceBuckets(reducer, allreduce_sum.get(), group, rank, world_size, result);
}

// One small reduction, through the bucket calls or SumChunks.
absl::Status ReduceOnce(GradientReducer& reducer, c10d::ProcessGroup& group, int rank,
                        int world_size) {
  if (reducer.chunk_slots() > 0) {
    at::Tensor rows = ChunkRows(rank, world_size);
    return reducer.SumChunks(rows, ChunkBounds(world_size), &group).status();
  }
  std::vector<at::Tensor> flats = {RandomVector(16, 77 + rank, 1.0)};
  return ReduceAll(reducer, flats, group);
}

// Both ranks reduce once; then rank 1 dies (or stops) and rank 0 reduces
// again, timing how long the error takes.
absl::Status DeadPeerScenario(const std::string& scenario, GradientReducer& reducer,
                              const ProcessGroupHandle& handle, int rank, int world_size,
                              RankResult* result) {
  if (absl::Status s = ReduceOnce(reducer, *handle.group, rank, world_size); !s.ok()) {
    result->scalars["healthy_failed"] = 1;
    return s;
  }
  if (rank != 0) {
    if (absl::StatusOr<std::string> done = StoreGet(*handle.store, kHealthyKey); !done.ok()) {
      return done.status();
    }
    raise(scenario == "killed_peer" ? SIGKILL : SIGSTOP);
    return absl::OkStatus();
  }
  if (absl::Status s = StoreSet(*handle.store, kHealthyKey, "1"); !s.ok()) return s;
  const Clock::time_point start = Clock::now();
  const absl::Status after = ReduceOnce(reducer, *handle.group, rank, world_size);
  result->scalars["elapsed_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(
                                      Clock::now() - start).count();
  result->scalars["code"] = static_cast<int64_t>(after.code());
  result->message = std::string(after.message());
  return absl::OkStatus();
}

// The ranks of one scenario, and what each wrote; launch failures (a rank
// that crashed, hung or wrote nothing) go to `failures`.
absl::StatusOr<std::vector<RankResult>> RunScenario(const ReducerSuiteOptions& options,
                                                    const std::string& scenario,
                                                    int world_size,
                                                    std::vector<std::string>* failures) {
  const std::string folder =
      absl::StrCat(options.work_folder, "/reducer-", scenario, "-", world_size);
  std::filesystem::create_directories(folder);
  RankLaunch launch;
  launch.argv = options.rank_command(scenario, folder);
  launch.world_size = world_size;
  launch.deadline = options.timeout + std::chrono::seconds(60);
  launch.end_with_rank_zero = scenario != "sum";
  absl::StatusOr<std::vector<RankExit>> exits = RunRankProcesses(launch);
  if (!exits.ok()) return exits.status();
  std::vector<RankResult> results(world_size);
  const std::string where = absl::StrCat(world_size, " ranks, ", scenario);
  for (int rank = 0; rank < world_size; ++rank) {
    const bool expected_to_die = scenario != "sum" && rank == 1;
    if (expected_to_die) continue;
    const RankExit& exit = (*exits)[rank];
    if (exit.killed) {
      failures->push_back(absl::StrCat(where, ": rank ", rank, " still ran after ",
                                       launch.deadline.count(), " s (a hang) and was killed"));
      continue;
    }
    if (!WIFEXITED(exit.wait_status) || WEXITSTATUS(exit.wait_status) != 0) {
      failures->push_back(absl::StrCat(where, ": rank ", rank, " ",
                                       DescribeWaitStatus(exit.wait_status), "; its log is above"));
      continue;
    }
    absl::StatusOr<RankResult> result = ReadRankResult(folder, rank);
    if (!result.ok()) {
      failures->push_back(absl::StrCat(where, ": ", result.status().message()));
      continue;
    }
    results[rank] = *std::move(result);
  }
  return results;
}

NamedTensors Named(const std::vector<at::Tensor>& tensors, const std::string& prefix) {
  NamedTensors named;
  for (size_t i = 0; i < tensors.size(); ++i) named.emplace_back(absl::StrCat(prefix, i), tensors[i]);
  return named;
}

// rank's buckets against the float64 sum of every rank's gradients.
void CompareWithSum(const GradientReducer& reducer, int world_size, int rank,
                    const RankResult& result, std::vector<std::string>* failures) {
  for (int update = 0; update < kUpdates; ++update) {
    std::vector<std::vector<at::Tensor>> all;
    for (int r = 0; r < world_size; ++r) all.push_back(RankGradients(r, world_size, update));
    std::vector<at::Tensor> sum, magnitude;
    for (size_t t = 0; t < all[0].size(); ++t) {
      at::Tensor s = at::zeros_like(all[0][t], at::kDouble);
      at::Tensor m = at::zeros_like(all[0][t], at::kDouble);
      for (int r = 0; r < world_size; ++r) {
        s += all[r][t].to(at::kDouble);
        m += all[r][t].to(at::kDouble).abs();
      }
      sum.push_back(s);
      magnitude.push_back(m);
    }
    for (const auto& [plan_name, plan] : BucketPlans(reducer, all[0])) {
      const std::vector<at::Tensor> want = Flatten(sum, plan);
      const std::vector<at::Tensor> scale = Flatten(magnitude, plan);
      std::vector<at::Tensor> got;
      std::vector<double> atols;
      for (size_t b = 0; b < want.size(); ++b) {
        auto it = result.tensors.find(Key(update, plan_name, b));
        if (it == result.tensors.end()) {
          failures->push_back(absl::StrCat(world_size, " ranks: rank ", rank, " has no ",
                                           Key(update, plan_name, b)));
          return;
        }
        got.push_back(it->second);
        atols.push_back(kRelativeTolerance * scale[b].max().item<double>());
      }
      const std::string prefix = absl::StrCat("update ", update, ", ", plan_name, " bucket ");
      absl::StatusOr<TensorListComparison> comparison =
          CompareTensors(Named(got, prefix), Named(want, prefix), kRelativeTolerance, atols);
      if (!comparison.ok()) {
        failures->push_back(absl::StrCat(world_size, " ranks, rank ", rank, ": ",
                                         comparison.status().message()));
        continue;
      }
      for (const TensorComparison& c : comparison->tensors) {
        if (c.within_tolerance) continue;
        failures->push_back(absl::StrCat(
            world_size, " ranks, rank ", rank, ", ", c.name, " (", c.shape[0],
            " elements): max |diff| ", c.max_abs_diff, " from the ranks' sum (max |sum| ",
            c.max_abs_reference, ", tolerance ", *c.atol, " + ", kRelativeTolerance,
            " |sum|): not the SUM of the ranks' gradients"));
      }
    }
  }
}

NamedTensors Prefixed(const RankResult& result, const std::string& prefix, bool keep) {
  NamedTensors named;
  for (const auto& [key, tensor] : result.tensors) {
    const bool has = key.rfind(prefix, 0) == 0;
    if (has == keep) named.emplace_back(has ? key.substr(prefix.size()) : key, tensor);
  }
  return named;
}

// The names of `a` whose bits differ from `b`'s (or are missing there).
std::vector<std::string> BitwiseDifferences(const NamedTensors& a, const NamedTensors& b) {
  std::vector<std::string> names;
  absl::StatusOr<TensorListComparison> comparison = CompareTensors(a, b, 0, 0);
  if (!comparison.ok()) return {std::string(comparison.status().message())};
  for (const TensorComparison& c : comparison->tensors) {
    if (!c.bitwise_equal) {
      names.push_back(absl::StrCat(c.name, " (max |diff| ", c.max_abs_diff, ")"));
    }
  }
  return names;
}

void JudgeBuckets(const ReducerSuiteOptions& options, const GradientReducer& reducer,
                  const std::map<int, std::vector<RankResult>>& by_world, SuiteReport* report) {
  std::vector<std::string> sums, bits, allreduce;
  for (const auto& [world_size, results] : by_world) {
    for (int rank = 0; rank < world_size; ++rank) {
      if (results[rank].tensors.empty()) continue;
      CompareWithSum(reducer, world_size, rank, results[rank], &sums);
      const NamedTensors mine = Prefixed(results[rank], "allreduce_sum/", false);
      if (rank > 0 && !results[0].tensors.empty()) {
        for (const std::string& d :
             BitwiseDifferences(mine, Prefixed(results[0], "allreduce_sum/", false))) {
          bits.push_back(absl::StrCat(world_size, " ranks: rank ", rank, " and rank 0 differ in ", d));
        }
      }
      if (options.bitwise_allreduce_sum) {
        for (const std::string& d :
             BitwiseDifferences(mine, Prefixed(results[rank], "allreduce_sum/", true))) {
          allreduce.push_back(absl::StrCat(world_size, " ranks, rank ", rank,
                                           ": not bitwise allreduce_sum in ", d));
        }
      }
    }
  }
  report->Add("the SUM of the ranks' gradients, own and uneven buckets, 2 and 3 ranks, "
              "a rank passing zeros",
              sums);
  report->Add("the same bits on every rank", bits);
  if (options.bitwise_allreduce_sum) report->Add("bitwise what allreduce_sum gives", allreduce);
}

void JudgeChunks(GradientReducer& reducer, const std::map<int, std::vector<RankResult>>& by_world,
                 SuiteReport* report) {
  std::vector<std::string> sums, bits;
  at::Tensor all_rows = ChunkRows(-1, 1);
  const at::Tensor want = all_rows.to(at::kDouble).sum(0);
  absl::StatusOr<at::Tensor> one_rank = reducer.SumChunks(all_rows, ChunkBounds(1), nullptr);
  if (!one_rank.ok()) {
    report->Add("SumChunks on one rank", {std::string(one_rank.status().message())});
    return;
  }
  const double atol = kRelativeTolerance * ChunkRows(-1, 1).abs().sum(0).max().item<double>();
  for (const auto& [world_size, results] : by_world) {
    for (int rank = 0; rank < world_size; ++rank) {
      auto it = results[rank].tensors.find("chunks/sum");
      if (it == results[rank].tensors.end()) continue;
      const std::string who = absl::StrCat(world_size, " ranks, rank ", rank);
      absl::StatusOr<TensorListComparison> close = CompareTensors(
          {{"the chunk sum", it->second}}, {{"the chunk sum", want}}, kRelativeTolerance,
          std::vector<double>{atol});
      if (!close.ok() || !close->within_tolerance) {
        sums.push_back(absl::StrCat(who, ": not the sum of the chunk rows",
                                    close.ok() ? absl::StrCat(" (max |diff| ", close->max_abs_diff, ")")
                                               : std::string(close.status().message())));
      }
      for (const std::string& d : BitwiseDifferences({{"the chunk sum", it->second}},
                                                     {{"the chunk sum", *one_rank}})) {
        bits.push_back(absl::StrCat(who, ": differs from one rank's bits in ", d));
      }
    }
  }
  report->Add("SumChunks: the sum of the chunk rows, 2 and 3 ranks", sums);
  report->Add("SumChunks: the same bits on every rank and at every world size", bits);
}

void JudgeDeadPeer(const ReducerSuiteOptions& options, const std::string& scenario,
                   const std::vector<RankResult>& results, std::vector<std::string> failures,
                   SuiteReport* report) {
  const std::string check =
      scenario == "killed_peer"
          ? "a killed peer is an error within the timeout, not a hang"
          : "a stopped peer (SIGSTOP) is an error within the timeout, not a hang";
  const RankResult& zero = results[0];
  if (failures.empty()) {
    if (zero.scalars.count("healthy_failed") > 0) {
      failures.push_back(absl::StrCat("the reduction before the peer died failed: ", zero.message));
    } else if (zero.scalars.count("code") == 0) {
      failures.push_back("rank 0 reported nothing");
    } else {
      const auto code = static_cast<absl::StatusCode>(zero.scalars.at("code"));
      const int64_t elapsed_ms = zero.scalars.at("elapsed_ms");
      const int64_t limit_ms = (options.timeout.count() + 5) * 1000;
      if (code == absl::StatusCode::kOk) {
        failures.push_back("the reduction after the peer died returned OK");
      } else if (code != absl::StatusCode::kUnavailable &&
                 code != absl::StatusCode::kDeadlineExceeded &&
                 code != absl::StatusCode::kInternal && code != absl::StatusCode::kAborted) {
        failures.push_back(absl::StrCat("the error is ", absl::StatusCodeToString(code),
                                        " (", zero.message,
                                        "); a dead peer is Unavailable, DeadlineExceeded, "
                                        "Internal or Aborted"));
      }
      if (elapsed_ms > limit_ms) {
        failures.push_back(absl::StrCat("the error took ", elapsed_ms, " ms, more than the ",
                                        options.timeout.count(), " s timeout and 5 s"));
      }
      if (failures.empty()) {
        std::cout << "  " << scenario << ": " << absl::StatusCodeToString(code) << " after "
                  << elapsed_ms << " ms: " << zero.message.substr(0, 160) << "\n";
      }
    }
  }
  report->Add(check, failures);
}

}  // namespace

absl::StatusOr<SuiteReport> RunReducerSuite(const ReducerSuiteOptions& options) {
  absl::StatusOr<std::unique_ptr<GradientReducer>> reducer = MakeReducer(options.selection);
  if (!reducer.ok()) return reducer.status();
  SuiteReport report;
  std::vector<std::string> launch_failures;
  std::map<int, std::vector<RankResult>> by_world;
  for (int world_size : WorldSizes()) {
    absl::StatusOr<std::vector<RankResult>> results =
        RunScenario(options, "sum", world_size, &launch_failures);
    if (!results.ok()) return results.status();
    for (int rank = 0; rank < world_size; ++rank) {
      if (!(*results)[rank].message.empty()) {
        launch_failures.push_back(absl::StrCat(world_size, " ranks: rank ", rank, ": ",
                                               (*results)[rank].message));
      }
    }
    by_world[world_size] = *std::move(results);
  }
  report.Add("every rank reduces without an error, 2 and 3 ranks", launch_failures);
  if ((*reducer)->chunk_slots() > 0) {
    JudgeChunks(**reducer, by_world, &report);
  } else {
    JudgeBuckets(options, **reducer, by_world, &report);
  }
  for (const std::string scenario : {"killed_peer", "stopped_peer"}) {
    std::vector<std::string> failures;
    absl::StatusOr<std::vector<RankResult>> results = RunScenario(options, scenario, 2, &failures);
    if (!results.ok()) return results.status();
    JudgeDeadPeer(options, scenario, *results, failures, &report);
  }
  return report;
}

absl::Status RunReducerRank(const ReducerSuiteOptions& options, const std::string& scenario,
                            const std::string& folder) {
  absl::StatusOr<std::optional<DistributedEnv>> env = DistributedEnvFromEnvironment();
  if (!env.ok()) return env.status();
  if (!env->has_value()) return absl::InvalidArgumentError("a rank needs RANK and WORLD_SIZE");
  const DistributedEnv& me = **env;
  absl::StatusOr<ProcessGroupHandle> handle = ConnectProcessGroup(me, options.timeout);
  if (!handle.ok()) return handle.status();
  absl::StatusOr<std::unique_ptr<GradientReducer>> reducer = MakeReducer(options.selection);
  if (!reducer.ok()) return reducer.status();
  RankResult result;
  const absl::Status ran =
      scenario == "sum"
          ? SumScenario(options, **reducer, *handle->group, me.rank, me.world_size, &result)
          : DeadPeerScenario(scenario, **reducer, *handle, me.rank, me.world_size, &result);
  if (!ran.ok()) result.message = std::string(ran.message());
  return WriteRankResult(folder, me.rank, result);
}

}  // namespace receipt_parity

#include "replay/update_replay.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>
#include <utility>

#include <ATen/ATen.h>
#include <ATen/core/Generator.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/grad_mode.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "collectives/collective_error.h"
#include "collectives/local_process_group.h"
#include "collectives/sum_across_ranks.h"
#include "model/model_state.h"
#include "model/share_backward.h"
#include "model/sync_batch_norm.h"
#include "reducers/chunk_tree.h"

namespace receipt_parity {
namespace {

// float32's unit roundoff, and gamma(n) = n u / (1 - n u): the relative
// error bound of a sum of n + 1 terms in any order (Higham, Accuracy and
// Stability of Numerical Algorithms, 2nd ed., section 4.2).
constexpr double kUnitRoundoff = 0x1p-24;
double Gamma(int n) { return n * kUnitRoundoff / (1 - n * kUnitRoundoff); }

using Clock = std::chrono::steady_clock;

std::string Where(int64_t update) { return absl::StrCat("replay of update ", update); }

// The default CPU generator seeded for the replay, its state restored when
// this goes.
class ReplayGenerator {
 public:
  explicit ReplayGenerator(uint64_t seed) : generator_(at::detail::getDefaultCPUGenerator()) {
    std::lock_guard<std::mutex> lock(generator_.mutex());
    saved_ = generator_.get_state();
    generator_.set_current_seed(seed);
  }
  ~ReplayGenerator() {
    std::lock_guard<std::mutex> lock(generator_.mutex());
    generator_.set_state(saved_);
  }
  ReplayGenerator(const ReplayGenerator&) = delete;
  ReplayGenerator& operator=(const ReplayGenerator&) = delete;

 private:
  at::Generator generator_;
  at::Tensor saved_;
};

// A new model of the run's config holding the run's state before K.
absl::StatusOr<std::shared_ptr<Classifier>> ModelBefore(const ReplayTools& tools,
                                                        const RunStateAtUpdate& state) {
  absl::StatusOr<std::shared_ptr<Classifier>> model = tools.make_model();
  if (!model.ok()) return model.status();
  if (absl::Status s = LoadModelState(**model, state.model_before); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("replay: the run's state before the update: ",
                                               s.message()));
  }
  (*model)->train(true);
  return model;
}

int64_t ParameterElements(Classifier& model) {
  int64_t n = 0;
  for (const at::Tensor& p : model.parameters()) n += p.numel();
  return n;
}

at::Tensor FlatGradients(Classifier& model) {
  const std::vector<at::Tensor> parameters = model.parameters();
  at::Tensor flat = at::zeros({ParameterElements(model)}, parameters.front().options());
  FlattenGradients(model, flat);
  return flat;
}

// Every parameter's .grad a copy of its part of `flat`.
void SetGradients(Classifier& model, const at::Tensor& flat) {
  int64_t offset = 0;
  for (at::Tensor p : model.parameters()) {
    p.mutable_grad() = flat.narrow(0, offset, p.numel()).view(p.sizes()).clone();
    offset += p.numel();
  }
}

// `tensors` (registration order) laid end to end, as float32 or their own
// dtype.
at::Tensor Flat(const NamedTensors& tensors) {
  std::vector<at::Tensor> parts;
  for (const auto& [name, tensor] : tensors) parts.push_back(tensor.reshape(-1));
  return at::cat(parts);
}

NamedTensors NamedOf(Classifier& model, bool gradients) {
  NamedTensors named;
  for (const auto& item : model.named_parameters()) {
    named.emplace_back(item.key(), gradients ? item.value().grad() : item.value());
  }
  return named;
}

// InvalidArgument unless `run` holds the model's parameters by name and
// shape, in order.
absl::Status CheckSameLayout(const NamedTensors& model, const NamedTensors& run,
                             const char* what) {
  if (model.size() != run.size()) {
    return absl::InvalidArgumentError(absl::StrCat("replay: the run's ", what, " has ",
                                                   run.size(), " tensors, the model ",
                                                   model.size()));
  }
  for (size_t i = 0; i < model.size(); ++i) {
    if (model[i].first != run[i].first ||
        !model[i].second.sizes().equals(run[i].second.sizes())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "replay: the run's ", what, " tensor ", i, " is ", run[i].first,
          " of another name or shape than the model's ", model[i].first));
    }
  }
  return absl::OkStatus();
}

// The shares' gradients, one flat row per rank in rank order (each rank's
// own clipping applied, scope local).
struct Shares {
  std::vector<at::Tensor> flats;
};

absl::Status ComputeShare(const RecordedUpdate& update, const ReplayTools& tools, int rank,
                          c10d::ProcessGroup* group, Classifier& model, at::Tensor* flat) {
  ShareBackwardParts parts;
  parts.model = &model;
  parts.examples = tools.examples;
  parts.total_update = update.total_update;
  parts.bf16 = update.bf16;
  parts.one_rank = update.shares.size() == 1;
  parts.where = absl::StrCat(Where(update.total_update), ", rank ", rank);
  parts.sum = RankSumOver(group, absl::StrCat(parts.where, ": the statistics"));
  absl::StatusOr<WeightedBackwardResult> backward = ShareBackward(update.shares[rank], parts);
  if (!backward.ok()) return backward.status();
  try {
    if (update.clipping.has_value() && !update.clipping->global) {
      ClipGradients(model.parameters(), update.clipping->max_norm);
    }
    *flat = FlatGradients(model);
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, absl::StrCat(parts.where, ": LibTorch"));
  }
  return absl::OkStatus();
}

// Every rank's share computed on `model` (the state before the update; a
// share's backward changes its gradients only), one after another; with
// synchronized batch norm on several ranks the ranks run at once, as
// threads, rank 0 on `model` and every other on a model of its own.
absl::StatusOr<Shares> ComputeShares(const RecordedUpdate& update, const RunStateAtUpdate& state,
                                     const ReplayTools& tools, bool sync_batch_norm,
                                     const std::shared_ptr<Classifier>& model) {
  const int world = static_cast<int>(update.shares.size());
  const bool threads = sync_batch_norm && world > 1;
  std::vector<std::shared_ptr<Classifier>> models = {model};
  for (int r = 1; threads && r < world; ++r) {
    absl::StatusOr<std::shared_ptr<Classifier>> made = ModelBefore(tools, state);
    if (!made.ok()) return made.status();
    models.push_back(*std::move(made));
  }
  // Seeded after the models are made (a team's module is seeded when built).
  const ReplayGenerator generator(tools.generator_seed);
  Shares shares;
  shares.flats.resize(world);
  if (!threads) {
    for (int r = 0; r < world; ++r) {
      if (absl::Status s = ComputeShare(update, tools, r, nullptr, *model, &shares.flats[r]);
          !s.ok()) {
        return s;
      }
    }
    return shares;
  }
  // The statistics cross the ranks between passes: each rank a thread.
  const absl::Status ran = RunOnLocalGroup(
      world,
      [&](int rank, c10d::ProcessGroup& group) {
        return ComputeShare(update, tools, rank, &group, *models[rank], &shares.flats[rank]);
      },
      tools.timeout);
  if (!ran.ok()) return ran;
  return shares;
}

// The ordered mode: every chunk alone, its row; the rows (+0) in order.
absl::StatusOr<at::Tensor> OrderedSum(const RecordedUpdate& update, const ReplayTools& tools,
                                      const std::shared_ptr<Classifier>& model) {
  const ReplayGenerator generator(tools.generator_seed);
  ShareBackwardParts parts;
  parts.model = model.get();
  parts.examples = tools.examples;
  parts.total_update = update.total_update;
  parts.bf16 = update.bf16;
  parts.where = Where(update.total_update);
  try {
    at::Tensor rows = at::zeros({update.chunk_rows, ParameterElements(*model)},
                                model->parameters().front().options());
    for (const ChunkShare& chunk : update.chunks) {
      absl::StatusOr<WeightedBackwardResult> backward = ChunkBackward(chunk, parts);
      if (!backward.ok()) return backward.status();
      at::Tensor row = rows[chunk.row];
      FlattenGradients(*model, row);
    }
    // The ordered mode's tree over the rows, whichever rank added which of
    // its nodes (reducers/chunk_tree.h).
    return SumSubtree(rows, 0, {0, rows.size(0)});
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, absl::StrCat(parts.where, ": LibTorch"));
  }
}

// Elementwise bound of |run - replay| in bound mode (the header's formula),
// over the divided, unclipped sum `divided` and the shares.
at::Tensor BoundOf(const Shares& shares, const at::Tensor& divided, int divisor,
                   double replay_factor, double run_factor) {
  at::Tensor magnitude = at::zeros_like(divided, at::kDouble);
  for (const at::Tensor& flat : shares.flats) magnitude.add_(flat.to(at::kDouble).abs());
  const int world = static_cast<int>(shares.flats.size());
  const at::Tensor sum_abs = divided.to(at::kDouble).abs();
  at::Tensor bound = magnitude * (2 * Gamma(world - 1) / divisor);
  if (divisor != 1) bound = bound + 2 * kUnitRoundoff * (sum_abs + bound);
  const at::Tensor run_abs = sum_abs + bound;
  at::Tensor scaled = replay_factor * bound + std::fabs(run_factor - replay_factor) * run_abs;
  if (replay_factor < 1) scaled = scaled + kUnitRoundoff * replay_factor * sum_abs;
  if (run_factor < 1) scaled = scaled + kUnitRoundoff * run_factor * run_abs;
  return scaled;
}

// The element whose bits differ (bitwise) or whose |difference| exceeds
// `bound` (when defined) first, in registration order; nullopt when none.
struct Compared {
  double max_abs_diff = 0;
  double largest_share = 0;
  double bound_at_largest = 0;
  bool bitwise = true;
  std::optional<ReplayDifference> first;
};

bool SameBits(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor x = a.contiguous();
  const at::Tensor y = b.contiguous();
  return x.scalar_type() == y.scalar_type() && x.numel() == y.numel() &&
         std::memcmp(x.data_ptr(), y.data_ptr(), x.numel() * x.element_size()) == 0;
}

// The index of the first element of a and b whose bits differ.
int64_t FirstDifferentBits(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor x = a.contiguous().reshape(-1);
  const at::Tensor y = b.contiguous().reshape(-1);
  const int64_t size = x.element_size();
  const char* p = static_cast<const char*>(x.data_ptr());
  const char* q = static_cast<const char*>(y.data_ptr());
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (std::memcmp(p + i * size, q + i * size, size) != 0) return i;
  }
  return -1;
}

Compared CompareNamed(const NamedTensors& run, const NamedTensors& replay,
                      const at::Tensor& flat_bound, const char* what) {
  Compared out;
  int64_t offset = 0;
  for (size_t t = 0; t < run.size(); ++t) {
    const at::Tensor& a = run[t].second;
    const at::Tensor& b = replay[t].second;
    const at::Tensor diff = (a.to(at::kDouble) - b.to(at::kDouble)).abs().reshape(-1);
    if (diff.numel() > 0) out.max_abs_diff = std::max(out.max_abs_diff, diff.max().item<double>());
    const bool same = SameBits(a, b);
    out.bitwise = out.bitwise && same;
    int64_t at_element = -1;
    double bound_there = 0;
    if (!flat_bound.defined()) {
      if (!same) at_element = FirstDifferentBits(a, b);
    } else {
      const at::Tensor bound = flat_bound.narrow(0, offset, a.numel());
      const at::Tensor share = diff / bound;  // 0 / 0 is NaN: treated as within below
      const at::Tensor beyond = (diff > bound).nonzero();
      if (beyond.numel() > 0) at_element = beyond[0].item<int64_t>();
      const at::Tensor finite_share = at::where(diff == 0, at::zeros_like(share), share);
      if (finite_share.numel() > 0) {
        const int64_t worst = finite_share.argmax().item<int64_t>();
        const double s = finite_share[worst].item<double>();
        if (s > out.largest_share) {
          out.largest_share = s;
          out.bound_at_largest = bound[worst].item<double>();
        }
      }
      if (at_element >= 0) bound_there = bound[at_element].item<double>();
    }
    if (at_element >= 0 && !out.first.has_value()) {
      ReplayDifference d;
      d.set_what(what);
      d.set_tensor(run[t].first);
      d.set_element(static_cast<int32_t>(at_element));
      d.set_run(a.reshape(-1)[at_element].item<double>());
      d.set_replay(b.reshape(-1)[at_element].item<double>());
      d.set_bound(bound_there);
      out.first = d;
    }
    offset += a.numel();
  }
  return out;
}

// The smallest over the moved elements of half an ulp of |after| (float)
// over |after - before| (in double), as the tensor formula below computes
// it, in one pass without temporaries: nullopt when no element moved; NaN
// when a ratio is NaN (an infinite parameter), as at::min propagates it.
std::optional<double> SmallestRelativeChangeOfFloats(const at::Tensor& after,
                                                     const at::Tensor& before) {
  const float* a = after.data_ptr<float>();
  const float* b = before.data_ptr<float>();
  std::optional<double> smallest;
  for (int64_t i = 0; i < after.numel(); ++i) {
    const double change = std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
    if (!(change > 0)) continue;
    const float magnitude = std::fabs(a[i]);
    const double half_ulp =
        static_cast<double>(std::nextafter(magnitude, std::numeric_limits<float>::infinity()) -
                            magnitude) /
        2;
    const double ratio = half_ulp / change;
    if (smallest.has_value() && std::isnan(*smallest)) continue;
    if (!smallest.has_value() || std::isnan(ratio) || ratio < *smallest) smallest = ratio;
  }
  return smallest;
}

// The same for any dtype, through LibTorch's kernels.
std::optional<double> SmallestRelativeChange(const at::Tensor& after, const at::Tensor& before) {
  const at::Tensor a = after.to(at::kCPU).to(at::kFloat).abs().reshape(-1);
  const at::Tensor half_ulp =
      (at::nextafter(a, at::full_like(a, std::numeric_limits<float>::infinity())) - a)
          .to(at::kDouble) /
      2;
  const at::Tensor change = (after.to(at::kDouble) - before.to(at::kDouble)).abs().reshape(-1);
  const at::Tensor moved = change > 0;
  if (!moved.any().item<bool>()) return std::nullopt;
  return (half_ulp.masked_select(moved) / change.masked_select(moved)).min().item<double>();
}

// Per tensor, the smallest e such that making the step's change (1 + e)
// times itself moves some element of the parameter after it by half an ulp
// or more, so that the bit-for-bit comparison sees it.
std::vector<TensorPower> StepResolution(const RunStateAtUpdate& state) {
  std::vector<TensorPower> power;
  for (const auto& [name, after] : state.parameters_after) {
    TensorPower p;
    p.set_name(name);
    auto before = state.model_before.find(kModelParameterPrefix + name);
    if (before == state.model_before.end() || after.numel() == 0) {
      power.push_back(p);
      continue;
    }
    const std::optional<double> smallest = SmallestDetectableChange(after, before->second);
    if (smallest.has_value()) {
      p.set_judged(true);
      p.set_smallest_relative_change(*smallest);
    }
    power.push_back(p);
  }
  return power;
}

// The factor the replay steps at: a fresh schedule's Factor(K) (a failure
// in `out` when the run stepped at another), or the recorded one.
absl::StatusOr<double> RateFactor(const RecordedUpdate& update, const ReplayTools& tools,
                                  UpdateReplay* out) {
  if (!tools.make_schedule) return update.rate_factor;
  absl::StatusOr<std::unique_ptr<LearningRateSchedule>> schedule = tools.make_schedule();
  if (!schedule.ok()) return schedule.status();
  const double factor = (*schedule)->Factor(update.total_update);
  if (factor != update.rate_factor) {
    out->add_failures(absl::StrFormat(
        "replay of update %d: the config's schedule gives the factor %.17g, but the run "
        "stepped with %.17g (a schedule must be a function of the update alone)",
        update.total_update, factor, update.rate_factor));
  }
  return factor;
}

std::string Describe(const ReplayDifference& d, int64_t update) {
  return absl::StrFormat(
      "replay of update %d: the %s of %s differs first at element %d: the run has %.9g, the "
      "replay computed %.9g%s",
      update, d.what(), d.tensor(), d.element(), d.run(), d.replay(),
      d.bound() > 0 ? absl::StrFormat(" (beyond its bound %.3g)", d.bound()) : "");
}

// Why `update` cannot be replayed faithfully here; empty when it can.
std::string NotReplayable(const RecordedUpdate& update, bool sync_batch_norm) {
  if (update.device.rfind("cpu", 0) != 0) {
    return absl::StrCat("the run computed on ", update.device,
                        "; the replay recomputes on the CPU, whose kernels round otherwise");
  }
  if (update.chunk_rows > 0 && update.clipping.has_value() && !update.clipping->global) {
    return "clip_grad_norm scope local in the ordered mode: a rank's chunks have no gradient "
           "of their own to clip";
  }
  if (update.chunk_rows == 0 && sync_batch_norm && update.shares.size() > 2) {
    return absl::StrCat(
        "synchronized batch norms on ", update.shares.size(),
        " ranks: their statistics were added in the collective's order, which a replay "
        "cannot know, and the difference runs through the forward pass, beyond a sum's bound");
  }
  if (update.chunk_rows == 0 && update.shares.empty()) return "the run recorded no share";
  return "";
}

}  // namespace

std::string ReplayMethod() {
  return "each checked update recomputed in one process from the run's own state before it "
         "(parameters, buffers, optimizer state, the schedule's rate): every rank's "
         "micro-batches with its weights, precision and keys through the ranks' own code, "
         "synchronized batch norm statistics added by a Gloo group of threads, the shares "
         "added in rank order (the ordered mode's chunks in chunk order), divided by the "
         "reducer's divisor, clipped, stepped by a fresh optimizer, with the default "
         "generator seeded otherwise than the run's; bitwise for the ordered mode and two "
         "ranks (one rounding per element in any order), else the gradient within the "
         "rigorous bound of two sums of W terms in different orders and the step, from the "
         "run's own gradient, bit for bit";
}

namespace {

// The recorded gradient and parameters after the step have the model's
// tensors, names and shapes.
absl::Status CheckRecordedLayouts(Classifier& model, const RunStateAtUpdate& state) {
  if (absl::Status s = CheckSameLayout(NamedOf(model, false), state.gradient, "gradient");
      !s.ok()) {
    return s;
  }
  return CheckSameLayout(NamedOf(model, false), state.parameters_after, "parameters after");
}

// Steps `model` (its gradients set) by a fresh optimizer holding the run's
// state before the update, at the update's rate, and compares the
// parameters with the run's after it: whether they are its bits; the first
// difference and its failure go into `out`. Throws LibTorch's exceptions.
absl::StatusOr<bool> StepAndCompare(const RecordedUpdate& update,
                                    const RunStateAtUpdate& state, const ReplayTools& tools,
                                    Classifier& model, UpdateReplay* out) {
  absl::StatusOr<std::unique_ptr<torch::optim::Optimizer>> optimizer =
      tools.optimizer->Build(NamedParametersOf(model));
  if (!optimizer.ok()) return optimizer.status();
  const std::vector<double> base_rates = BaseRates(**optimizer);
  if (absl::Status s = tools.optimizer->RestoreState(NamedParametersOf(model), **optimizer,
                                                     state.optimizer_before);
      !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("replay: the run's optimizer state: ",
                                               s.message()));
  }
  absl::StatusOr<double> rate_factor = RateFactor(update, tools, out);
  if (!rate_factor.ok()) return rate_factor.status();
  StepAtRate(**optimizer, base_rates, *rate_factor);
  const Compared parameters = CompareNamed(state.parameters_after, NamedOf(model, false),
                                           at::Tensor(), "parameter after the step");
  out->set_parameters_bitwise(parameters.bitwise);
  out->set_parameters_max_abs_diff(parameters.max_abs_diff);
  if (parameters.first.has_value()) {
    if (!out->has_first_difference()) *out->mutable_first_difference() = *parameters.first;
    out->add_failures(Describe(*parameters.first, update.total_update));
  }
  return parameters.bitwise;
}

// Times consecutive phases: each Next(), the seconds since the last.
class PhaseTimer {
 public:
  explicit PhaseTimer(Clock::time_point start) : last_(start) {}
  double Next() {
    const Clock::time_point now = Clock::now();
    const double seconds = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    return seconds;
  }

 private:
  Clock::time_point last_;
};

// The replay's gradient (in `model`, `divided` before clipping) clipped as
// the run clipped and compared with the run's, bit for bit or within the
// bound of the sum (bound mode), into `out`: whether bitwise. Throws
// LibTorch's exceptions.
bool JudgeGradient(const RecordedUpdate& update, const RunStateAtUpdate& state,
                   const Shares& shares, const at::Tensor& divided, bool bitwise_mode,
                   Classifier& model, UpdateReplay* out) {
  double factor = 1;
  if (update.clipping.has_value() && update.clipping->global) {
    factor = ClipGradients(model.parameters(), update.clipping->max_norm).factor;
  }
  const at::Tensor bound =
      bitwise_mode ? at::Tensor()
                   : BoundOf(shares, divided, update.reduced_divisor, factor,
                             update.run_clip_factor);
  const Compared gradient = CompareNamed(state.gradient, NamedOf(model, true), bound, "gradient");
  out->set_gradient_max_abs_diff(gradient.max_abs_diff);
  out->set_gradient_bound(gradient.bound_at_largest);
  out->set_largest_share_of_bound(gradient.largest_share);
  if (gradient.first.has_value()) {
    *out->mutable_first_difference() = *gradient.first;
    out->add_failures(Describe(*gradient.first, update.total_update));
  }
  return gradient.bitwise;
}

}  // namespace

std::optional<double> SmallestDetectableChange(const at::Tensor& after, const at::Tensor& before) {
  const bool floats = after.scalar_type() == at::kFloat && before.scalar_type() == at::kFloat &&
                      after.device().is_cpu() && before.device().is_cpu() &&
                      after.is_contiguous() && before.is_contiguous();
  return floats ? SmallestRelativeChangeOfFloats(after, before)
                : SmallestRelativeChange(after, before);
}

absl::StatusOr<UpdateReplay> ReplayUpdate(const RecordedUpdate& update,
                                          const RunStateAtUpdate& state,
                                          const ReplayTools& tools) {
  const Clock::time_point start = Clock::now();
  PhaseTimer phase(start);
  UpdateReplay out;
  out.set_update(static_cast<int32_t>(update.total_update));
  const bool ordered = update.chunk_rows > 0;
  int world = static_cast<int>(update.shares.size());
  for (const ChunkShare& chunk : update.chunks) world = std::max(world, chunk.rank + 1);
  out.set_ranks(world);
  absl::StatusOr<std::shared_ptr<Classifier>> stepper = ModelBefore(tools, state);
  if (!stepper.ok()) return stepper.status();
  Classifier& model = **stepper;
  const bool sync_batch_norm = !SyncBatchNorms(model).empty();
  if (const std::string why = NotReplayable(update, sync_batch_norm); !why.empty()) {
    out.set_mode("not_replayed");
    out.set_not_replayed(why);
    return out;
  }
  if (absl::Status s = CheckRecordedLayouts(model, state); !s.ok()) return s;
  out.mutable_phases()->set_models(phase.Next());
  const bool bitwise_mode = ordered || world <= 2;
  out.set_mode(bitwise_mode ? "bitwise" : "bound");
  Shares shares;
  at::Tensor divided;
  if (ordered) {
    absl::StatusOr<at::Tensor> total = OrderedSum(update, tools, *stepper);
    if (!total.ok()) return total.status();
    divided = *std::move(total);
  } else {
    absl::StatusOr<Shares> computed =
        ComputeShares(update, state, tools, sync_batch_norm, *stepper);
    if (!computed.ok()) return computed.status();
    shares = *std::move(computed);
  }
  try {
    if (!ordered) {
      divided = shares.flats[0].clone();
      for (size_t r = 1; r < shares.flats.size(); ++r) divided.add_(shares.flats[r]);
      if (update.reduced_divisor > 1) divided.div_(update.reduced_divisor);
    }
    SetGradients(model, divided);
    out.mutable_phases()->set_compute(phase.Next());
    const bool gradient_bitwise =
        JudgeGradient(update, state, shares, divided, bitwise_mode, model, &out);
    out.mutable_phases()->set_judge_gradient(phase.Next());
    // The step: from the replay's own gradient when it must be the run's
    // bits, else from the run's, so that the step is judged exactly.
    if (!bitwise_mode) SetGradients(model, Flat(state.gradient).to(divided.scalar_type()));
    out.set_stepped_from(bitwise_mode ? "replay" : "run");
    absl::StatusOr<bool> parameters_bitwise = StepAndCompare(update, state, tools, model, &out);
    if (!parameters_bitwise.ok()) return parameters_bitwise.status();
    out.set_bitwise(gradient_bitwise && *parameters_bitwise);
    out.mutable_phases()->set_step(phase.Next());
    for (TensorPower& p : StepResolution(state)) *out.add_power() = std::move(p);
    out.mutable_phases()->set_power(phase.Next());
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, absl::StrCat(Where(update.total_update), ": LibTorch"));
  }
  out.set_pass(out.failures_size() == 0);
  out.set_seconds(std::chrono::duration<double>(Clock::now() - start).count());
  return out;
}

ReplayVerdict ReplayVerdictOf(std::vector<UpdateReplay> updates) {
  ReplayVerdict verdict;
  verdict.set_method(ReplayMethod());
  bool pass = true;
  for (UpdateReplay& u : updates) {
    if (u.mode() != "not_replayed") {
      verdict.set_replayed_updates(verdict.replayed_updates() + 1);
      if (u.bitwise()) verdict.set_bitwise_updates(verdict.bitwise_updates() + 1);
      pass = pass && u.pass();
    }
    *verdict.add_updates() = std::move(u);
  }
  verdict.set_pass(pass && verdict.replayed_updates() > 0);
  if (verdict.replayed_updates() == 0) {
    verdict.set_not_replayed(verdict.updates_size() == 0
                                 ? "no checked update's state was recorded"
                                 : "no checked update could be replayed here (each says why)");
  }
  return verdict;
}

}  // namespace receipt_parity

// bare_libtorch_step --model='architecture: "cnn" conv_channels: [8, 16]
//     hidden_units: [32]' --batch=32 --updates=1000 --max_seconds=5
//     --pool_images=P.f32 --pool_labels=P.i64 --out=F [--pin_cpu=C]
//
// The floor the harness's per-update time is compared with: the model of
// //model:classifier (BuildClassifier), batches of --batch examples cut
// BEFORE timing from the receipt pool (bench/receipt_pool.h) in a seeded
// random order (random noise without a pool), and in a loop that cycles
// through them nothing but forward, mean cross-entropy, backward and the
// SGD step (momentum, through the optimizer plugin, config/run_optimizer.h, as the trainer
// builds it), on one intra-op thread. No sampler, no weighting, no batch
// selection, no reducer. Batches vary because max pooling's cost depends on
// the pixels: one fixed batch would time that batch, not the data.
//
// Prints a BareStepResult (bench/scaling_report.proto) as JSON to --out, or
// to stdout when --out is empty: the median per-update time over the timed
// updates after --warmup_updates.
//
// Exit codes: 0 done; 2 bad input (flags, model config); 1 LibTorch failed.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "artifacts/run_summary_builder.h"
#include "bench/receipt_pool.h"
#include "data/label_map.h"
#include "bench/scaling_report.pb.h"
#include "google/protobuf/text_format.h"
#include "io/json_file.h"
#include "model/classifier.h"
#include "runtime/cpu_pinning.h"
#include "config/config.pb.h"
#include "config/run_optimizer.h"

ABSL_FLAG(std::string, model, "",
          "ModelConfig as a text proto, e.g. 'architecture: \"mlp\" "
          "hidden_units: [244]'.");
ABSL_FLAG(int32_t, image_size, 32, "Images are 1 x S x S.");
ABSL_FLAG(int32_t, batch, 32, "Examples in the batch.");
ABSL_FLAG(int32_t, warmup_updates, 2, "Untimed updates first.");
ABSL_FLAG(int32_t, updates, 200, "Timed updates (at most).");
ABSL_FLAG(double, max_seconds, 0,
          "Stop the timed updates after this many seconds (0: no limit); "
          "at least one update is timed.");
ABSL_FLAG(double, learning_rate, 0.05, "SGD learning rate.");
ABSL_FLAG(double, momentum, 0.9, "SGD momentum.");
ABSL_FLAG(uint64_t, seed, 37, "Seed of the model and of the batch.");
ABSL_FLAG(std::string, pool_images, "",
          "Receipt pool images (bench/receipt_pool.h); empty: random noise.");
ABSL_FLAG(std::string, pool_labels, "", "Receipt pool labels.");
ABSL_FLAG(std::string, out, "", "Result JSON file; empty: stdout.");
ABSL_FLAG(int32_t, pin_cpu, -1,
          "Pin this process to that CPU first (runtime/cpu_pinning.h), as the "
          "trainer's launcher pins a rank; -1: not pinned.");

namespace receipt_parity {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kExitFailed = 1;
constexpr int kExitBadInput = 2;

absl::Status CheckFlags() {
  for (const auto& [name, value] :
       std::vector<std::pair<const char*, int32_t>>{
           {"image_size", absl::GetFlag(FLAGS_image_size)},
           {"batch", absl::GetFlag(FLAGS_batch)},
           {"updates", absl::GetFlag(FLAGS_updates)}}) {
    if (value < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, " must be >= 1, got ", value));
    }
  }
  if (absl::GetFlag(FLAGS_warmup_updates) < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--warmup_updates must be >= 0, got ", absl::GetFlag(FLAGS_warmup_updates)));
  }
  if (absl::GetFlag(FLAGS_max_seconds) < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max_seconds must be >= 0, got ", absl::GetFlag(FLAGS_max_seconds)));
  }
  return absl::OkStatus();
}

absl::StatusOr<ModelConfig> ParseModel(const std::string& text) {
  if (text.empty()) {
    return absl::InvalidArgumentError(
        "--model is required, e.g. --model='architecture: \"cnn\" "
        "conv_channels: [8, 16] hidden_units: [32]'");
  }
  ModelConfig model;
  if (!google::protobuf::TextFormat::ParseFromString(text, &model)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--model: not a ModelConfig text proto: '", text, "'"));
  }
  return model;
}

struct Batch {
  at::Tensor images;  // [batch, 1, S, S]
  at::Tensor labels;  // [batch] int64
};

// The pool's receipts in a random order cut into whole batches (contiguous
// tensors), or one batch of random noise without a pool. Call after the
// model is built: the order and the noise come from its seeded generator.
absl::StatusOr<std::vector<Batch>> MakeBatches(int batch, int size) {
  const std::string images_path = absl::GetFlag(FLAGS_pool_images);
  const std::string labels_path = absl::GetFlag(FLAGS_pool_labels);
  if (images_path.empty() != labels_path.empty()) {
    return absl::InvalidArgumentError(
        "--pool_images and --pool_labels go together");
  }
  if (images_path.empty()) {
    return std::vector<Batch>{{at::rand({batch, 1, size, size}),
                               at::randint(kNumLabels, {batch}, at::kLong)}};
  }
  absl::StatusOr<ReceiptPool> pool = ReadReceiptPool(images_path, labels_path, size);
  if (!pool.ok()) return pool.status();
  if (pool->size() < batch) {
    return absl::InvalidArgumentError(absl::StrCat(
        images_path, ": ", pool->size(), " receipts, fewer than --batch=", batch));
  }
  const at::Tensor images =
      at::tensor(at::ArrayRef<float>(pool->images)).view({pool->size(), 1, size, size});
  const at::Tensor labels = at::tensor(at::ArrayRef<int64_t>(pool->labels));
  const at::Tensor order = at::randperm(pool->size());
  std::vector<Batch> batches;
  for (int64_t start = 0; start + batch <= pool->size(); start += batch) {
    const at::Tensor rows = order.narrow(0, start, batch);
    batches.push_back({images.index_select(0, rows), labels.index_select(0, rows)});
  }
  return batches;
}

// The loop itself. LibTorch errors -> Internal.
absl::StatusOr<BareStepResult> TimeSteps(const ModelConfig& config) {
  const int size = absl::GetFlag(FLAGS_image_size);
  const int batch = absl::GetFlag(FLAGS_batch);
  absl::StatusOr<std::shared_ptr<Classifier>> built = BuildClassifier(
      config, {1, size, size}, kNumLabels, absl::GetFlag(FLAGS_seed));
  if (!built.ok()) return built.status();
  Classifier& model = **built;
  OptimizerConfig optimizer_config;
  optimizer_config.mutable_sgd()->set_learning_rate(absl::GetFlag(FLAGS_learning_rate));
  optimizer_config.mutable_sgd()->set_momentum(absl::GetFlag(FLAGS_momentum));
  absl::StatusOr<RunOptimizer> sgd = SelectRunOptimizer(optimizer_config);
  if (!sgd.ok()) return sgd.status();
  absl::StatusOr<std::unique_ptr<torch::optim::Optimizer>> optimizer =
      sgd->plugin->Build(NamedParametersOf(model));
  if (!optimizer.ok()) return optimizer.status();

  BareStepResult result;
  try {
    absl::StatusOr<std::vector<Batch>> batches = MakeBatches(batch, size);
    if (!batches.ok()) return batches.status();
    const int warmup = absl::GetFlag(FLAGS_warmup_updates);
    const int max_updates = absl::GetFlag(FLAGS_updates);
    const double max_seconds = absl::GetFlag(FLAGS_max_seconds);
    std::vector<double> seconds;
    double timed = 0;
    for (int u = 0; u < warmup + max_updates; ++u) {
      if (u > warmup && max_seconds > 0 && timed >= max_seconds) break;
      const Batch& data = (*batches)[u % batches->size()];
      const Clock::time_point start = Clock::now();
      (*optimizer)->zero_grad();
      at::Tensor loss = at::cross_entropy_loss(model.forward(data.images), data.labels);
      loss.backward();
      (*optimizer)->step();
      const double s = std::chrono::duration<double>(Clock::now() - start).count();
      if (u >= warmup) {
        seconds.push_back(s);
        timed += s;
      }
    }
    result.set_median_update_seconds(Median(seconds));
    result.set_updates(static_cast<int32_t>(seconds.size()));
    result.set_warmup_updates(warmup);
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("bare step: LibTorch: ", e.what_without_backtrace()));
  }
  int64_t parameters = 0;
  for (const at::Tensor& p : model.parameters()) parameters += p.numel();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  result.set_model(model.Describe());
  result.set_parameter_count(static_cast<int32_t>(parameters));
  result.set_batch(batch);
  result.set_examples_per_second(batch / result.median_update_seconds());
  result.set_peak_rss_mib(usage.ru_maxrss / 1024.0);  // KiB on Linux
  return result;
}

int Fail(const absl::Status& status) {
  std::cerr << "error: " << status.message() << std::endl;
  return status.code() == absl::StatusCode::kInvalidArgument ? kExitBadInput
                                                             : kExitFailed;
}

int Main() {
  if (absl::Status s = CheckFlags(); !s.ok()) return Fail(s);
  absl::StatusOr<ModelConfig> model = ParseModel(absl::GetFlag(FLAGS_model));
  if (!model.ok()) return Fail(model.status());
  if (const int cpu = absl::GetFlag(FLAGS_pin_cpu); cpu >= 0) {
    if (const int error = PinSelfToCpu(cpu); error != 0) {
      return Fail(absl::InvalidArgumentError(
          absl::StrCat("--pin_cpu=", cpu, ": ", std::strerror(error))));
    }
  }
  at::set_num_threads(1);
  absl::StatusOr<BareStepResult> result = TimeSteps(*model);
  if (!result.ok()) return Fail(result.status());
  const std::string out = absl::GetFlag(FLAGS_out);
  if (out.empty()) {
    std::cout << ToJson(*result);
    return 0;
  }
  if (absl::Status s = WriteJsonFile(out, *result); !s.ok()) return Fail(s);
  return 0;
}

}  // namespace
}  // namespace receipt_parity

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Times forward + backward + SGD step of the classifier on one batch: "
      "--model='architecture: \"cnn\" conv_channels: [8] hidden_units: [32]'");
  absl::ParseCommandLine(argc, argv);
  return receipt_parity::Main();
}

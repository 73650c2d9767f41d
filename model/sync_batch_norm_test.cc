#include "model/sync_batch_norm.h"

#include <memory>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "collectives/local_process_group.h"
#include "collectives/sum_across_ranks.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/classifier.h"
#include "model/sync_batch_norm_update.h"
#include "model/weighted_loss.h"

namespace receipt_parity {
namespace {

constexpr int kExamples = 12;

std::shared_ptr<Classifier> Cnn(const std::string& batch_norm = "sync") {
  ModelConfig config;
  config.set_architecture("cnn");
  config.add_conv_channels(4);
  config.add_conv_channels(6);
  config.add_hidden_units(8);
  config.set_batch_norm(batch_norm);
  auto model = BuildClassifier(config, {1, 8, 8}, 3, /*init_seed=*/5);
  EXPECT_TRUE(model.ok()) << model.status();
  return *model;
}

struct Batch {
  at::Tensor images = at::randn({kExamples, 1, 8, 8}, at::TensorOptions().dtype(at::kFloat));
  at::Tensor labels = at::randint(0, 3, {kExamples}, at::kLong);
  // Slot 11 is masked: computed, weight 0, left out of the statistics.
  at::Tensor valid = at::arange(kExamples) < 11;
  std::vector<double> weights = std::vector<double>(kExamples, 1.0 / 11);
  Batch() { weights[11] = 0; }
};

Batch MakeBatch() {
  at::manual_seed(3);
  return Batch();
}

UpdateMicroBatch Slice(const Batch& b, int64_t begin, int64_t size) {
  UpdateMicroBatch mb;
  mb.images = b.images.narrow(0, begin, size);
  mb.labels = b.labels.narrow(0, begin, size);
  mb.valid = b.valid.narrow(0, begin, size);
  mb.weights.assign(b.weights.begin() + begin, b.weights.begin() + begin + size);
  return mb;
}

// The one-worker reference: the whole update in one differentiable graph.
std::vector<at::Tensor> ReferenceGradients(Classifier& model, const Batch& b) {
  SyncBatchNormPass pass;
  pass.phase = BatchNormPhase::kDirect;
  pass.valid = b.valid;
  const SyncBatchNormPassScope scope(&pass);
  auto result = WeightedBackward(model, b.images, b.labels, b.weights);
  EXPECT_TRUE(result.ok()) << result.status();
  std::vector<at::Tensor> grads;
  for (const at::Tensor& g : Gradients(model)) grads.push_back(g.clone());
  return grads;
}

std::vector<at::Tensor> Buffers(const torch::nn::Module& model) {
  std::vector<at::Tensor> buffers;
  for (const at::Tensor& t : model.buffers()) buffers.push_back(t.clone());
  return buffers;
}

void ExpectClose(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b,
                 double rtol, double atol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(at::allclose(a[i].to(at::kDouble), b[i].to(at::kDouble), rtol, atol))
        << "tensor " << i << " differs by "
        << (a[i].to(at::kDouble) - b[i].to(at::kDouble)).abs().max().item<double>();
  }
}

TEST(SyncBatchNormTest, WithoutASumThreeMicroBatchesAreTheDirectReferenceBitwise) {
  const Batch b = MakeBatch();
  std::shared_ptr<Classifier> reference = Cnn();
  const std::vector<at::Tensor> expected = ReferenceGradients(*reference, b);
  std::shared_ptr<Classifier> cut = Cnn();
  auto loss = SyncBatchNormBackward(*cut, {Slice(b, 0, 4), Slice(b, 4, 4), Slice(b, 8, 4)},
                                    false, RankSum());
  ASSERT_TRUE(loss.ok()) << loss.status();
  const std::vector<at::Tensor> got = Gradients(*cut);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(at::equal(got[i], expected[i])) << i;
  const std::vector<at::Tensor> buffers = Buffers(*cut);
  for (size_t i = 0; i < buffers.size(); ++i) {
    EXPECT_TRUE(at::equal(buffers[i], Buffers(*reference)[i])) << i;
  }
  // A batch norm's running statistics moved at all.
  EXPECT_FALSE(at::equal(buffers[0], at::zeros_like(buffers[0])));
}

TEST(SyncBatchNormTest, ThePassesOverThreeMicroBatchesGiveTheWholeBatchsGradient) {
  const Batch b = MakeBatch();
  std::shared_ptr<Classifier> reference = Cnn();
  const std::vector<at::Tensor> expected = ReferenceGradients(*reference, b);
  std::shared_ptr<Classifier> cut = Cnn();
  auto loss = SyncBatchNormPassesBackward(
      *cut, {Slice(b, 0, 4), Slice(b, 4, 4), Slice(b, 8, 4)}, false, RankSumOver(nullptr, "x"));
  ASSERT_TRUE(loss.ok()) << loss.status();
  ExpectClose(Gradients(*cut), expected, 1e-4, 1e-6);
  ExpectClose(Buffers(*cut), Buffers(*reference), 1e-5, 1e-6);
  EXPECT_FALSE(at::equal(Buffers(*cut)[0], at::zeros_like(Buffers(*cut)[0])));
}

TEST(SyncBatchNormTest, TheSynchronizedBackwardOnOneRankGivesTheReference) {
  // The statistics' sum over one rank (the identity): the layer's own
  // backward, not autograd's, carries the statistics' gradient.
  const Batch b = MakeBatch();
  std::shared_ptr<Classifier> reference = Cnn();
  const std::vector<at::Tensor> expected = ReferenceGradients(*reference, b);
  std::shared_ptr<Classifier> cut = Cnn();
  int sums = 0;
  const RankSum counting = [&sums](at::Tensor&) {
    ++sums;
    return absl::OkStatus();
  };
  auto loss = SyncBatchNormBackward(*cut, {Slice(b, 0, 5), Slice(b, 5, 7)}, false, counting);
  ASSERT_TRUE(loss.ok()) << loss.status();
  ExpectClose(Gradients(*cut), expected, 1e-4, 1e-6);
  ExpectClose(Buffers(*cut), Buffers(*reference), 1e-5, 1e-6);
  // One sum per layer in the forward and one in the backward.
  EXPECT_EQ(sums, 4);
}

TEST(SyncBatchNormTest, ARankWithNoRowsStillSumsAndTheOtherGetsTheReference) {
  const Batch b = MakeBatch();
  std::shared_ptr<Classifier> reference = Cnn();
  const std::vector<at::Tensor> expected = ReferenceGradients(*reference, b);
  std::vector<std::shared_ptr<Classifier>> models = {Cnn(), Cnn()};
  // Rank 0's empty micro-batch adds no row; rank 1 has none at all.
  const std::vector<std::vector<UpdateMicroBatch>> shares = {
      {Slice(b, 0, 6), Slice(b, 12, 0), Slice(b, 6, 6)}, {Slice(b, 12, 0)}};
  absl::Status status = RunOnLocalGroup(2, [&](int rank, c10d::ProcessGroup& group) {
    return SyncBatchNormBackward(*models[rank], shares[rank], false,
                                 RankSumOver(&group, "statistics"))
        .status();
  });
  ASSERT_TRUE(status.ok()) << status;
  ExpectClose(Gradients(*models[0]), expected, 1e-4, 1e-6);
  for (const at::Tensor& g : Gradients(*models[1])) EXPECT_TRUE(at::equal(g, at::zeros_like(g)));
  const std::vector<at::Tensor> rank0 = Buffers(*models[0]);
  const std::vector<at::Tensor> rank1 = Buffers(*models[1]);
  for (size_t i = 0; i < rank0.size(); ++i) EXPECT_TRUE(at::equal(rank0[i], rank1[i]));
}

TEST(SyncBatchNormTest, MicroBatchesWithAndWithoutKeysAreRefused) {
  const Batch b = MakeBatch();
  UpdateMicroBatch keyed = Slice(b, 0, 6);
  keyed.update_keys = at::arange(6, at::kLong);
  std::shared_ptr<Classifier> model = Cnn();
  auto loss = SyncBatchNormBackward(*model, {keyed, Slice(b, 6, 6)}, false,
                                    RankSumOver(nullptr, "x"));
  ASSERT_FALSE(loss.ok());
  EXPECT_THAT(loss.status().message(), ::testing::HasSubstr("with and without update keys"));
}

TEST(SyncBatchNormTest, AnUpdateWithNoValidExampleIsRefusedNamingTheLayer) {
  Batch b = MakeBatch();
  b.valid = at::zeros({kExamples}, at::kBool);
  std::shared_ptr<Classifier> model = Cnn();
  auto loss = SyncBatchNormBackward(*model, {Slice(b, 0, 4)}, false, RankSumOver(nullptr, "x"));
  ASSERT_FALSE(loss.ok());
  EXPECT_EQ(loss.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(loss.status().message(), ::testing::HasSubstr("layer 0 saw no valid example"));
}

TEST(SyncBatchNormTest, TwoRanksWithUnevenSharesAndMicroBatchesGiveTheReference) {
  const Batch b = MakeBatch();
  std::shared_ptr<Classifier> reference = Cnn();
  const std::vector<at::Tensor> expected = ReferenceGradients(*reference, b);
  // Rank 0 holds 8 slots in 2 micro-batches, rank 1 the last 4 (one masked)
  // in 2 micro-batches of 2.
  std::vector<std::shared_ptr<Classifier>> models = {Cnn(), Cnn()};
  const std::vector<std::vector<UpdateMicroBatch>> shares = {
      {Slice(b, 0, 4), Slice(b, 4, 4)}, {Slice(b, 8, 2), Slice(b, 10, 2)}};
  std::vector<double> losses(2);
  absl::Status status = RunOnLocalGroup(2, [&](int rank, c10d::ProcessGroup& group) {
    auto loss = SyncBatchNormBackward(*models[rank], shares[rank], false,
                                      RankSumOver(&group, "statistics"));
    if (!loss.ok()) return loss.status();
    losses[rank] = loss->weighted_loss;
    return absl::OkStatus();
  });
  ASSERT_TRUE(status.ok()) << status;
  std::vector<at::Tensor> summed;
  for (size_t i = 0; i < expected.size(); ++i) {
    summed.push_back(Gradients(*models[0])[i] + Gradients(*models[1])[i]);
  }
  ExpectClose(summed, expected, 1e-4, 1e-6);
  // Both ranks hold bitwise the same running statistics, the reference's.
  const std::vector<at::Tensor> rank0 = Buffers(*models[0]);
  const std::vector<at::Tensor> rank1 = Buffers(*models[1]);
  for (size_t i = 0; i < rank0.size(); ++i) EXPECT_TRUE(at::equal(rank0[i], rank1[i]));
  ExpectClose(rank0, Buffers(*reference), 1e-5, 1e-6);
}

TEST(SyncBatchNormTest, PerRankBatchNormOnTheSameSharesDoesNotGiveTheReference) {
  const Batch b = MakeBatch();
  std::shared_ptr<Classifier> reference = Cnn("per_rank");
  ASSERT_TRUE(WeightedBackward(*reference, b.images.narrow(0, 0, 11),
                               b.labels.narrow(0, 0, 11),
                               std::vector<double>(11, 1.0 / 11))
                  .ok());
  std::vector<at::Tensor> expected;
  for (const at::Tensor& g : Gradients(*reference)) expected.push_back(g.clone());
  std::shared_ptr<Classifier> rank0 = Cnn("per_rank");
  std::shared_ptr<Classifier> rank1 = Cnn("per_rank");
  ASSERT_TRUE(WeightedBackward(*rank0, b.images.narrow(0, 0, 8), b.labels.narrow(0, 0, 8),
                               std::vector<double>(8, 1.0 / 11))
                  .ok());
  ASSERT_TRUE(WeightedBackward(*rank1, b.images.narrow(0, 8, 3), b.labels.narrow(0, 8, 3),
                               std::vector<double>(3, 1.0 / 11))
                  .ok());
  const at::Tensor summed = Gradients(*rank0)[0] + Gradients(*rank1)[0];
  EXPECT_FALSE(at::allclose(summed, expected[0], 1e-3, 1e-5));
}

TEST(SyncBatchNormTest, OutsideAnUpdateItUsesItsInputsStatisticsAndKeepsItsRunningOnes) {
  std::shared_ptr<Classifier> model = Cnn();
  const std::vector<at::Tensor> before = Buffers(*model);
  at::manual_seed(1);
  model->forward(at::randn({5, 1, 8, 8}));
  for (size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(at::equal(before[i], Buffers(*model)[i]));
  // In eval mode it normalizes by its running statistics: one example alone
  // gives what it gives among others.
  model->eval();
  const at::Tensor batch = at::randn({4, 1, 8, 8});
  const at::Tensor alone = model->forward(batch.narrow(0, 0, 1));
  EXPECT_TRUE(at::allclose(alone, model->forward(batch).narrow(0, 0, 1), 1e-6, 1e-6));
}

TEST(SyncBatchNormTest, APeerThatNeverSumsIsAnErrorNotAHang) {
  const Batch b = MakeBatch();
  std::vector<std::shared_ptr<Classifier>> models = {Cnn(), Cnn()};
  absl::Status status = RunOnLocalGroup(
      2,
      [&](int rank, c10d::ProcessGroup& group) -> absl::Status {
        if (rank == 1) return absl::OkStatus();
        return SyncBatchNormBackward(*models[0], {Slice(b, 0, 4)}, false,
                                     RankSumOver(&group, "the statistics"))
            .status();
      },
      absl::Seconds(2));
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), ::testing::HasSubstr("the statistics"));
}

}  // namespace
}  // namespace receipt_parity

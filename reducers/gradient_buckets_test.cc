#include "reducers/gradient_buckets.h"

#include <memory>
#include <vector>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "reducers/allreduce_sum_reducer.h"
#include "collectives/local_process_group.h"

namespace receipt_parity {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A two-layer net of leaf tensors: w0 [4,3], b0 [4], w1 [2,4], b1 [2].
struct TinyNet {
  explicit TinyNet(int seed) {
    at::manual_seed(seed);
    for (const std::vector<int64_t>& shape :
         std::vector<std::vector<int64_t>>{{4, 3}, {4}, {2, 4}, {2}}) {
      params.push_back(at::randn(shape).requires_grad_());
    }
    input = at::randn({5, 3});
  }
  // Zeroes the gradients in place (as the trainer does), then backward.
  void Backward() {
    for (at::Tensor& p : params) {
      if (p.grad().defined()) p.mutable_grad().zero_();
    }
    at::Tensor h = at::relu(at::addmm(params[1], input, params[0].t()));
    at::Tensor y = at::addmm(params[3], h, params[2].t());
    (y * y).sum().backward();
  }
  std::vector<at::Tensor> Grads() const {
    std::vector<at::Tensor> grads;
    for (const at::Tensor& p : params) grads.push_back(p.grad().clone());
    return grads;
  }
  std::vector<at::Tensor> params;
  at::Tensor input;
};

// allreduce_sum, remembering the order and timing of its starts.
class RecordingReducer : public GradientReducer {
 public:
  RecordingReducer(int64_t cap, bool overlap, const at::Tensor* watched)
      : sum_(*AllreduceSumReducer::Create(cap, overlap)), watched_(watched) {}
  std::vector<GradientBucket> PlanBuckets(
      const std::vector<at::Tensor>& gradients) const override {
    return sum_.PlanBuckets(gradients);
  }
  absl::Status ReduceBucket(at::Tensor& flat, c10d::ProcessGroup& group) override {
    return sum_.ReduceBucket(flat, group);
  }
  absl::Status StartBucket(at::Tensor& flat, c10d::ProcessGroup& group) override {
    started_numel.push_back(flat.numel());
    watched_was_zero.push_back(watched_->grad().abs().sum().item<double>() == 0);
    return sum_.StartBucket(flat, group);
  }
  absl::Status FinishBuckets() override { return sum_.FinishBuckets(); }
  bool overlaps_backward() const override { return sum_.overlaps_backward(); }
  ReduceStats stats() const override { return sum_.stats(); }

  std::vector<int64_t> started_numel;
  // At each start: whether the watched parameter's gradient was still zero.
  std::vector<bool> watched_was_zero;

 private:
  AllreduceSumReducer sum_;
  const at::Tensor* watched_;
};

TEST(GradientBucketsTest, ForTensorsMakesTheTensorsViewsOfOneFlatBuffer) {
  std::vector<at::Tensor> tensors = {at::arange(6, at::kFloat).reshape({2, 3}),
                                     at::full({4}, 7.0f)};
  const std::vector<at::Tensor> original = {tensors[0].clone(), tensors[1].clone()};
  auto buckets = GradientBuckets::ForTensors(tensors, PlanBuckets(tensors, 1 << 20));
  ASSERT_TRUE(buckets.ok()) << buckets.status();
  ASSERT_EQ((*buckets)->size(), 1);
  const at::Tensor& flat = (*buckets)->flat(0);
  EXPECT_EQ(flat.numel(), 10);
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_TRUE(tensors[i].is_alias_of(flat)) << i;
    EXPECT_TRUE(at::equal(tensors[i], original[i])) << i;
  }
  // Writing the flat buffer is writing the tensors.
  flat.fill_(2);
  EXPECT_TRUE(at::equal(tensors[1], at::full({4}, 2.0f)));
}

TEST(GradientBucketsTest, RefusesUndefinedTensorsAndPlansThatDoNotCover) {
  std::vector<at::Tensor> tensors = {at::ones({2}), at::Tensor()};
  EXPECT_THAT(GradientBuckets::ForTensors(tensors, {{0, 2, 8}}).status().message(),
              HasSubstr("gradient 1 is undefined"));
  std::vector<at::Tensor> two = {at::ones({2}), at::ones({2})};
  EXPECT_THAT(GradientBuckets::ForTensors(two, {{0, 1, 8}}).status().message(),
              HasSubstr("cover 1 of 2"));
  std::vector<at::Tensor> mixed = {at::ones({2}), at::ones({2}, at::kDouble)};
  EXPECT_THAT(GradientBuckets::ForTensors(mixed, {{0, 2, 24}}).status().message(),
              HasSubstr("mixes dtypes"));
}

TEST(GradientBucketsTest, GradientsStayViewsThroughBackwardAndInPlaceZeroing) {
  TinyNet net(1);
  AllreduceSumReducer reducer = *AllreduceSumReducer::Create(/*bucket_cap_bytes=*/40);
  auto buckets = GradientBuckets::ForParameters(net.params, reducer);
  ASSERT_TRUE(buckets.ok()) << buckets.status();
  // Reverse order [b1 8 B, w1 32 B, b0 16 B, w0 48 B] under 40 bytes.
  ASSERT_EQ((*buckets)->size(), 3);
  EXPECT_EQ((*buckets)->flat(0).numel(), 2 + 8);
  EXPECT_TRUE((*buckets)->GradientsAreViews());

  TinyNet plain(1);  // the same net without buckets
  for (int update = 0; update < 3; ++update) {
    net.Backward();
    plain.Backward();
    EXPECT_TRUE((*buckets)->GradientsAreViews()) << "update " << update;
    const std::vector<at::Tensor> got = net.Grads(), want = plain.Grads();
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(at::equal(got[i], want[i])) << "update " << update << " param " << i;
    }
  }
  ASSERT_TRUE((*buckets)->ZeroGradients().ok());
  EXPECT_EQ(net.params[0].grad().abs().sum().item<double>(), 0);
  EXPECT_TRUE((*buckets)->GradientsAreViews());
  // What LibTorch 2.x's zero_grad() does by default breaks the views.
  net.params[2].mutable_grad() = at::Tensor();
  EXPECT_FALSE((*buckets)->GradientsAreViews());
}

// Two ranks: overlapped and not, the reduced gradients are the sum of the
// ranks' gradients, bitwise; with overlap the first bucket starts while the
// backward has not reached the first layer yet.
TEST(GradientBucketsTest, OverlapStartsReadyBucketsInOrderDuringBackward) {
  std::vector<at::Tensor> expected;
  {
    TinyNet a(10), b(11);
    a.Backward();
    b.Backward();
    for (size_t i = 0; i < a.params.size(); ++i) {
      expected.push_back(a.params[i].grad() + b.params[i].grad());
    }
  }
  for (bool overlap : {true, false}) {
    std::vector<std::unique_ptr<TinyNet>> nets;
    std::vector<std::unique_ptr<RecordingReducer>> reducers;
    for (int r = 0; r < 2; ++r) {
      nets.push_back(std::make_unique<TinyNet>(10 + r));
      reducers.push_back(std::make_unique<RecordingReducer>(
          /*cap=*/1, overlap, &nets.back()->params[0]));
    }
    std::vector<size_t> started_in_backward(2);
    absl::Status status = RunOnLocalGroup(2, [&](int r, c10d::ProcessGroup& group) {
      auto buckets = GradientBuckets::ForParameters(nets[r]->params, *reducers[r]);
      if (!buckets.ok()) return buckets.status();
      for (int update = 0; update < 2; ++update) {
        (*buckets)->ArmBackward(*reducers[r], group);
        nets[r]->Backward();
        started_in_backward[r] = reducers[r]->started_numel.size();
        if (absl::Status s = (*buckets)->Reduce(*reducers[r], group); !s.ok()) return s;
        if (!(*buckets)->GradientsAreViews()) return absl::InternalError("not views");
        if (update == 0) {
          reducers[r]->started_numel.clear();
          reducers[r]->watched_was_zero.clear();
        }
      }
      return absl::OkStatus();
    });
    ASSERT_TRUE(status.ok()) << status;
    for (int r = 0; r < 2; ++r) {
      // One bucket per parameter, in reverse order: b1, w1, b0, w0.
      EXPECT_THAT(reducers[r]->started_numel, ElementsAre(2, 8, 4, 12));
      EXPECT_EQ(started_in_backward[r], overlap ? 4u : 0u);
      if (overlap) {
        EXPECT_TRUE(reducers[r]->watched_was_zero[0]);
      }
      EXPECT_EQ(reducers[r]->stats().collectives, 8);
      for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_TRUE(at::equal(nets[r]->params[i].grad(), expected[i]))
            << "overlap " << overlap << " rank " << r << " param " << i;
      }
    }
  }
}

// After an armed backward that gives the first layer no gradient, those
// are the gradients not accumulated, their values as they were; before any
// arming the question is refused.
TEST(GradientBucketsTest, NotAccumulatedNamesTheGradientsTheArmedBackwardLeft) {
  std::vector<std::unique_ptr<TinyNet>> nets;
  std::vector<std::unique_ptr<RecordingReducer>> reducers;
  for (int r = 0; r < 2; ++r) {
    nets.push_back(std::make_unique<TinyNet>(30 + r));
    reducers.push_back(
        std::make_unique<RecordingReducer>(/*cap=*/1, /*overlap=*/true, &nets.back()->params[0]));
  }
  std::vector<std::vector<at::Tensor>> left(2);
  std::vector<std::vector<at::Tensor>> left_values(2);
  std::vector<std::vector<at::Tensor>> before(2);
  absl::Status status = RunOnLocalGroup(2, [&](int r, c10d::ProcessGroup& group) {
    auto buckets = GradientBuckets::ForParameters(nets[r]->params, *reducers[r]);
    if (!buckets.ok()) return buckets.status();
    absl::StatusOr<std::vector<at::Tensor>> unarmed = (*buckets)->NotAccumulated();
    if (unarmed.status().code() != absl::StatusCode::kFailedPrecondition) {
      return absl::InternalError("NotAccumulated before ArmBackward was not refused");
    }
    nets[r]->Backward();
    before[r] = nets[r]->Grads();
    (*buckets)->ArmBackward(*reducers[r], group);
    // Only the second layer (w1, b1) gets a gradient.
    (nets[r]->params[2].sum() + nets[r]->params[3].sum()).backward();
    absl::StatusOr<std::vector<at::Tensor>> not_accumulated = (*buckets)->NotAccumulated();
    if (!not_accumulated.ok()) return not_accumulated.status();
    left[r] = *not_accumulated;
    for (const at::Tensor& gradient : left[r]) left_values[r].push_back(gradient.clone());
    return (*buckets)->Reduce(*reducers[r], group);
  });
  ASSERT_TRUE(status.ok()) << status;
  for (int r = 0; r < 2; ++r) {
    // Layout order (reverse): b0 before w0; the very tensors of .grad,
    // holding what the backward before the armed one left.
    ASSERT_EQ(left[r].size(), 2u);
    EXPECT_EQ(left[r][0].data_ptr(), nets[r]->params[1].grad().data_ptr());
    EXPECT_EQ(left[r][1].data_ptr(), nets[r]->params[0].grad().data_ptr());
    EXPECT_TRUE(at::equal(left_values[r][0], before[r][1]));
    EXPECT_TRUE(at::equal(left_values[r][1], before[r][0]));
  }
}

// The start observer sees each bucket as this rank's backward left it,
// before the reducer sums it, with its offset in the buckets laid end to
// end: in the backward pass (overlap) and in Reduce() alike.
TEST(GradientBucketsTest, TheStartObserverSeesEachBucketBeforeItIsReduced) {
  for (bool overlap : {true, false}) {
    std::vector<std::unique_ptr<TinyNet>> nets;
    std::vector<std::unique_ptr<RecordingReducer>> reducers;
    std::vector<std::vector<at::Tensor>> own(2);
    for (int r = 0; r < 2; ++r) {
      TinyNet alone(20 + r);
      alone.Backward();
      own[r] = alone.Grads();
      nets.push_back(std::make_unique<TinyNet>(20 + r));
      reducers.push_back(
          std::make_unique<RecordingReducer>(/*cap=*/1, overlap, &nets.back()->params[0]));
    }
    std::vector<std::vector<std::pair<int64_t, at::Tensor>>> seen(2);
    absl::Status status = RunOnLocalGroup(2, [&](int r, c10d::ProcessGroup& group) {
      auto buckets = GradientBuckets::ForParameters(nets[r]->params, *reducers[r]);
      if (!buckets.ok()) return buckets.status();
      (*buckets)->ObserveStarts([&seen, r](int, const at::Tensor& flat, int64_t offset) {
        seen[r].emplace_back(offset, flat.clone());
        return absl::OkStatus();
      });
      (*buckets)->ArmBackward(*reducers[r], group);
      nets[r]->Backward();
      return (*buckets)->Reduce(*reducers[r], group);
    });
    ASSERT_TRUE(status.ok()) << status;
    for (int r = 0; r < 2; ++r) {
      // b1 [2], w1 [8], b0 [4], w0 [12], laid end to end in that order.
      ASSERT_EQ(seen[r].size(), 4u);
      const std::vector<int64_t> offsets = {0, 2, 10, 14};
      for (size_t b = 0; b < 4; ++b) {
        EXPECT_EQ(seen[r][b].first, offsets[b]);
        const at::Tensor want = own[r][3 - b].reshape(-1);
        EXPECT_TRUE(at::equal(seen[r][b].second, want)) << "overlap " << overlap << " rank " << r;
      }
    }
  }
}

// A rider rides in the last bucket: reduced with it by the same
// collective, left out of the gradients, their offsets and the observer.
TEST(GradientBucketsTest, ARiderIsReducedWithTheLastBucketAndIsNoGradient) {
  std::vector<std::unique_ptr<TinyNet>> nets;
  std::vector<std::unique_ptr<RecordingReducer>> reducers;
  std::vector<at::Tensor> expected;
  {
    TinyNet a(30), b(31);
    a.Backward();
    b.Backward();
    for (size_t i = 0; i < a.params.size(); ++i) {
      expected.push_back(a.params[i].grad() + b.params[i].grad());
    }
  }
  for (int r = 0; r < 2; ++r) {
    nets.push_back(std::make_unique<TinyNet>(30 + r));
    reducers.push_back(
        std::make_unique<RecordingReducer>(/*cap=*/1, true, &nets.back()->params[0]));
  }
  std::vector<at::Tensor> riders(2);
  std::vector<std::vector<int64_t>> observed(2);
  absl::Status status = RunOnLocalGroup(2, [&](int r, c10d::ProcessGroup& group) {
    auto buckets = GradientBuckets::ForParameters(nets[r]->params, *reducers[r], 2);
    if (!buckets.ok()) return buckets.status();
    if ((*buckets)->rider().numel() != 2) return absl::InternalError("rider size");
    (*buckets)->rider().zero_();
    (*buckets)->rider()[r] = r + 1.0f;
    (*buckets)->ObserveStarts([&observed, r](int, const at::Tensor& flat, int64_t) {
      observed[r].push_back(flat.numel());
      return absl::OkStatus();
    });
    (*buckets)->ArmBackward(*reducers[r], group);
    nets[r]->Backward();
    if (absl::Status s = (*buckets)->Reduce(*reducers[r], group); !s.ok()) return s;
    riders[r] = (*buckets)->rider().clone();
    const int last = (*buckets)->size() - 1;
    if ((*buckets)->flat(last).numel() != (*buckets)->gradients(last).numel() + 2) {
      return absl::InternalError("the last flat does not hold the rider");
    }
    return absl::OkStatus();
  });
  ASSERT_TRUE(status.ok()) << status;
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(riders[r].equal(at::tensor({1.0f, 2.0f})));
    EXPECT_THAT(reducers[r]->started_numel, ElementsAre(2, 8, 4, 14));  // w0's 12 + the rider
    EXPECT_THAT(observed[r], ElementsAre(2, 8, 4, 12));
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_TRUE(at::equal(nets[r]->params[i].grad(), expected[i])) << "param " << i;
    }
  }
}

}  // namespace
}  // namespace receipt_parity

// The sum reducers over the MPI backend on two real ranks: the test binary
// starts itself under a real mpirun (runtime/mpirun_launcher.h, the
// trainer's own defaults), each rank starts MPI, learns the store's address
// over MPI (no MASTER_PORT), joins a Gloo group and an MPI gradient group,
// and compares the sums over MPI with a + b computed locally and with the
// same reducers over Gloo, bit for bit.
#include <stdlib.h>

#include <cstdlib>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "gtest/gtest.h"
#include "reducers/allreduce_sum_reducer.h"
#include "reducers/gradient_buckets.h"
#include "reducers/rank_average_reducer.h"
#include "runtime/distributed_env.h"
#include "runtime/launcher.h"
#include "runtime/mpi_backend.h"
#include "runtime/mpi_world.h"
#include "runtime/mpirun_launcher.h"
#include "runtime/process_group.h"

namespace receipt_parity {
namespace {

DistributedEnv rank_env;
ProcessGroupHandle group;

// A small model's gradients on rank `rank`: mixed magnitudes so that the
// sums round, the same on every rank that asks for them.
std::vector<at::Tensor> Gradients(int rank, at::ScalarType type = at::kFloat) {
  at::manual_seed(1000 + rank);
  std::vector<at::Tensor> grads;
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{8, 1, 3, 3}, {8}, {16, 72}, {16}, {4, 16}, {4}}) {
    grads.push_back((at::randn(shape) * at::pow(10.0, at::randint(-6, 3, shape))).to(type));
  }
  return grads;
}

std::vector<at::Tensor> Copy(const std::vector<at::Tensor>& grads) {
  std::vector<at::Tensor> copy;
  for (const at::Tensor& g : grads) copy.push_back(g.clone());
  return copy;
}

TEST(SumOverMpiTwoRanksTest, SumsAFlatBucketInPlace) {
  at::Tensor flat = at::full({1000}, static_cast<float>(rank_env.rank + 1));
  ASSERT_TRUE(MpiAllreduceSumInPlace(flat).ok());
  EXPECT_TRUE(at::equal(flat, at::full({1000}, 3.0f)));
  at::Tensor doubles = at::full({7}, 0.25 * (rank_env.rank + 1), at::kDouble);
  ASSERT_TRUE(MpiAllreduceSumInPlace(doubles).ok());
  EXPECT_TRUE(at::equal(doubles, at::full({7}, 0.75, at::kDouble)));
}

TEST(SumOverMpiTwoRanksTest, TheGradientGroupIsMpisAndTheOtherGloo) {
  EXPECT_EQ(group.gradient_group->getBackend(c10::DeviceType::CPU)->getBackendName(),
            kMpiBackendName);
  EXPECT_EQ(group.group->getBackend(c10::DeviceType::CPU)->getBackendName(), "gloo");
}

// allreduce_sum, with and without overlap and over one or several buckets,
// run unchanged over the MPI group: bitwise a + b, and Gloo's.
TEST(SumOverMpiTwoRanksTest, AllreduceSumIsBitwiseAPlusBAndAsOverGloo) {
  for (const int64_t cap : {int64_t{0}, int64_t{256}}) {
    for (const bool overlap : {true, false}) {
      std::vector<at::Tensor> over_mpi = Gradients(rank_env.rank);
      std::vector<at::Tensor> over_gloo = Copy(over_mpi);
      absl::StatusOr<AllreduceSumReducer> mpi = AllreduceSumReducer::Create(cap, overlap);
      absl::StatusOr<AllreduceSumReducer> gloo = AllreduceSumReducer::Create(cap, overlap);
      ASSERT_TRUE(mpi.ok() && gloo.ok());
      ASSERT_TRUE(ReduceInBuckets(*mpi, over_mpi, *group.gradient_group).ok());
      ASSERT_TRUE(ReduceInBuckets(*gloo, over_gloo, *group.group).ok());
      const std::vector<at::Tensor> a = Gradients(0);
      const std::vector<at::Tensor> b = Gradients(1);
      for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_TRUE(at::equal(over_mpi[i], a[i] + b[i])) << "cap " << cap << " gradient " << i;
        EXPECT_TRUE(at::equal(over_mpi[i], over_gloo[i])) << "cap " << cap << " gradient " << i;
      }
      EXPECT_EQ(mpi->stats().collectives, gloo->stats().collectives);
      EXPECT_EQ(mpi->stats().bytes, gloo->stats().bytes);
      EXPECT_EQ(mpi->stats().collectives, cap == 0 ? 1 : 6);
    }
  }
}

TEST(SumOverMpiTwoRanksTest, RankAverageIsAsOverGloo) {
  std::vector<at::Tensor> over_mpi = Gradients(rank_env.rank, at::kDouble);
  std::vector<at::Tensor> over_gloo = Copy(over_mpi);
  absl::StatusOr<RankAverageReducer> mpi = RankAverageReducer::Create(0);
  absl::StatusOr<RankAverageReducer> gloo = RankAverageReducer::Create(0);
  ASSERT_TRUE(mpi.ok() && gloo.ok());
  ASSERT_TRUE(ReduceInBuckets(*mpi, over_mpi, *group.gradient_group).ok());
  ASSERT_TRUE(ReduceInBuckets(*gloo, over_gloo, *group.group).ok());
  for (size_t i = 0; i < over_mpi.size(); ++i) {
    EXPECT_TRUE(at::equal(over_mpi[i], over_gloo[i])) << "gradient " << i;
  }
}

// A group whose rank is not this process's MPI rank: refused, not summed.
TEST(SumOverMpiTwoRanksTest, AGroupThatIsNotMpisWorldIsRefused) {
  auto wrong = MakeMpiProcessGroup(group.store, 1 - rank_env.rank, 2);
  std::vector<at::Tensor> tensors = {at::ones({4})};
  EXPECT_THROW(wrong->allreduce(tensors)->wait(), c10::Error);
  EXPECT_TRUE(at::equal(tensors[0], at::ones({4})));
}

// Runs the tests as one rank: MPI, the store's address over MPI, Gloo.
int RunRank(int argc, char** argv) {
  unsetenv("MASTER_PORT");  // the address comes over MPI
  absl::StatusOr<std::optional<DistributedEnv>> env = DistributedEnvFromEnvironment();
  if (!env.ok() || !env->has_value() || !(*env)->store_address_over_mpi) return 10;
  if (!StartMpi(**env).ok()) return 11;
  absl::StatusOr<DistributedEnv> shared = ShareStoreAddressOverMpi(**env, "127.0.0.1");
  if (!shared.ok()) return 12;
  rank_env = *shared;
  absl::StatusOr<ProcessGroupHandle> joined =
      ConnectProcessGroup(rank_env, std::chrono::seconds(30), /*nccl=*/nullptr,
                          /*gradients_over_mpi=*/true);
  if (!joined.ok()) return 13;
  group = *joined;
  if (rank_env.rank != 0) {
    unsetenv("GTEST_OUTPUT");
    unsetenv("XML_OUTPUT_FILE");
  }
  testing::InitGoogleTest(&argc, argv);
  const int code = RUN_ALL_TESTS();
  group = {};
  if (!FinishMpi().ok()) return 14;
  return code;
}

}  // namespace
}  // namespace receipt_parity

int main(int argc, char** argv) {
  using namespace receipt_parity;
  if (std::getenv("OMPI_COMM_WORLD_RANK") != nullptr) return RunRank(argc, argv);
  LaunchOptions options;
  options.world_size = 2;
  options.master_port = 1;  // unused: each rank drops MASTER_PORT
  options.under_mpirun = true;
  for (int i = 1; i < argc; ++i) options.args.push_back(argv[i]);
  LaunchResult result;
  const absl::Status status = LaunchUnderMpirun(options, &result);
  if (!status.ok()) std::cerr << status << std::endl;
  return status.ok() ? 0 : 1;
}

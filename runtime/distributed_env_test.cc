#include "runtime/distributed_env.h"

#include <stdlib.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr const char* kVariables[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK",
                                      "MASTER_ADDR", "MASTER_PORT",
                                      "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                                      "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_PROCID",
                                      "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_STEP_ID",
                                      "SLURM_STEP_NUM_TASKS", "SLURM_JOB_NODELIST",
                                      "SLURM_JOB_ID", "RECEIPT_PARITY_LAUNCHER_STORE",
                                      "RECEIPT_PARITY_HEARTBEAT_MS",
                                      "RECEIPT_PARITY_SURVIVORS_GO_ON",
                                      "RECEIPT_PARITY_JOINS_AFTER_MEMBERSHIP"};

TEST(ElasticRestartCountTest, IsTheCountOrZero) {
  unsetenv("TORCHELASTIC_RESTART_COUNT");
  EXPECT_EQ(ElasticRestartCount(), 0);
  for (const auto& [text, count] :
       std::map<std::string, int>{{"0", 0}, {"3", 3}, {"", 0}, {"x", 0}, {"-1", 0}}) {
    setenv("TORCHELASTIC_RESTART_COUNT", text.c_str(), 1);
    EXPECT_EQ(ElasticRestartCount(), count) << text;
  }
  unsetenv("TORCHELASTIC_RESTART_COUNT");
}

// Each test starts from an environment without the torchrun variables.
class DistributedEnvTest : public ::testing::Test {
 protected:
  void SetUp() override { Clear(); }
  void TearDown() override { Clear(); }

  static void Clear() {
    for (const char* name : kVariables) unsetenv(name);
  }
  static void Set(const std::map<std::string, std::string>& values) {
    for (const auto& [name, value] : values) setenv(name.c_str(), value.c_str(), 1);
  }
  // The torchrun variables of rank 1 of 2 on host 10.0.0.1:29500.
  static void SetTorchrunRankOne() {
    Set({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"},
         {"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"}});
  }
  static std::string ErrorWith(const std::map<std::string, std::string>& values) {
    SetTorchrunRankOne();
    Set(values);
    absl::StatusOr<std::optional<DistributedEnv>> env = DistributedEnvFromEnvironment();
    EXPECT_EQ(env.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(env.status().message());
  }
};

TEST_F(DistributedEnvTest, WithoutRankTheBinaryIsNotOneRank) {
  Set({{"WORLD_SIZE", "2"}, {"MASTER_PORT", "29500"}});
  absl::StatusOr<std::optional<DistributedEnv>> env = DistributedEnvFromEnvironment();
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_FALSE(env->has_value());
}

TEST_F(DistributedEnvTest, ReadsTheTorchrunVariables) {
  SetTorchrunRankOne();
  absl::StatusOr<std::optional<DistributedEnv>> env = DistributedEnvFromEnvironment();
  ASSERT_TRUE(env.ok()) << env.status();
  ASSERT_TRUE(env->has_value());
  const DistributedEnv& e = **env;
  EXPECT_EQ(e.rank, 1);
  EXPECT_EQ(e.world_size, 2);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.master_addr, "10.0.0.1");
  EXPECT_EQ(e.master_port, 29500);
}

TEST_F(DistributedEnvTest, LocalRankDefaultsToTheRank) {
  SetTorchrunRankOne();
  unsetenv("LOCAL_RANK");
  absl::StatusOr<std::optional<DistributedEnv>> env = DistributedEnvFromEnvironment();
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ((*env)->local_rank, 1);
}

TEST_F(DistributedEnvTest, BadValuesNameTheVariable) {
  EXPECT_EQ(ErrorWith({{"RANK", "2"}}), "RANK=2 is not an integer in [0, 1]");
  EXPECT_EQ(ErrorWith({{"RANK", "one"}}), "RANK=one is not an integer in [0, 1]");
  EXPECT_EQ(ErrorWith({{"WORLD_SIZE", "0"}}),
            "WORLD_SIZE=0 is not an integer in [1, 1048576]");
  EXPECT_EQ(ErrorWith({{"LOCAL_RANK", "-1"}}),
            "LOCAL_RANK=-1 is not an integer in [0, 1]");
  EXPECT_EQ(ErrorWith({{"MASTER_PORT", "70000"}}),
            "MASTER_PORT=70000 is not an integer in [1, 65535]");
  EXPECT_EQ(ErrorWith({{"MASTER_PORT", "29500x"}}),
            "MASTER_PORT=29500x is not an integer in [1, 65535]");
}

TEST_F(DistributedEnvTest, TheLaunchersStoreAndHeartbeatVariables) {
  SetTorchrunRankOne();
  absl::StatusOr<std::optional<DistributedEnv>> plain = DistributedEnvFromEnvironment();
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE((*plain)->launcher_hosts_store);
  EXPECT_EQ((*plain)->heartbeat_interval_ms, 0);
  Set({{"RECEIPT_PARITY_LAUNCHER_STORE", "1"}, {"RECEIPT_PARITY_HEARTBEAT_MS", "250"},
       {"RECEIPT_PARITY_SURVIVORS_GO_ON", "1"}, {"RECEIPT_PARITY_JOINS_AFTER_MEMBERSHIP", "2"}});
  absl::StatusOr<std::optional<DistributedEnv>> env = DistributedEnvFromEnvironment();
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_TRUE((*env)->launcher_hosts_store);
  EXPECT_EQ((*env)->heartbeat_interval_ms, 250);
  EXPECT_TRUE((*env)->survivors_go_on);
  EXPECT_EQ((*env)->joins_after_membership, 2);
  EXPECT_EQ((*plain)->joins_after_membership, -1);
  const std::vector<std::string> entries = ToEnvironmentEntries(**env);
  EXPECT_THAT(entries, ::testing::Contains("RECEIPT_PARITY_SURVIVORS_GO_ON=1"));
  EXPECT_THAT(entries, ::testing::Contains("RECEIPT_PARITY_LAUNCHER_STORE=1"));
  EXPECT_THAT(entries, ::testing::Contains("RECEIPT_PARITY_HEARTBEAT_MS=250"));
  EXPECT_THAT(entries, ::testing::Contains("RECEIPT_PARITY_JOINS_AFTER_MEMBERSHIP=2"));
}

TEST_F(DistributedEnvTest, BadLauncherVariablesAreNamed) {
  EXPECT_EQ(ErrorWith({{"RECEIPT_PARITY_LAUNCHER_STORE", "yes"}}),
            "RECEIPT_PARITY_LAUNCHER_STORE=yes is not an integer in [0, 1]");
  EXPECT_EQ(ErrorWith({{"RECEIPT_PARITY_LAUNCHER_STORE", "1"},
                       {"RECEIPT_PARITY_HEARTBEAT_MS", "0"}}),
            "RECEIPT_PARITY_HEARTBEAT_MS=0 is not an integer in [1, 3600000]");
  Clear();
  EXPECT_THAT(ErrorWith({{"RECEIPT_PARITY_HEARTBEAT_MS", "100"}}),
              HasSubstr("RECEIPT_PARITY_LAUNCHER_STORE=1 is not"));
  Clear();
  EXPECT_THAT(ErrorWith({{"RECEIPT_PARITY_SURVIVORS_GO_ON", "1"}}),
              HasSubstr("RECEIPT_PARITY_LAUNCHER_STORE=1 is not"));
  Clear();
  EXPECT_THAT(ErrorWith({{"RECEIPT_PARITY_LAUNCHER_STORE", "1"},
                         {"RECEIPT_PARITY_JOINS_AFTER_MEMBERSHIP", "1"}}),
              HasSubstr("RECEIPT_PARITY_SURVIVORS_GO_ON=1 is not"));
  Clear();
  EXPECT_EQ(ErrorWith({{"RECEIPT_PARITY_LAUNCHER_STORE", "1"},
                       {"RECEIPT_PARITY_SURVIVORS_GO_ON", "1"},
                       {"RECEIPT_PARITY_JOINS_AFTER_MEMBERSHIP", "-3"}}),
            "RECEIPT_PARITY_JOINS_AFTER_MEMBERSHIP=-3 is not an integer in [0, 1048576]");
}

TEST_F(DistributedEnvTest, MissingCompanionsOfRankAreNamed) {
  for (const char* missing : {"WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}) {
    SetTorchrunRankOne();
    unsetenv(missing);
    absl::StatusOr<std::optional<DistributedEnv>> env = DistributedEnvFromEnvironment();
    EXPECT_EQ(env.status().code(), absl::StatusCode::kInvalidArgument) << missing;
    EXPECT_THAT(env.status().message(), HasSubstr(std::string(missing) + " is not set"));
  }
  EXPECT_THAT(ErrorWith({{"MASTER_ADDR", ""}}), HasSubstr("MASTER_ADDR is not set"));
}

TEST_F(DistributedEnvTest, EnvironmentEntriesReadBackAsTheSameEnv) {
  DistributedEnv written;
  written.rank = 2;
  written.world_size = 3;
  written.local_rank = 0;
  written.master_addr = "127.0.0.1";
  written.master_port = 40123;
  const std::vector<std::string> entries = ToEnvironmentEntries(written);
  EXPECT_THAT(entries, ElementsAre("RANK=2", "WORLD_SIZE=3", "LOCAL_RANK=0",
                                   "MASTER_ADDR=127.0.0.1", "MASTER_PORT=40123"));
  for (const std::string& entry : entries) {
    const size_t eq = entry.find('=');
    setenv(entry.substr(0, eq).c_str(), entry.substr(eq + 1).c_str(), 1);
  }
  absl::StatusOr<std::optional<DistributedEnv>> read = DistributedEnvFromEnvironment();
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ((*read)->rank, written.rank);
  EXPECT_EQ((*read)->world_size, written.world_size);
  EXPECT_EQ((*read)->local_rank, written.local_rank);
  EXPECT_EQ((*read)->master_addr, written.master_addr);
  EXPECT_EQ((*read)->master_port, written.master_port);
}

// What mpirun sets for rank 1 of 2 on one host.
void SetMpirunRankOne() {
  setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
}

TEST_F(DistributedEnvTest, UnderMpirunTheStoreAddressComesOverMpi) {
  SetMpirunRankOne();
  absl::StatusOr<std::optional<DistributedEnv>> env = DistributedEnvFromEnvironment();
  ASSERT_TRUE(env.ok()) << env.status();
  ASSERT_TRUE(env->has_value());
  const DistributedEnv& e = **env;
  EXPECT_EQ(e.rank, 1);
  EXPECT_EQ(e.world_size, 2);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_TRUE(e.under_mpirun);
  EXPECT_TRUE(e.store_address_over_mpi);
}

TEST_F(DistributedEnvTest, UnderMpirunMasterPortIsHonoured) {
  SetMpirunRankOne();
  Set({{"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"}});
  absl::StatusOr<std::optional<DistributedEnv>> env = DistributedEnvFromEnvironment();
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_TRUE((*env)->under_mpirun);
  EXPECT_FALSE((*env)->store_address_over_mpi);
  EXPECT_EQ((*env)->master_addr, "10.0.0.1");
  EXPECT_EQ((*env)->master_port, 29500);
}

TEST_F(DistributedEnvTest, RankWinsOverMpirunsVariables) {
  SetMpirunRankOne();
  SetTorchrunRankOne();
  setenv("RANK", "0", 1);
  absl::StatusOr<std::optional<DistributedEnv>> env = DistributedEnvFromEnvironment();
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ((*env)->rank, 0);
  EXPECT_FALSE((*env)->under_mpirun);
}

TEST_F(DistributedEnvTest, BadMpirunValuesNameTheVariable) {
  SetMpirunRankOne();
  unsetenv("OMPI_COMM_WORLD_SIZE");
  absl::StatusOr<std::optional<DistributedEnv>> env = DistributedEnvFromEnvironment();
  EXPECT_THAT(env.status().message(), HasSubstr("OMPI_COMM_WORLD_SIZE is not set"));
  SetMpirunRankOne();
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "5", 1);
  env = DistributedEnvFromEnvironment();
  EXPECT_EQ(env.status().message(),
            "OMPI_COMM_WORLD_LOCAL_RANK=5 is not an integer in [0, 1]");
}

// srun's task 1 of 2 of step 3 of job 41, on node07 and node08.
std::map<std::string, std::string> SlurmTaskOne() {
  return {{"SLURM_PROCID", "1"},        {"SLURM_NTASKS", "2"},
          {"SLURM_LOCALID", "0"},       {"SLURM_STEP_ID", "3"},
          {"SLURM_STEP_NUM_TASKS", "2"}, {"SLURM_JOB_NODELIST", "node[07-08]"},
          {"SLURM_JOB_ID", "41"}};
}

TEST_F(DistributedEnvTest, AnSrunTaskIsARankWithTheStoreOnTheFirstHost) {
  Set(SlurmTaskOne());
  absl::StatusOr<std::optional<DistributedEnv>> env = DistributedEnvFromEnvironment();
  ASSERT_TRUE(env.ok()) << env.status();
  ASSERT_TRUE(env->has_value());
  EXPECT_EQ((*env)->rank, 1);
  EXPECT_EQ((*env)->world_size, 2);
  EXPECT_EQ((*env)->local_rank, 0);
  EXPECT_EQ((*env)->master_addr, "node07");
  EXPECT_EQ((*env)->master_port, 20000 + (7 * 41 + 3) % 10000);
  EXPECT_EQ((*env)->world_size_variable, "SLURM_NTASKS");
  EXPECT_FALSE((*env)->under_mpirun);
}

TEST_F(DistributedEnvTest, MasterAddrAndPortWinOverSlurmsHosts) {
  Set(SlurmTaskOne());
  Set({{"MASTER_ADDR", "10.1.2.3"}, {"MASTER_PORT", "29555"}});
  absl::StatusOr<std::optional<DistributedEnv>> env = DistributedEnvFromEnvironment();
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ((*env)->master_addr, "10.1.2.3");
  EXPECT_EQ((*env)->master_port, 29555);
}

TEST_F(DistributedEnvTest, AnSbatchBatchStepIsNotARank) {
  // sbatch's batch step: SLURM_PROCID=0 and the job's task count, no step.
  Set({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", "vm"},
       {"SLURM_JOB_ID", "2"}});
  absl::StatusOr<std::optional<DistributedEnv>> env = DistributedEnvFromEnvironment();
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_FALSE(env->has_value());
}

TEST_F(DistributedEnvTest, TorchrunsVariablesWinOverSlurms) {
  Set(SlurmTaskOne());
  Set({{"RANK", "0"}, {"WORLD_SIZE", "3"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1234"}});
  absl::StatusOr<std::optional<DistributedEnv>> env = DistributedEnvFromEnvironment();
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ((*env)->world_size, 3);
  EXPECT_EQ((*env)->world_size_variable, "WORLD_SIZE");
}

TEST_F(DistributedEnvTest, ASlurmEnvironmentThatDisagreesWithItselfIsNamed) {
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> cases = {
      {{{"SLURM_STEP_NUM_TASKS", "3"}},
       "SLURM_STEP_NUM_TASKS=3 but SLURM_NTASKS=2: the Slurm environment disagrees"},
      {{{"SLURM_PROCID", "2"}}, "SLURM_PROCID=2 is not an integer in [0, 1] (SLURM_NTASKS=2)"},
      {{{"SLURM_LOCALID", "x"}}, "SLURM_LOCALID=x is not an integer"},
      {{{"SLURM_NTASKS", "0"}}, "SLURM_NTASKS=0 is not an integer in [1, "},
      {{{"SLURM_JOB_NODELIST", "node[07-08"}},
       "SLURM_JOB_NODELIST=node[07-08 is not a Slurm hostlist"},
  };
  for (const auto& [values, message] : cases) {
    Clear();
    Set(SlurmTaskOne());
    Set(values);
    absl::StatusOr<std::optional<DistributedEnv>> env = DistributedEnvFromEnvironment();
    EXPECT_EQ(env.status().code(), absl::StatusCode::kInvalidArgument) << message;
    EXPECT_THAT(env.status().message(), HasSubstr(message));
  }
  Clear();
  Set(SlurmTaskOne());
  unsetenv("SLURM_LOCALID");
  EXPECT_THAT(DistributedEnvFromEnvironment().status().message(),
              HasSubstr("SLURM_LOCALID is not set (SLURM_PROCID and SLURM_STEP_ID are"));
}

TEST(FirstSlurmHostTest, ReadsTheFirstHostOfAHostlist) {
  for (const auto& [list, host] : std::map<std::string, std::string>{
           {"vm", "vm"},
           {"node[03-06,09],gpu7", "node03"},
           {"a1,b2", "a1"},
           {"gpu[7]", "gpu7"},
           {"n[009,011]", "n009"},
           {"rack[1-2]-n[5-6]", "rack1-n5"}}) {
    absl::StatusOr<std::string> first = FirstSlurmHost(list, "L");
    ASSERT_TRUE(first.ok()) << list << ": " << first.status();
    EXPECT_EQ(*first, host) << list;
  }
  for (const std::string bad : {"", "[", "n[1-2", "n]1", "n[[1]]", ",x"}) {
    EXPECT_EQ(FirstSlurmHost(bad, "L").status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

}  // namespace
}  // namespace receipt_parity

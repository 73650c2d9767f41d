// Start agreement and gathers on rank 0, on ranks that are threads sharing
// one real store and Gloo group (collectives/local_process_group.h): the same
// code the trainer's processes run over their TCPStore.
#include "runtime/process_group.h"

#include <signal.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "google/protobuf/wrappers.pb.h"
#include "gtest/gtest.h"
#include "collectives/local_process_group.h"

namespace receipt_parity {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using Fields = std::vector<std::pair<std::string, std::string>>;

// Runs `body` on `world` ranks; each rank's own result is kept (distinct
// elements, so the ranks need no lock).
template <typename Result, typename Body>
std::vector<Result> OnEveryRank(int world, Body body,
                                absl::Duration timeout = absl::Seconds(30)) {
  std::vector<Result> results(world);
  absl::Status status = RunOnLocalGroupWithStore(
      world,
      [&](int rank, c10d::Store& store, c10d::ProcessGroup&) {
        results[rank] = body(rank, store);
        return absl::OkStatus();
      },
      timeout);
  EXPECT_TRUE(status.ok()) << status;
  return results;
}

Fields StartFields(const std::string& data_hash) {
  return {{"config_fingerprint", "3f2a"},
          {"model_revision", "cnn(4;8)@1c2d"},
          {"data_hash", data_hash}};
}

TEST(AgreeOnStartTest, RanksThatAgreeAllStart) {
  for (int world : {1, 2, 3}) {
    for (const absl::Status& status :
         OnEveryRank<absl::Status>(world, [&](int rank, c10d::Store& store) {
           return AgreeOnStart(store, rank, world, StartFields("77aa"));
         })) {
      EXPECT_TRUE(status.ok()) << "world " << world << ": " << status;
    }
  }
}

TEST(AgreeOnStartTest, AMismatchStopsEveryRankNamingTheRankAndField) {
  const std::vector<absl::Status> statuses =
      OnEveryRank<absl::Status>(3, [](int rank, c10d::Store& store) {
        return AgreeOnStart(store, rank, 3, StartFields(rank == 2 ? "9c01" : "77aa"));
      });
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(statuses[rank].code(), absl::StatusCode::kFailedPrecondition)
        << "rank " << rank;
    EXPECT_EQ(statuses[rank].message(),
              "rank 2 differs from rank 0 in data_hash: 9c01 != 77aa")
        << "rank " << rank;
  }
}

TEST(AgreeOnStartTest, TheFirstDifferingRankAndFieldAreNamed) {
  // Ranks 1 and 2 both differ, rank 2 in an earlier field: rank 1 is named.
  const std::vector<absl::Status> statuses =
      OnEveryRank<absl::Status>(3, [](int rank, c10d::Store& store) {
        Fields fields = StartFields(rank == 1 ? "9c01" : "77aa");
        if (rank == 2) fields[0].second = "ffff";
        return AgreeOnStart(store, rank, 3, fields);
      });
  for (const absl::Status& status : statuses) {
    EXPECT_EQ(status.message(),
              "rank 1 differs from rank 0 in data_hash: 9c01 != 77aa");
  }
}

TEST(AgreeOnStartTest, ARankThatNeverPublishesTimesOut) {
  const std::vector<absl::Status> statuses = OnEveryRank<absl::Status>(
      2,
      [](int rank, c10d::Store& store) {
        if (rank == 1) return absl::OkStatus();  // never takes part
        return AgreeOnStart(store, rank, 2, StartFields("77aa"));
      },
      absl::Milliseconds(500));
  EXPECT_EQ(statuses[0].code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(statuses[0].message(), HasSubstr("agree/1/config_fingerprint"));
}

TEST(GatherOnRankZeroTest, RankZeroGetsEveryRanksMessageInRankOrder) {
  using Gathered = absl::StatusOr<std::vector<google::protobuf::StringValue>>;
  const std::vector<Gathered> gathered =
      OnEveryRank<Gathered>(3, [](int rank, c10d::Store& store) {
        google::protobuf::StringValue mine;
        mine.set_value(absl::StrCat("report of rank ", rank));
        return GatherOnRankZero(store, "reports", rank, 3, mine);
      });
  ASSERT_TRUE(gathered[0].ok()) << gathered[0].status();
  std::vector<std::string> values;
  for (const auto& message : *gathered[0]) values.push_back(message.value());
  EXPECT_THAT(values, ElementsAre("report of rank 0", "report of rank 1",
                                  "report of rank 2"));
  for (int rank = 1; rank < 3; ++rank) {
    ASSERT_TRUE(gathered[rank].ok()) << gathered[rank].status();
    EXPECT_THAT(*gathered[rank], IsEmpty()) << "rank " << rank;
  }
}

TEST(GatherOnRankZeroTest, ARankThatNeverPublishesIsNamed) {
  using Gathered = absl::StatusOr<std::vector<std::string>>;
  const std::vector<Gathered> gathered = OnEveryRank<Gathered>(
      3,
      [](int rank, c10d::Store& store) -> Gathered {
        if (rank == 2) return std::vector<std::string>{};  // never publishes
        return GatherBytesOnRankZero(store, "shards", rank, 3, "bytes");
      },
      absl::Milliseconds(500));
  EXPECT_EQ(gathered[0].status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(gathered[0].status().message(), HasSubstr("rank 2 never published shards"));
}

TEST(GatherOnRankZeroTest, BytesThatDoNotParseAreDataLoss) {
  using Gathered = absl::StatusOr<std::vector<google::protobuf::StringValue>>;
  const std::vector<Gathered> gathered =
      OnEveryRank<Gathered>(2, [](int rank, c10d::Store& store) -> Gathered {
        if (rank == 1) {
          // Not a serialised StringValue: field 1 with wire type 7.
          if (absl::Status s = StoreSet(store, "reports/1", "\x0f\xff"); !s.ok()) return s;
          return std::vector<google::protobuf::StringValue>{};
        }
        return GatherOnRankZero(store, "reports", rank, 2,
                                google::protobuf::StringValue());
      });
  EXPECT_EQ(gathered[0].status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(gathered[0].status().message(),
              HasSubstr("reports/1 from rank 1 does not parse"));
}

}  // namespace
}  // namespace receipt_parity

namespace receipt_parity {
namespace {

// The local addresses (hex, as /proc/net/tcp{,6} write them) of the
// sockets listening on `port`.
std::vector<std::string> ListeningAddresses(int port) {
  std::vector<std::string> addresses;
  const std::string hex_port = absl::StrFormat(":%04X", port);
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state;
      fields >> slot >> local >> remote >> state;
      if (state == "0A" && absl::EndsWith(local, hex_port)) {
        addresses.push_back(local.substr(0, local.size() - hex_port.size()));
      }
    }
  }
  return addresses;
}

TEST(PickFreePortTest, APortBelowTheEphemeralRangeThatCanBeBound) {
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  int first = 32768;
  range >> first;
  for (int i = 0; i < 20; ++i) {
    absl::StatusOr<int> port = PickFreePort();
    ASSERT_TRUE(port.ok()) << port.status();
    EXPECT_GE(*port, 10000);
    EXPECT_LT(*port, first);
  }
}

TEST(ConnectProcessGroupTest, TheStoreListensOnMasterAddrOnly) {
  absl::StatusOr<int> port = PickFreePort();
  ASSERT_TRUE(port.ok());
  DistributedEnv env;
  env.master_addr = "127.0.0.1";
  env.master_port = *port;
  absl::StatusOr<ProcessGroupHandle> handle =
      ConnectProcessGroup(env, std::chrono::seconds(20));
  ASSERT_TRUE(handle.ok()) << handle.status();
  // 127.0.0.1 in /proc/net/tcp's byte order; never 0.0.0.0 or [::].
  EXPECT_THAT(ListeningAddresses(*port), ElementsAre("0100007F"));
  // A joined rank ignores SIGPIPE: a write to a dead peer's socket is an
  // error of the call (issue 50: survivors must outlive a lost peer).
  struct sigaction now {};
  ASSERT_EQ(sigaction(SIGPIPE, nullptr, &now), 0);
  EXPECT_EQ(now.sa_handler, SIG_IGN);
}

TEST(ConnectProcessGroupTest, AnAddressThatDoesNotResolveIsNamed) {
  DistributedEnv env;
  env.master_addr = "no-such-host.invalid";
  env.master_port = 29999;
  absl::StatusOr<ProcessGroupHandle> handle =
      ConnectProcessGroup(env, std::chrono::seconds(2));
  EXPECT_THAT(std::string(handle.status().message()),
              HasSubstr("MASTER_ADDR=no-such-host.invalid does not resolve"));
}

// A store's host that listens but never answers (frozen: SIGSTOP, a hung
// machine): c10d's client would wait for its ping's answer for ever; the
// joining rank ends within the timeout and the store's margin, naming it.
TEST(ConnectProcessGroupDeathTest, AStoresHostThatNeverAnswersEndsTheJoiningRank) {
  const int listening = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listening, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listening, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(listening, 8), 0);
  socklen_t length = sizeof(address);
  ASSERT_EQ(getsockname(listening, reinterpret_cast<sockaddr*>(&address), &length), 0);
  DistributedEnv env;
  env.rank = 1;
  env.world_size = 2;
  env.local_rank = 1;
  env.master_addr = "127.0.0.1";
  env.master_port = ntohs(address.sin_port);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EXIT(
      (void)ConnectProcessGroup(env, std::chrono::seconds(1), nullptr, false),
      ::testing::ExitedWithCode(1),
      absl::StrCat("rank 1: joining the store at 127.0.0.1:", env.master_port,
                   " did not return within"));
  // The bound: the timeout (1 s) and the margin (5 s), and a little.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  close(listening);
}

}  // namespace
}  // namespace receipt_parity

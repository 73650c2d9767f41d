#include "runtime/guarded_store.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

// A TCPStore server in a child process; its port.
struct StoreServer {
  pid_t pid = -1;
  int port = 0;
};

StoreServer StartServer() {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  StoreServer server;
  server.pid = fork();
  if (server.pid == 0) {
    c10d::TCPStoreOptions options;
    options.port = 0;
    options.isServer = true;
    options.waitWorkers = false;
    c10d::TCPStore store("127.0.0.1", options);
    const int port = store.getPort();
    if (write(fds[1], &port, sizeof(port)) != sizeof(port)) _exit(2);
    for (;;) pause();
  }
  if (read(fds[0], &server.port, sizeof(server.port)) != sizeof(server.port)) server.port = 0;
  close(fds[0]);
  close(fds[1]);
  return server;
}

c10::intrusive_ptr<GuardedStore> Client(int port) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>(port);
  options.isServer = false;
  options.timeout = std::chrono::seconds(1);
  auto tcp = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", options);
  return c10::make_intrusive<GuardedStore>("attempt/1", tcp, /*rank=*/1);
}

TEST(GuardedStoreTest, KeysAreThePrefixStoresAndAnAnswerInTimePasses) {
  StoreServer server = StartServer();
  ASSERT_GT(server.port, 0);
  auto store = Client(server.port);
  store->set("k", std::vector<uint8_t>{7});
  EXPECT_EQ(store->get("k"), std::vector<uint8_t>{7});
  EXPECT_EQ(store->add("n", 2), 2);
  EXPECT_TRUE(store->check({"k"}));
  // A key that never comes is the store's own timeout, an exception.
  EXPECT_THROW(store->get("never"), std::exception);
  kill(server.pid, SIGKILL);
  waitpid(server.pid, nullptr, 0);
}

// The store's host frozen: c10d's client would block for ever after its
// timeout; the deadline ends the rank, naming the call.
TEST(GuardedStoreDeathTest, AFrozenStoresHostEndsTheRankWithinTheBound) {
  StoreServer server = StartServer();
  ASSERT_GT(server.port, 0);
  auto store = Client(server.port);
  kill(server.pid, SIGSTOP);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EXIT(store->get("ckpt/resume"), ::testing::ExitedWithCode(1),
              "rank 1: the store's answer to get\\(ckpt/resume\\) did not return within 6 s");
  // The bound: the store's timeout (1 s) and the margin (5 s), and a little.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  kill(server.pid, SIGKILL);
  waitpid(server.pid, nullptr, 0);
}

}  // namespace
}  // namespace receipt_parity

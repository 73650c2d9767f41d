#include "runtime/call_deadline.h"

#include <chrono>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using std::chrono::milliseconds;

TEST(CallDeadlineTest, ACallThatReturnsInTimeEndsNothing) {
  for (int i = 0; i < 100; ++i) {
    const CallDeadline deadline(milliseconds(200), "a quick call");
  }
  const CallDeadline outer(milliseconds(300), "the outer call");
  { const CallDeadline inner(milliseconds(100), "the inner call"); }
  std::this_thread::sleep_for(milliseconds(150));  // past the inner's limit
  SUCCEED();
}

TEST(CallDeadlineDeathTest, ACallThatOutlivesItsLimitEndsTheProcessNamingIt) {
  EXPECT_EXIT(
      {
        const CallDeadline deadline(milliseconds(200), "rank 1: the store's answer to get(k)");
        std::this_thread::sleep_for(std::chrono::seconds(30));
      },
      ::testing::ExitedWithCode(kDeadlineExitCode),
      "rank 1: the store's answer to get\\(k\\) did not return within 0 s");
}

}  // namespace
}  // namespace receipt_parity

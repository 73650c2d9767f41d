#include "logging/glog.h"

// LibTorch headers after glog.h, as in the project's files: each of these
// includes <c10/util/Logging.h> again.
#include <ATen/ATen.h>
#include <c10/util/Logging.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace receipt_parity {
namespace {

class CapturingSink : public google::LogSink {
 public:
  void send(google::LogSeverity severity, const char* /*full_filename*/,
            const char* /*base_filename*/, int /*line*/,
            const struct ::tm* /*tm_time*/, const char* message,
            size_t message_len) override {
    if (severity == google::GLOG_INFO) {
      lines.emplace_back(message, message_len);
    }
  }
  std::vector<std::string> lines;
};

TEST(GlogTest, InfoLinesReachGlogAfterLibTorchHeaders) {
  CapturingSink sink;
  google::AddLogSink(&sink);
  LOG(INFO) << "an info line " << at::ones({2}).sum().item<float>();
  google::RemoveLogSink(&sink);
  ASSERT_EQ(sink.lines.size(), 1u);
  EXPECT_EQ(sink.lines[0], "an info line 2");
}

TEST(GlogTest, ChecksAreGlogs) {
  // glog's CHECK_EQ exists and passes; c10's header has no CHECK_EQ.
  CHECK_EQ(1 + 1, 2);
  // (CHECK's expansion has a top-level comma: call it from a lambda.)
  auto check_false = [] { CHECK(false) << "stop"; };
  EXPECT_DEATH(check_false(), "Check failed: false stop");
}

}  // namespace
}  // namespace receipt_parity

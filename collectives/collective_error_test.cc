#include "collectives/collective_error.h"

#include <stdexcept>
#include <string>

#include <c10/util/Exception.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::Not;
using ::testing::HasSubstr;

c10::Error TorchError(const std::string& message) {
  try {
    TORCH_CHECK(false, message);
  } catch (const c10::Error& e) {
    return e;
  }
  return c10::Error(std::string("unreachable"));
}

TEST(LibTorchErrorTest, KeepsTheMessageWithoutTheBacktrace) {
  const c10::Error error = TorchError("shape [3] is invalid");
  EXPECT_THAT(std::string(error.what()), HasSubstr("Exception raised from"));
  EXPECT_EQ(LibTorchErrorMessage(error), "shape [3] is invalid");
  EXPECT_EQ(LibTorchErrorMessage(std::runtime_error("plain")), "plain");
}

TEST(LibTorchErrorTest, ContextAndCode) {
  const absl::Status internal =
      LibTorchErrorToStatus(TorchError("bad state"), "checkpoint generator state: LibTorch");
  EXPECT_EQ(internal, absl::InternalError("checkpoint generator state: LibTorch: bad state"));
  const absl::Status data_loss = LibTorchErrorToStatus(
      std::out_of_range("no key"), "shard", absl::StatusCode::kDataLoss);
  EXPECT_EQ(data_loss, absl::DataLossError("shard: no key"));
}

TEST(CollectiveErrorTest, TimeoutsAndLostPeersHaveTheirCodes) {
  EXPECT_EQ(CollectiveErrorToStatus(TorchError("Socket Timeout"), "allreduce").code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(CollectiveErrorToStatus(std::runtime_error("Connection reset by peer"), "x").code(),
            absl::StatusCode::kUnavailable);
  const absl::Status other = CollectiveErrorToStatus(TorchError("dtype mismatch"), "allreduce");
  EXPECT_EQ(other, absl::InternalError("allreduce: dtype mismatch"));
  EXPECT_THAT(std::string(other.message()), Not(HasSubstr("Exception raised from")));
}

}  // namespace
}  // namespace receipt_parity

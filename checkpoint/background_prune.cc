#include "checkpoint/background_prune.h"

#include <utility>

#include "checkpoint/save_generation.h"
#include "logging/glog.h"

namespace receipt_parity {

BackgroundPruner::BackgroundPruner(std::string root, int keep_last)
    : root_(std::move(root)), keep_last_(keep_last) {
  CHECK_GE(keep_last_, 1);
}

BackgroundPruner::~BackgroundPruner() {
  if (absl::Status s = Wait(); !s.ok()) {
    LOG(WARNING) << "checkpoint retention: " << s;
  }
}

absl::Status BackgroundPruner::Start(int64_t newest) {
  if (absl::Status s = Wait(); !s.ok()) return s;
  worker_ = std::thread([this, newest] {
    result_ = PruneGenerations(root_, keep_last_, newest);
  });
  return absl::OkStatus();
}

absl::Status BackgroundPruner::Wait() {
  if (worker_.joinable()) worker_.join();
  return std::exchange(result_, absl::OkStatus());
}

}  // namespace receipt_parity

#include "checkpointing/async_save.h"

#include <utility>

#include "logging/glog.h"

namespace receipt_parity {

AsyncSaveWriter::~AsyncSaveWriter() {
  if (worker_.joinable()) worker_.join();
}

void AsyncSaveWriter::Start(Write write) {
  CHECK(!pending()) << "AsyncSaveWriter::Start with a write pending";
  finished_.store(false, std::memory_order_relaxed);
  worker_ = std::thread([this, write = std::move(write)] {
    result_ = write();
    finished_.store(true, std::memory_order_release);
  });
}

std::optional<absl::StatusOr<SaveResult>> AsyncSaveWriter::Wait() {
  if (!worker_.joinable()) return std::nullopt;
  worker_.join();
  return std::move(result_);
}

}  // namespace receipt_parity

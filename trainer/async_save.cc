#include "trainer/async_save.h"

#include <utility>

#include "logging/glog.h"

namespace receipt_parity {

AsyncSaveWriter::~AsyncSaveWriter() {
  if (worker_.joinable()) worker_.join();
}

void AsyncSaveWriter::Start(Write write) {
  CHECK(!in_flight()) << "AsyncSaveWriter::Start with a write in flight";
  worker_ = std::thread([this, write = std::move(write)] { result_ = write(); });
}

std::optional<absl::StatusOr<SaveResult>> AsyncSaveWriter::Wait() {
  if (!worker_.joinable()) return std::nullopt;
  worker_.join();
  return std::move(result_);
}

}  // namespace receipt_parity

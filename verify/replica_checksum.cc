#include "verify/replica_checksum.h"

#include <algorithm>
#include <cstring>
#include <exception>

#include <ATen/ATen.h>

#include "collectives/collective_error.h"
#include "data/random_stream.h"
#include "verify/checksum_kernels.h"

namespace receipt_parity {
namespace {

constexpr int64_t kBlockWords = int64_t{1} << 16;
constexpr uint64_t kBlockFold = 0x9E3779B97F4A7C15ULL;  // odd

}  // namespace

ReplicaChecksum::ReplicaChecksum() {
  multipliers_.resize(kBlockWords);
  uint64_t state = MixSeed(0x7265706c, 0);  // "repl"
  for (uint32_t& m : multipliers_) {
    state = MixSeed(state, 1);
    m = static_cast<uint32_t>(state >> 32) | 1u;
  }
}

uint64_t ReplicaChecksum::OfWords(const uint32_t* words, int64_t n) const {
  uint64_t h = 0;
  for (int64_t begin = 0; begin < n; begin += kBlockWords) {
    const int64_t count = std::min(kBlockWords, n - begin);
    h = h * kBlockFold + ChecksumWords(words + begin, multipliers_.data(), count);
  }
  return h;
}

absl::StatusOr<uint64_t> ReplicaChecksum::Of(const at::Tensor& tensor) const {
  try {
    at::Tensor bytes = tensor.detach();
    if (!bytes.device().is_cpu()) bytes = bytes.to(at::kCPU);
    bytes = bytes.contiguous();
    const int64_t size = bytes.numel() * static_cast<int64_t>(bytes.element_size());
    const auto* data = static_cast<const unsigned char*>(bytes.data_ptr());
    const int64_t whole = size / 4;
    uint64_t h = OfWords(reinterpret_cast<const uint32_t*>(data), whole);
    if (size % 4 != 0) {
      uint32_t last = 0;
      std::memcpy(&last, data + whole * 4, static_cast<size_t>(size % 4));
      h = h * kBlockFold + uint64_t{last} * multipliers_[0];
    }
    return h;
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "checksumming a replica's tensor: LibTorch");
  }
}

absl::StatusOr<std::vector<uint64_t>> ReplicaChecksum::OfEach(
    const std::vector<at::Tensor>& tensors) const {
  std::vector<uint64_t> each;
  each.reserve(tensors.size());
  for (const at::Tensor& t : tensors) {
    absl::StatusOr<uint64_t> h = Of(t);
    if (!h.ok()) return h.status();
    each.push_back(*h);
  }
  return each;
}

uint64_t ReplicaChecksum::Combine(const std::vector<uint64_t>& each) {
  uint64_t h = 0;
  for (size_t t = 0; t < each.size(); ++t) {
    h += (MixSeed(0x74656e73, t) | 1u) * each[t];  // "tens"
  }
  return h;
}

}  // namespace receipt_parity

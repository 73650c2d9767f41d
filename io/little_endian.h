// Little-endian integers in byte strings: the project's own binary files
// (the sampler audit's slots file, TensorBoard's TFRecord framing) write
// and read them byte by byte, so a file means the same on any host.
#ifndef RECEIPT_PARITY_IO_LITTLE_ENDIAN_H_
#define RECEIPT_PARITY_IO_LITTLE_ENDIAN_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace receipt_parity {

inline void PutU32(std::string* out, uint32_t v) {
  for (int b = 0; b < 4; ++b) out->push_back(static_cast<char>((v >> (8 * b)) & 0xff));
}

inline void PutU64(std::string* out, uint64_t v) {
  for (int b = 0; b < 8; ++b) out->push_back(static_cast<char>((v >> (8 * b)) & 0xff));
}

// Reads little-endian integers and pieces from a buffer in order; every
// read fails (false, the cursor unmoved) past the buffer's end.
class LittleEndianCursor {
 public:
  explicit LittleEndianCursor(absl::string_view bytes) : bytes_(bytes) {}
  bool Take(size_t n, absl::string_view* piece) {
    if (bytes_.size() - at_ < n) return false;
    *piece = bytes_.substr(at_, n);
    at_ += n;
    return true;
  }
  bool U32(uint32_t* v) { return Int(4, v); }
  bool U64(uint64_t* v) { return Int(8, v); }
  size_t at() const { return at_; }
  bool done() const { return at_ == bytes_.size(); }

 private:
  template <typename T>
  bool Int(size_t n, T* v) {
    absl::string_view piece;
    if (!Take(n, &piece)) return false;
    *v = 0;
    for (size_t b = 0; b < n; ++b) {
      *v |= static_cast<T>(static_cast<unsigned char>(piece[b])) << (8 * b);
    }
    return true;
  }
  absl::string_view bytes_;
  size_t at_ = 0;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_IO_LITTLE_ENDIAN_H_

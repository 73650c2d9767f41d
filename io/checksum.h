// The checksum recorded for shards, manifests and audit side files.
#ifndef RECEIPT_PARITY_IO_CHECKSUM_H_
#define RECEIPT_PARITY_IO_CHECKSUM_H_

#include <string>

#include "absl/strings/string_view.h"

namespace receipt_parity {

// "crc32:" + 8 lowercase hex digits of zlib's CRC-32 of `bytes` (the same
// value as Python's zlib.crc32). The prefix names the algorithm: it is part
// of the on-disk format.
std::string Crc32Checksum(absl::string_view bytes);

// Crc32Checksum of bytes that come in pieces: Checksum() after Add(a),
// Add(b) is Crc32Checksum(a + b).
class Crc32Stream {
 public:
  void Add(absl::string_view bytes);
  std::string Checksum() const;

 private:
  unsigned long crc_ = 0;  // zlib's crc32(0, Z_NULL, 0)
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_IO_CHECKSUM_H_

#include "checkpoint/checksum.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_format.h"

namespace receipt_parity {

std::string Crc32Checksum(absl::string_view bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto* data = reinterpret_cast<const Bytef*>(bytes.data());
  size_t left = bytes.size();
  // zlib takes uInt lengths: feed large inputs in pieces.
  while (left > 0) {
    const uInt piece = static_cast<uInt>(std::min<size_t>(left, 1u << 30));
    crc = crc32(crc, data, piece);
    data += piece;
    left -= piece;
  }
  return absl::StrFormat("crc32:%08x", static_cast<uint32_t>(crc));
}

}  // namespace receipt_parity

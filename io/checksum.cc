#include "io/checksum.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_format.h"

namespace receipt_parity {

void Crc32Stream::Add(absl::string_view bytes) {
  const auto* data = reinterpret_cast<const Bytef*>(bytes.data());
  size_t left = bytes.size();
  // zlib takes uInt lengths: feed large inputs in pieces.
  while (left > 0) {
    const uInt piece = static_cast<uInt>(std::min<size_t>(left, 1u << 30));
    crc_ = crc32(crc_, data, piece);
    data += piece;
    left -= piece;
  }
}

std::string Crc32Stream::Checksum() const {
  return absl::StrFormat("crc32:%08x", static_cast<uint32_t>(crc_));
}

std::string Crc32Checksum(absl::string_view bytes) {
  Crc32Stream stream;
  stream.Add(bytes);
  return stream.Checksum();
}

}  // namespace receipt_parity

// Decoding of the grayscale image files a receipt manifest may name.
//
// Formats, recognised by their first bytes (not by file name):
//   PGM  "P5" (binary, 1 byte per sample when maxval < 256, else 2 bytes big
//        endian) and "P2" (ASCII), maxval in [1, 65535], '#' comments in the
//        header; sample s becomes s / maxval. Bytes after the pixels are
//        ignored.
//   PNG  any PNG libpng reads (libpng's simplified API); libpng converts
//        colour to gray and composites alpha onto black; 8-bit samples
//        become s / 255, 16-bit ones are read linear and become s / 65535.
// Thread safety: a pure function.
#ifndef RECEIPT_PARITY_DATA_GRAYSCALE_IMAGE_H_
#define RECEIPT_PARITY_DATA_GRAYSCALE_IMAGE_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "data/receipt_identity.h"

namespace receipt_parity {

struct GrayImage {
  int width = 0;
  int height = 0;
  GrayPixels pixels;  // width * height, row-major, in [0, 1]
};

// Largest width or height accepted (guards against absurd headers).
inline constexpr int kMaxImageSide = 16384;

// The width and height an image file's header claims, read from the header
// alone: nothing the size of the pixels is allocated, so a tiny file that
// claims a huge size is cheap to refuse. Callers that expect one size check
// it here before DecodeGrayscaleImage. Errors as DecodeGrayscaleImage's
// (a side above kMaxImageSide is one).
struct ImageSize {
  int width = 0;
  int height = 0;
};
absl::StatusOr<ImageSize> ReadGrayscaleImageSize(absl::string_view bytes);

// Decodes the contents of an image file. Errors (InvalidArgument) say what is
// wrong ("not a PNG or PGM file", "PGM: truncated pixel data: ...", libpng's
// message); they do not name a file: the caller adds that. A binary PGM is
// checked for truncation before its pixels are allocated.
absl::StatusOr<GrayImage> DecodeGrayscaleImage(absl::string_view bytes);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_DATA_GRAYSCALE_IMAGE_H_

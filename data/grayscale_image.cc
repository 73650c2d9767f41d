#include "data/grayscale_image.h"

#include <png.h>

#include <cctype>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace receipt_parity {
namespace {

absl::Status Bad(absl::string_view what) {
  return absl::InvalidArgumentError(what);
}

// Reads whitespace-separated tokens, skipping '#' comments to end of line.
class PgmTokens {
 public:
  explicit PgmTokens(absl::string_view bytes) : bytes_(bytes) {}

  // The next token as an integer in [lo, hi]; `what` names it in errors.
  absl::StatusOr<int> Int(absl::string_view what, int lo, int hi) {
    SkipSpaceAndComments();
    const size_t start = pos_;
    while (pos_ < bytes_.size() && !std::isspace(Byte(pos_)) &&
           bytes_[pos_] != '#') {
      ++pos_;
    }
    const absl::string_view token = bytes_.substr(start, pos_ - start);
    if (token.empty()) {
      return Bad(absl::StrCat("PGM: missing ", what, " (file ends early)"));
    }
    int value = 0;
    if (!absl::SimpleAtoi(token, &value) || value < lo || value > hi) {
      return Bad(absl::StrCat("PGM: ", what, " must be an integer in [", lo,
                              ", ", hi, "], got \"", token, "\""));
    }
    return value;
  }

  // Position just after the single whitespace byte that ends the header.
  absl::StatusOr<size_t> RasterStart() {
    if (pos_ >= bytes_.size() || !std::isspace(Byte(pos_))) {
      return Bad("PGM: no whitespace after maxval");
    }
    return pos_ + 1;
  }

 private:
  unsigned char Byte(size_t i) const { return bytes_[i]; }

  void SkipSpaceAndComments() {
    while (pos_ < bytes_.size()) {
      if (std::isspace(Byte(pos_))) {
        ++pos_;
      } else if (bytes_[pos_] == '#') {
        while (pos_ < bytes_.size() && bytes_[pos_] != '\n') ++pos_;
      } else {
        return;
      }
    }
  }

  absl::string_view bytes_;
  size_t pos_ = 2;  // after the magic number
};

struct PgmHeader {
  int width = 0;
  int height = 0;
  int maxval = 0;
};

// Reads the header's width, height and maxval; `tokens` is left just after
// maxval.
absl::StatusOr<PgmHeader> ReadPgmHeader(PgmTokens& tokens) {
  PgmHeader header;
  absl::StatusOr<int> width = tokens.Int("width", 1, kMaxImageSide);
  if (!width.ok()) return width.status();
  absl::StatusOr<int> height = tokens.Int("height", 1, kMaxImageSide);
  if (!height.ok()) return height.status();
  absl::StatusOr<int> maxval = tokens.Int("maxval", 1, 65535);
  if (!maxval.ok()) return maxval.status();
  header.width = *width;
  header.height = *height;
  header.maxval = *maxval;
  return header;
}

absl::StatusOr<GrayImage> DecodePgmAscii(PgmTokens& tokens,
                                         const PgmHeader& header) {
  GrayImage image{header.width, header.height, {}};
  const size_t count = static_cast<size_t>(header.width) * header.height;
  image.pixels.resize(count);
  const float scale = 1.0f / static_cast<float>(header.maxval);
  for (size_t i = 0; i < count; ++i) {
    absl::StatusOr<int> sample = tokens.Int(
        absl::StrCat("sample ", i + 1, " of ", count), 0, header.maxval);
    if (!sample.ok()) return sample.status();
    image.pixels[i] = static_cast<float>(*sample) * scale;
  }
  return image;
}

absl::StatusOr<GrayImage> DecodePgmBinary(absl::string_view bytes,
                                          PgmTokens& tokens,
                                          const PgmHeader& header) {
  absl::StatusOr<size_t> start = tokens.RasterStart();
  if (!start.ok()) return start.status();
  const size_t count = static_cast<size_t>(header.width) * header.height;
  const size_t sample_bytes = header.maxval < 256 ? 1 : 2;
  const size_t need = count * sample_bytes;
  if (bytes.size() - *start < need) {
    return Bad(absl::StrCat("PGM: truncated pixel data: expected ", need,
                            " bytes, got ", bytes.size() - *start));
  }
  GrayImage image{header.width, header.height, {}};
  image.pixels.resize(count);
  const float scale = 1.0f / static_cast<float>(header.maxval);
  const auto* raster =
      reinterpret_cast<const unsigned char*>(bytes.data() + *start);
  for (size_t i = 0; i < count; ++i) {
    const int sample = sample_bytes == 1
                           ? raster[i]
                           : (raster[2 * i] << 8) | raster[2 * i + 1];
    if (sample > header.maxval) {
      return Bad(absl::StrCat("PGM: sample ", i + 1, " is ", sample,
                              ", above maxval ", header.maxval));
    }
    image.pixels[i] = static_cast<float>(sample) * scale;
  }
  return image;
}

absl::StatusOr<GrayImage> DecodePgm(absl::string_view bytes, bool binary) {
  PgmTokens tokens(bytes);
  absl::StatusOr<PgmHeader> header = ReadPgmHeader(tokens);
  if (!header.ok()) return header.status();
  return binary ? DecodePgmBinary(bytes, tokens, *header)
                : DecodePgmAscii(tokens, *header);
}

absl::Status FinishReadError(png_image& png) {
  absl::Status error = Bad(absl::StrCat("PNG: ", png.message));
  png_image_free(&png);  // a no-op when libpng already freed it
  return error;
}

// Reads the PNG's header chunks into `png` (libpng allocates only its own
// small state, not the pixels). On error `png` holds nothing to free.
absl::Status BeginPngRead(absl::string_view bytes, png_image& png) {
  std::memset(&png, 0, sizeof(png));
  png.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&png, bytes.data(), bytes.size())) {
    return Bad(absl::StrCat("PNG: ", png.message));
  }
  if (png.width > kMaxImageSide || png.height > kMaxImageSide) {
    png_image_free(&png);
    return Bad(absl::StrCat("PNG: ", png.width, "x", png.height,
                            " is larger than ", kMaxImageSide, " a side"));
  }
  return absl::OkStatus();
}

absl::StatusOr<GrayImage> DecodePng(absl::string_view bytes) {
  png_image png;
  absl::Status begun = BeginPngRead(bytes, png);
  if (!begun.ok()) return begun;
  const bool sixteen_bit = (png.format & PNG_FORMAT_FLAG_LINEAR) != 0;
  png.format = sixteen_bit ? PNG_FORMAT_LINEAR_Y : PNG_FORMAT_GRAY;
  GrayImage image;
  image.width = static_cast<int>(png.width);
  image.height = static_cast<int>(png.height);
  const size_t count = static_cast<size_t>(png.width) * png.height;
  image.pixels.resize(count);
  if (sixteen_bit) {
    std::vector<png_uint_16> buffer(count);
    if (!png_image_finish_read(&png, nullptr, buffer.data(), 0, nullptr)) {
      return FinishReadError(png);
    }
    for (size_t i = 0; i < count; ++i) image.pixels[i] = buffer[i] / 65535.0f;
  } else {
    std::vector<png_byte> buffer(count);
    if (!png_image_finish_read(&png, nullptr, buffer.data(), 0, nullptr)) {
      return FinishReadError(png);
    }
    for (size_t i = 0; i < count; ++i) image.pixels[i] = buffer[i] / 255.0f;
  }
  return image;
}

enum class ImageFormat { kPng, kPgmBinary, kPgmAscii };

absl::StatusOr<ImageFormat> RecogniseFormat(absl::string_view bytes) {
  static constexpr unsigned char kPngSignature[8] = {0x89, 'P',  'N',  'G',
                                                     '\r', '\n', 0x1a, '\n'};
  if (bytes.size() >= 8 && std::memcmp(bytes.data(), kPngSignature, 8) == 0) {
    return ImageFormat::kPng;
  }
  if (bytes.size() >= 2 && bytes[0] == 'P' &&
      (bytes[1] == '5' || bytes[1] == '2')) {
    return bytes[1] == '5' ? ImageFormat::kPgmBinary : ImageFormat::kPgmAscii;
  }
  return Bad("not a PNG or PGM (P5/P2) file");
}

}  // namespace

absl::StatusOr<ImageSize> ReadGrayscaleImageSize(absl::string_view bytes) {
  absl::StatusOr<ImageFormat> format = RecogniseFormat(bytes);
  if (!format.ok()) return format.status();
  if (*format == ImageFormat::kPng) {
    png_image png;
    absl::Status begun = BeginPngRead(bytes, png);
    if (!begun.ok()) return begun;
    const ImageSize size{static_cast<int>(png.width),
                         static_cast<int>(png.height)};
    png_image_free(&png);
    return size;
  }
  PgmTokens tokens(bytes);
  absl::StatusOr<PgmHeader> header = ReadPgmHeader(tokens);
  if (!header.ok()) return header.status();
  return ImageSize{header->width, header->height};
}

absl::StatusOr<GrayImage> DecodeGrayscaleImage(absl::string_view bytes) {
  absl::StatusOr<ImageFormat> format = RecogniseFormat(bytes);
  if (!format.ok()) return format.status();
  if (*format == ImageFormat::kPng) return DecodePng(bytes);
  return DecodePgm(bytes, *format == ImageFormat::kPgmBinary);
}

}  // namespace receipt_parity

#include "data/test_image_files.h"

#include <png.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "logging/glog.h"
#include "io/atomic_file.h"

namespace receipt_parity {

std::vector<uint8_t> RampSamples(int width, int height, int seed) {
  std::vector<uint8_t> samples(static_cast<size_t>(width) * height);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      samples[y * width + x] =
          static_cast<uint8_t>((x * 7 + y * 13 + seed) % 256);
    }
  }
  return samples;
}

std::string EncodePgmP5(int width, int height,
                        const std::vector<uint8_t>& samples) {
  std::string out =
      absl::StrCat("P5\n# test image\n", width, " ", height, "\n255\n");
  out.append(samples.begin(), samples.end());
  return out;
}

std::string EncodePgmP2(int width, int height,
                        const std::vector<uint8_t>& samples) {
  std::string out = absl::StrCat("P2\n", width, " ", height, "\n255\n");
  for (size_t i = 0; i < samples.size(); ++i) {
    absl::StrAppend(&out, samples[i], (i + 1) % 16 == 0 ? "\n" : " ");
  }
  return out;
}

std::string EncodePngOfFormat(int width, int height, uint32_t png_format,
                              const void* pixels) {
  png_image png;
  std::memset(&png, 0, sizeof(png));
  png.version = PNG_IMAGE_VERSION;
  png.width = width;
  png.height = height;
  png.format = png_format;
  png_alloc_size_t size = 0;
  CHECK(png_image_write_to_memory(&png, nullptr, &size, 0, pixels, 0, nullptr))
      << png.message;
  std::string out(size, '\0');
  CHECK(png_image_write_to_memory(&png, out.data(), &size, 0, pixels, 0, nullptr))
      << png.message;
  out.resize(size);
  return out;
}

std::string EncodePng(int width, int height,
                      const std::vector<uint8_t>& samples) {
  CHECK_EQ(samples.size(), static_cast<size_t>(width) * height);
  return EncodePngOfFormat(width, height, PNG_FORMAT_GRAY, samples.data());
}

namespace {

uint32_t Crc32(const std::string& bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char byte : bytes) {
    crc ^= byte;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
  }
  return ~crc;
}

void PutBigEndian32(uint32_t value, std::string& out, size_t at) {
  for (int i = 0; i < 4; ++i) {
    out[at + i] = static_cast<char>((value >> (24 - 8 * i)) & 0xFF);
  }
}

}  // namespace

std::string PngClaimingSize(int width, int height) {
  std::string png = EncodePng(8, 8, RampSamples(8, 8));
  // Signature (8), IHDR length (4), "IHDR" (4), width (4), height (4), ...,
  // the 13-byte IHDR data ends at 29, its CRC (over type and data) follows.
  CHECK_EQ(png.substr(12, 4), "IHDR");
  PutBigEndian32(width, png, 16);
  PutBigEndian32(height, png, 20);
  PutBigEndian32(Crc32(png.substr(12, 17)), png, 29);
  return png;
}

std::string MakeTestDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir =
      absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/", name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string WriteTestFile(const std::string& dir, const std::string& name,
                          const std::string& contents) {
  const std::string path = absl::StrCat(dir, "/", name);
  std::filesystem::create_directories(
      std::filesystem::path(path).parent_path());
  absl::Status written = WriteFileAtomically(path, contents);
  CHECK(written.ok()) << written;
  return path;
}

}  // namespace receipt_parity

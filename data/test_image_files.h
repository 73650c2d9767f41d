// Test-only encoders and writers for the image files a manifest names.
#ifndef RECEIPT_PARITY_DATA_TEST_IMAGE_FILES_H_
#define RECEIPT_PARITY_DATA_TEST_IMAGE_FILES_H_

#include <cstdint>
#include <string>
#include <vector>

namespace receipt_parity {

// A width x height ramp of 8-bit samples: (x * 7 + y * 13 + seed) % 256.
std::vector<uint8_t> RampSamples(int width, int height, int seed = 0);

// PGM files with maxval 255.
std::string EncodePgmP5(int width, int height,
                        const std::vector<uint8_t>& samples);
std::string EncodePgmP2(int width, int height,
                        const std::vector<uint8_t>& samples);
// An 8-bit grayscale PNG written by libpng. CHECK-fails if libpng fails.
std::string EncodePng(int width, int height,
                      const std::vector<uint8_t>& samples);
// A PNG of libpng's simplified-API `png_format` (PNG_FORMAT_RGB,
// PNG_FORMAT_GA, PNG_FORMAT_LINEAR_Y for 16 bits, ...) from `pixels` in that
// format, rows packed. CHECK-fails if libpng fails.
std::string EncodePngOfFormat(int width, int height, uint32_t png_format,
                              const void* pixels);
// A valid 8x8 PNG whose IHDR is rewritten to claim width x height (its CRC
// recomputed), so only the header says so: the file stays a few hundred bytes.
std::string PngClaimingSize(int width, int height);

// A fresh folder under TEST_TMPDIR (created; `name` must be unique per test).
std::string MakeTestDir(const std::string& name);
// Writes `contents` to `dir`/`name`; returns the path. CHECK-fails on error.
std::string WriteTestFile(const std::string& dir, const std::string& name,
                          const std::string& contents);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_DATA_TEST_IMAGE_FILES_H_

#include "data/grayscale_image.h"

#include <png.h>

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "data/test_image_files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

void ExpectDecodesTo(const std::string& bytes, int width, int height,
                     const std::vector<uint8_t>& samples) {
  absl::StatusOr<GrayImage> image = DecodeGrayscaleImage(bytes);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->width, width);
  EXPECT_EQ(image->height, height);
  ASSERT_EQ(image->pixels.size(), samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    ASSERT_FLOAT_EQ(image->pixels[i], samples[i] / 255.0f) << i;
  }
}

void ExpectError(const std::string& bytes, const std::string& text) {
  absl::StatusOr<GrayImage> image = DecodeGrayscaleImage(bytes);
  ASSERT_FALSE(image.ok()) << text;
  EXPECT_EQ(image.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(image.status().message(), HasSubstr(text));
}

TEST(GrayscaleImageTest, DecodesPgmBinaryAsciiAndPng) {
  const std::vector<uint8_t> samples = RampSamples(12, 7, 3);
  ExpectDecodesTo(EncodePgmP5(12, 7, samples), 12, 7, samples);
  ExpectDecodesTo(EncodePgmP2(12, 7, samples), 12, 7, samples);
  ExpectDecodesTo(EncodePng(12, 7, samples), 12, 7, samples);
}

// What docs/data.md promises of PNGs: colour becomes gray, alpha is
// composited onto black, 16-bit samples are read linear as s / 65535.
TEST(GrayscaleImageTest, PngColourAlphaAndSixteenBitBecomeGray) {
  const uint8_t rgb[] = {200, 200, 200, 10, 10, 10};  // two gray pixels
  absl::StatusOr<GrayImage> colour =
      DecodeGrayscaleImage(EncodePngOfFormat(2, 1, PNG_FORMAT_RGB, rgb));
  ASSERT_TRUE(colour.ok()) << colour.status();
  EXPECT_NEAR(colour->pixels[0], 200 / 255.0f, 1.5f / 255);
  EXPECT_NEAR(colour->pixels[1], 10 / 255.0f, 1.5f / 255);

  const uint8_t gray_alpha[] = {255, 255, 255, 0};  // opaque white, clear white
  absl::StatusOr<GrayImage> alpha =
      DecodeGrayscaleImage(EncodePngOfFormat(2, 1, PNG_FORMAT_GA, gray_alpha));
  ASSERT_TRUE(alpha.ok()) << alpha.status();
  EXPECT_NEAR(alpha->pixels[0], 1.0f, 1e-6);
  EXPECT_NEAR(alpha->pixels[1], 0.0f, 1e-6);

  const uint16_t linear[] = {65535, 32768, 0};
  absl::StatusOr<GrayImage> sixteen =
      DecodeGrayscaleImage(EncodePngOfFormat(3, 1, PNG_FORMAT_LINEAR_Y, linear));
  ASSERT_TRUE(sixteen.ok()) << sixteen.status();
  EXPECT_FLOAT_EQ(sixteen->pixels[0], 1.0f);
  EXPECT_NEAR(sixteen->pixels[1], 0.5f, 1e-4);
  EXPECT_FLOAT_EQ(sixteen->pixels[2], 0.0f);
}

TEST(GrayscaleImageTest, PgmSixteenBitSamplesAndComments) {
  // maxval 1000, two big-endian bytes per sample.
  std::string bytes = "P5 # comment\n2 1\n# another\n1000\n";
  bytes += std::string("\x03\xE8\x01\xF4", 4);  // 1000, 500
  absl::StatusOr<GrayImage> image = DecodeGrayscaleImage(bytes);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_FLOAT_EQ(image->pixels[0], 1.0f);
  EXPECT_FLOAT_EQ(image->pixels[1], 0.5f);
}

TEST(GrayscaleImageTest, RejectsCorruptFiles) {
  const std::vector<uint8_t> samples = RampSamples(8, 8);
  ExpectError("GIF89a....", "not a PNG or PGM");
  ExpectError("", "not a PNG or PGM");
  ExpectError("P6\n8 8\n255\n", "not a PNG or PGM");
  const std::string p5 = EncodePgmP5(8, 8, samples);
  ExpectError(p5.substr(0, p5.size() - 5), "truncated pixel data");
  ExpectError("P5\n8\n", "missing height");
  ExpectError("P5\n8 x\n255\n", "height must be an integer");
  ExpectError("P5\n8 8\n70000\n", "maxval must be an integer in [1, 65535]");
  ExpectError("P5\n0 8\n255\n", "width must be an integer");
  ExpectError("P2\n2 1\n10\n3 11\n",
              "sample 2 of 2 must be an integer in [0, 10]");
  ExpectError("P2\n2 2\n10\n3 1 4\n", "missing sample 4 of 4");
  std::string p5_over = "P5\n1 1\n10\n";
  p5_over += '\x0B';
  ExpectError(p5_over, "above maxval");

  const std::string png = EncodePng(8, 8, samples);
  ExpectError(png.substr(0, 30), "PNG: ");
  std::string broken = png;
  broken[20] ^= 0x5A;  // inside IHDR: its CRC no longer matches
  ExpectError(broken, "PNG: ");
  ExpectError(png.substr(0, png.size() - 20), "PNG: ");
}

TEST(GrayscaleImageTest, SizeComesFromTheHeaderAlone) {
  // 20 bytes claiming 16384x16384: the size is read, nothing is decoded.
  const std::string pgm = "P5\n16384 16384\n255\n\x01";
  ASSERT_EQ(pgm.size(), 20u);
  absl::StatusOr<ImageSize> size = ReadGrayscaleImageSize(pgm);
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_EQ(size->width, 16384);
  EXPECT_EQ(size->height, 16384);

  size = ReadGrayscaleImageSize(PngClaimingSize(16384, 12000));
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_EQ(size->width, 16384);
  EXPECT_EQ(size->height, 12000);

  size = ReadGrayscaleImageSize(EncodePgmP2(12, 7, RampSamples(12, 7)));
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_EQ(size->width, 12);
  EXPECT_EQ(size->height, 7);

  EXPECT_THAT(ReadGrayscaleImageSize("GIF89a").status().message(),
              HasSubstr("not a PNG or PGM"));
  EXPECT_THAT(
      ReadGrayscaleImageSize(PngClaimingSize(16385, 8)).status().message(),
      HasSubstr("larger than 16384 a side"));
  EXPECT_THAT(ReadGrayscaleImageSize("P5\n8\n").status().message(),
              HasSubstr("missing height"));
}

TEST(GrayscaleImageTest, TruncatedHugePgmIsRefusedBeforeItsPixels) {
  ExpectError("P5\n16384 16384\n255\n\x01",
              "truncated pixel data: expected 268435456 bytes, got 1");
}

}  // namespace
}  // namespace receipt_parity

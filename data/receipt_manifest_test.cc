#include "data/receipt_manifest.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "data/test_image_files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr int kSize = 8;

// A folder with images a.pgm (P5), b.png, c.pgm (P2), sub/d.png, big.pgm
// (9x9), corrupt.png and notes.txt, and a manifest with `body` after the
// header (or exactly `body` when `with_header` is false).
std::string WriteManifest(const std::string& name, const std::string& body,
                          bool with_header = true) {
  const std::string dir = MakeTestDir(name);
  WriteTestFile(dir, "a.pgm",
                EncodePgmP5(kSize, kSize, RampSamples(kSize, kSize, 1)));
  WriteTestFile(dir, "b.png",
                EncodePng(kSize, kSize, RampSamples(kSize, kSize, 2)));
  WriteTestFile(dir, "c.pgm",
                EncodePgmP2(kSize, kSize, RampSamples(kSize, kSize, 3)));
  WriteTestFile(dir, "sub/d.png",
                EncodePng(kSize, kSize, RampSamples(kSize, kSize, 4)));
  WriteTestFile(dir, "big.pgm", EncodePgmP5(9, 9, RampSamples(9, 9)));
  WriteTestFile(
      dir, "corrupt.png",
      EncodePng(kSize, kSize, RampSamples(kSize, kSize)).substr(0, 40));
  WriteTestFile(dir, "notes.txt", "not an image");
  return WriteTestFile(
      dir, "manifest.csv",
      with_header ? absl::StrCat("receipt_id,image,label\n", body) : body);
}

TEST(ReceiptManifestTest, LoadsIdentitiesWithAllTheirCaptures) {
  const std::string path = WriteManifest("good",
                                         "r1,a.pgm,ok\r\n"
                                         " r2 , b.png , faded \n"
                                         "\n"
                                         "r1,sub/d.png,ok\n"
                                         "r3,c.pgm,cropped\n"
                                         "r1,./c.pgm,ok\n");
  absl::StatusOr<std::vector<ReceiptIdentity>> identities =
      LoadReceiptManifest(path, kSize);
  ASSERT_TRUE(identities.ok()) << identities.status();
  ASSERT_EQ(identities->size(), 3u);
  const ReceiptIdentity& r1 = (*identities)[0];
  EXPECT_EQ(r1.receipt_id, "r1");
  EXPECT_EQ(r1.label, 0);
  ASSERT_EQ(r1.captures.size(), 3u);
  EXPECT_FLOAT_EQ(r1.captures[0][1], RampSamples(kSize, kSize, 1)[1] / 255.0f);
  EXPECT_FLOAT_EQ(r1.captures[1][1], RampSamples(kSize, kSize, 4)[1] / 255.0f);
  EXPECT_FLOAT_EQ(r1.captures[2][1], RampSamples(kSize, kSize, 3)[1] / 255.0f);
  EXPECT_EQ((*identities)[1].receipt_id, "r2");
  EXPECT_EQ((*identities)[1].label, 2);
  EXPECT_EQ((*identities)[1].captures.size(), 1u);
  EXPECT_EQ((*identities)[2].label, 3);
}

// Image paths are relative to the manifest's folder, never to the working
// directory; an absolute one is used as written.
TEST(ReceiptManifestTest, ImagePathsAreRelativeToTheManifestsFolder) {
  const std::string dir = MakeTestDir("relative_images");
  WriteTestFile(dir, "data/a.pgm",
                EncodePgmP5(kSize, kSize, RampSamples(kSize, kSize, 1)));
  const std::string elsewhere = WriteTestFile(
      dir, "elsewhere/b.pgm", EncodePgmP5(kSize, kSize, RampSamples(kSize, kSize, 2)));
  // A decoy of the wrong size where a working-directory lookup would go.
  WriteTestFile(dir, "a.pgm", EncodePgmP5(9, 9, RampSamples(9, 9)));
  WriteTestFile(dir, "data/manifest.csv",
                absl::StrCat("receipt_id,image,label\nr1,a.pgm,ok\nr2,", elsewhere,
                             ",faded\n"));
  char* previous = getcwd(nullptr, 0);
  ASSERT_EQ(chdir(dir.c_str()), 0) << std::strerror(errno);
  absl::StatusOr<std::vector<ReceiptIdentity>> identities =
      LoadReceiptManifest("data/manifest.csv", kSize);
  ASSERT_EQ(chdir(previous), 0);
  free(previous);
  ASSERT_TRUE(identities.ok()) << identities.status();
  ASSERT_EQ(identities->size(), 2u);
  EXPECT_FLOAT_EQ((*identities)[0].captures[0][1],
                  RampSamples(kSize, kSize, 1)[1] / 255.0f);
  EXPECT_FLOAT_EQ((*identities)[1].captures[0][1],
                  RampSamples(kSize, kSize, 2)[1] / 255.0f);
}

struct BadCase {
  const char* name;
  std::string body;
  int line;
  const char* message;
  bool with_header = true;
};

TEST(ReceiptManifestTest, EachBadInputNamesTheManifestLine) {
  const BadCase cases[] = {
      {"no_header", "r1,a.pgm,ok\n", 1, "missing header", false},
      {"wrong_header", "id,image,label\nr1,a.pgm,ok\n", 1, "missing header",
       false},
      {"empty_file", "", 1, "missing header", false},
      {"two_columns", "r1,a.pgm,ok\nr2,b.png\n", 3,
       "expected 3 columns (receipt_id,image,label), got 2"},
      {"four_columns", "r1,a.pgm,ok,extra\n", 2, "expected 3 columns"},
      {"empty_id", "r1,a.pgm,ok\n ,b.png,ok\n", 3, "empty receipt_id field"},
      {"empty_image", "r1,,ok\n", 2, "empty image field"},
      {"empty_label", "r1,a.pgm,\n", 2, "empty label field"},
      {"duplicate_row", "r1,a.pgm,ok\nr2,b.png,ok\nr1,./a.pgm,ok\n", 4,
       "duplicate row: receipt_id \"r1\" with image \"./a.pgm\" already on "
       "line 2"},
      {"unknown_label", "r1,a.pgm,smudged\n", 2,
       "unknown label \"smudged\"; valid labels: ok, blurred, faded, cropped"},
      {"missing_file", "r1,a.pgm,ok\nr2,gone.pgm,ok\n", 3,
       "image file not found: "},
      {"corrupt_png", "r1,corrupt.png,ok\n", 2, "unreadable image "},
      {"not_an_image", "r1,notes.txt,ok\n", 2, "not a PNG or PGM"},
      {"folder_as_image", "r1,sub,ok\n", 2, "image "},
      {"wrong_size", "r1,a.pgm,ok\nr2,big.pgm,ok\n", 3,
       "is 9x9, expected 8x8 (data.image_size)"},
      {"conflicting_labels", "r1,a.pgm,ok\nr2,b.png,ok\nr1,c.pgm,blurred\n", 4,
       "conflicting labels for receipt_id \"r1\": \"blurred\" here, \"ok\" on "
       "line 2"},
  };
  for (const BadCase& c : cases) {
    const std::string path = WriteManifest(c.name, c.body, c.with_header);
    absl::StatusOr<std::vector<ReceiptIdentity>> identities =
        LoadReceiptManifest(path, kSize);
    ASSERT_FALSE(identities.ok()) << c.name;
    EXPECT_THAT(std::string(identities.status().message()),
                StartsWith(absl::StrCat(path, ":", c.line, ": ")))
        << c.name;
    EXPECT_THAT(identities.status().message(), HasSubstr(c.message)) << c.name;
  }
}

TEST(ReceiptManifestTest, MissingOrEmptyManifestNamesIt) {
  const std::string empty = WriteManifest("header_only", "\n\n");
  absl::StatusOr<std::vector<ReceiptIdentity>> got =
      LoadReceiptManifest(empty, kSize);
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(),
              HasSubstr(absl::StrCat(empty, ": no rows after the header")));

  const std::string missing = MakeTestDir("no_manifest") + "/manifest.csv";
  got = LoadReceiptManifest(missing, kSize);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(got.status().message(), HasSubstr(missing));
}

// `body` after the header in a manifest of folder `name`; the error must
// name the manifest line and contain `message`.
void ExpectLineError(const std::string& name, const std::string& body, int line,
                     const std::string& message) {
  const std::string path = WriteManifest(name, body);
  absl::StatusOr<std::vector<ReceiptIdentity>> identities =
      LoadReceiptManifest(path, kSize);
  ASSERT_FALSE(identities.ok()) << name;
  EXPECT_THAT(std::string(identities.status().message()),
              StartsWith(absl::StrCat(path, ":", line, ": ")))
      << name;
  EXPECT_THAT(identities.status().message(), HasSubstr(message)) << name;
}

TEST(ReceiptManifestTest, HugeClaimedSizeIsRefusedFromTheHeader) {
  const std::string dir = MakeTestDir("huge_headers");
  WriteTestFile(dir, "huge.pgm", "P5\n16384 16384\n255\n\x01");
  WriteTestFile(dir, "huge.png", PngClaimingSize(16384, 16384));
  WriteTestFile(dir, "a.pgm",
                EncodePgmP5(kSize, kSize, RampSamples(kSize, kSize)));
  for (const std::string image : {"huge.pgm", "huge.png"}) {
    const std::string path =
        WriteTestFile(dir, "manifest.csv",
                      absl::StrCat("receipt_id,image,label\nr1,a.pgm,ok\nr2,",
                                   image, ",ok\n"));
    absl::StatusOr<std::vector<ReceiptIdentity>> got =
        LoadReceiptManifest(path, kSize);
    ASSERT_FALSE(got.ok()) << image;
    EXPECT_THAT(std::string(got.status().message()),
                StartsWith(absl::StrCat(path, ":3: image ", dir, "/", image,
                                        " is 16384x16384, expected 8x8 "
                                        "(data.image_size); refused by its "
                                        "header, before decoding")));
  }
}

TEST(ReceiptManifestTest, PathsThatAreNotRegularFilesAreRefusedUnopened) {
  const std::string dir = MakeTestDir("fifo_dir");
  const std::string fifo = dir + "/pipe.pgm";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  // Opening the FIFO for reading would block this test until its timeout.
  ExpectLineError(
      "fifo", absl::StrCat("r1,a.pgm,ok\nr2,", fifo, ",ok\n"), 3,
      absl::StrCat("image ", fifo, " is a FIFO, not a regular file"));
  ExpectLineError("dev_zero", "r1,a.pgm,ok\n\nr2,/dev/zero,ok\n", 4,
                  "image /dev/zero is a character device, not a regular file");
  ExpectLineError("folder", "r1,sub,ok\n", 2,
                  "sub is a folder, not a regular file");
}

TEST(ReceiptManifestTest, ReceiptIdsMustBeValidUtf8) {
  ExpectLineError("utf8_ff_fe", "r1,a.pgm,ok\n\xff\xfe,b.png,ok\n", 3,
                  "receipt_id \"\\xff\\xfe\" is not valid UTF-8 (byte 1)");
  ExpectLineError("utf8_overlong", "r\xc0\xaf,a.pgm,ok\n", 2,
                  "is not valid UTF-8 (byte 2)");
  ExpectLineError("utf8_surrogate", "r\xed\xa0\x80,a.pgm,ok\n", 2,
                  "is not valid UTF-8 (byte 3)");
  ExpectLineError("utf8_cut", "r1,a.pgm,ok\nr\xc3,b.png,ok\n", 3,
                  "is not valid UTF-8 (byte 3)");

  const std::string path = WriteManifest("utf8_good",
                                         "re\xc3\xa7u,a.pgm,ok\n\xe2\x82\xac"
                                         "\xf0\x9f\xa7\xbe,b.png,faded\n");
  absl::StatusOr<std::vector<ReceiptIdentity>> got =
      LoadReceiptManifest(path, kSize);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].receipt_id, "re\xc3\xa7u");
  EXPECT_EQ((*got)[1].receipt_id, "\xe2\x82\xac\xf0\x9f\xa7\xbe");
}

}  // namespace
}  // namespace receipt_parity

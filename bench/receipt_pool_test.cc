#include "bench/receipt_pool.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "data/label_map.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/atomic_file.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return absl::StrCat(dir != nullptr ? dir : "/tmp", "/", name);
}

ReceiptSplit SmallSplit() {
  DataConfig data;
  data.mutable_synthetic()->set_num_identities(12);
  data.mutable_synthetic()->set_rare_class_fraction(0.1);
  data.mutable_synthetic()->set_seed(3);
  data.set_views_per_identity(2);
  data.set_validation_fraction(0.25);
  data.set_image_size(16);
  absl::StatusOr<ReceiptSplit> split = LoadReceipts(data);
  EXPECT_TRUE(split.ok()) << split.status();
  return *split;
}

TEST(ReceiptPoolTest, RoundTripsTheTrainingExamplesInOrder) {
  const ReceiptSplit split = SmallSplit();
  const ReceiptPool pool = PoolOf(split);
  ASSERT_EQ(pool.size(), static_cast<int64_t>(split.train.size()));
  const std::string images = TempPath("rt.f32"), labels = TempPath("rt.i64");
  ASSERT_TRUE(WriteReceiptPool(pool, images, labels).ok());
  absl::StatusOr<ReceiptPool> read = ReadReceiptPool(images, labels, split.image_size);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->size(), pool.size());
  const size_t pixels = static_cast<size_t>(split.image_size) * split.image_size;
  for (size_t i = 0; i < split.train.size(); ++i) {
    EXPECT_EQ(read->labels[i], split.train[i].label) << i;
    for (size_t p = 0; p < pixels; ++p) {
      ASSERT_EQ(read->images[i * pixels + p], split.train[i].pixels[p]) << i << "/" << p;
    }
  }
}

TEST(ReceiptPoolTest, RefusesToWriteAnInconsistentPool) {
  ReceiptPool pool = PoolOf(SmallSplit());
  pool.labels.pop_back();
  const absl::Status s = WriteReceiptPool(pool, TempPath("bad.f32"), TempPath("bad.i64"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(WriteReceiptPool(ReceiptPool{}, TempPath("e.f32"), TempPath("e.i64")).ok());
}

class ReadErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ReceiptPool pool = PoolOf(SmallSplit());
    size_ = pool.image_size;
    ASSERT_TRUE(WriteReceiptPool(pool, images_, labels_).ok());
    count_ = pool.size();
  }
  std::string images_ = TempPath("r.f32");
  std::string labels_ = TempPath("r.i64");
  int size_ = 0;
  int64_t count_ = 0;
};

TEST_F(ReadErrorsTest, MissingFileIsNotFoundAndNamed) {
  absl::StatusOr<ReceiptPool> r = ReadReceiptPool(TempPath("none.f32"), labels_, size_);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("none.f32"));
}

TEST_F(ReadErrorsTest, PartialRecordIsNamed) {
  absl::StatusOr<std::string> bytes = ReadFileToString(images_);
  ASSERT_TRUE(bytes.ok());
  ASSERT_TRUE(WriteFileAtomically(images_, bytes->substr(0, bytes->size() - 3)).ok());
  absl::StatusOr<ReceiptPool> r = ReadReceiptPool(images_, labels_, size_);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr(images_));
  EXPECT_THAT(r.status().message(), HasSubstr("whole number"));
}

TEST_F(ReadErrorsTest, WrongImageSizeMakesTheCountsDisagree) {
  // Read as 8x8: four times as many images as labels.
  absl::StatusOr<ReceiptPool> r = ReadReceiptPool(images_, labels_, size_ / 2);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(),
              HasSubstr(absl::StrCat(4 * count_, " images of ", size_ / 2)));
  EXPECT_FALSE(ReadReceiptPool(images_, labels_, 0).ok());
}

TEST_F(ReadErrorsTest, LabelOutOfRangeIsNamed) {
  absl::StatusOr<std::string> bytes = ReadFileToString(labels_);
  ASSERT_TRUE(bytes.ok());
  std::string changed = *bytes;
  const int64_t bad = kNumLabels;
  std::memcpy(changed.data() + sizeof(int64_t), &bad, sizeof(bad));  // label 1
  ASSERT_TRUE(WriteFileAtomically(labels_, changed).ok());
  absl::StatusOr<ReceiptPool> r = ReadReceiptPool(images_, labels_, size_);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr(absl::StrCat("label 1 is ", bad)));
}

}  // namespace
}  // namespace receipt_parity

#include "data/data_config.h"

#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

TEST(ApplyDataDefaultsTest, FillsZeroViewsAndImageSizeOnceAndKeepsTheRest) {
  DataConfig config;
  config.mutable_synthetic()->set_num_identities(10);
  config.set_validation_fraction(0.25);
  ApplyDataDefaults(&config);
  EXPECT_EQ(config.views_per_identity(), 1);
  EXPECT_EQ(config.image_size(), kDefaultImageSize);
  EXPECT_EQ(config.validation_fraction(), 0.25);
  const std::string once = config.SerializeAsString();
  ApplyDataDefaults(&config);
  EXPECT_EQ(config.SerializeAsString(), once);  // idempotent

  DataConfig written;
  written.set_views_per_identity(3);
  written.set_image_size(16);
  ApplyDataDefaults(&written);
  EXPECT_EQ(written.views_per_identity(), 3);
  EXPECT_EQ(written.image_size(), 16);
  EXPECT_EQ(ResolvedImageSize(written), 16);
}

TEST(ValidateDataConfigTest, NamesTheFieldAndReadsNoFile) {
  DataConfig config;
  EXPECT_THAT(ValidateDataConfig(config).message(), HasSubstr("data.source: "));
  // A manifest that does not exist is not this check's business.
  config.set_manifest_path("/nonexistent/receipts.csv");
  EXPECT_TRUE(ValidateDataConfig(config).ok());
  config.set_validation_fraction(1.0);
  EXPECT_THAT(ValidateDataConfig(config).message(),
              HasSubstr("data.validation_fraction: must be in [0, 1), got 1"));
}

TEST(ValidateDataConfigTest, NonFiniteValidationFractionIsRefused) {
  DataConfig config;
  config.mutable_synthetic()->set_num_identities(10);
  config.set_validation_fraction(std::numeric_limits<double>::quiet_NaN());
  EXPECT_THAT(ValidateDataConfig(config).message(),
              HasSubstr("data.validation_fraction: must be in [0, 1), got nan"));
}

TEST(SyntheticTensorBytesTest, CountsEveryViewsPixelsAndLabelInInt64) {
  DataConfig config;
  config.mutable_synthetic()->set_num_identities(1000000);
  config.set_views_per_identity(1000);
  // 1e9 slots x (32 x 32 x 4 + 8) bytes: far past 32 bits.
  EXPECT_EQ(SyntheticTensorBytes(config), int64_t{1000000000} * 4104);
  config.set_image_size(512);
  EXPECT_EQ(SyntheticTensorBytes(config), int64_t{1000000000} * (512 * 512 * 4 + 8));
  DataConfig manifest;
  manifest.set_manifest_path("receipts.csv");
  EXPECT_EQ(SyntheticTensorBytes(manifest), 0);
}

TEST(ValidateDataConfigTest, ADatasetThatCannotFitInMemoryIsRefusedWithItsFigures) {
  ASSERT_LT(DataMemoryLimitBytes(), int64_t{4104} * 1000000000);
  DataConfig config;
  config.mutable_synthetic()->set_num_identities(1000000);
  config.set_views_per_identity(1000);
  ASSERT_TRUE(ValidateDataConfig(config).ok());
  const std::string message(ValidateDataFitsInMemory(config).message());
  EXPECT_THAT(message, HasSubstr("data.synthetic.num_identities: 1000000 identities x "
                                 "1000 views of 32x32 float pixels"));
  EXPECT_THAT(message, HasSubstr("need 4104000000000 bytes"));
  EXPECT_THAT(message, HasSubstr(absl::StrCat("limit of ", DataMemoryLimitBytes(), " bytes")));
  config.set_views_per_identity(1);  // 4.1 GB: fits on any machine that builds this
  EXPECT_TRUE(ValidateDataFitsInMemory(config).ok()) << ValidateDataFitsInMemory(config);
}

}  // namespace
}  // namespace receipt_parity

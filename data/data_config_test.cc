#include "data/data_config.h"

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

}  // namespace
}  // namespace receipt_parity

#include "artifacts/artifact_stamp.h"

#include "gtest/gtest.h"
#include "metrics/validation_report.pb.h"
#include "parity/parity_report.pb.h"
#include "samplers/audit.pb.h"
#include "artifacts/first_step.pb.h"
#include "artifacts/run_manifest.pb.h"
#include "artifacts/run_summary.pb.h"
#include "artifacts/resume_record.pb.h"
#include "artifacts/world_size_change.pb.h"
#include "drill/drill_report.pb.h"

namespace receipt_parity {
namespace {

// Every file a run folder holds names its run and attempt.
TEST(ArtifactStampTest, EveryArtifactTypeCarriesTheStamp) {
  for (const google::protobuf::Descriptor* type :
       {RunManifest::descriptor(), RunSummary::descriptor(), FirstStep::descriptor(),
        ResumeRecord::descriptor(), WorldSizeChangeReport::descriptor(),
        ValidationReport::descriptor(), SamplerAudit::descriptor(),
        ParityReport::descriptor()}) {
    EXPECT_TRUE(HasStampFields(*type)) << type->full_name();
  }
}

TEST(ArtifactStampTest, ATypeWithoutTheFieldsIsRecognized) {
  EXPECT_FALSE(HasStampFields(*NamedTensor::descriptor()));
  // RecoveryReport is the drill's report, not a run folder's artifact.
  EXPECT_FALSE(HasStampFields(*RecoveryReport::descriptor()));
}

TEST(ArtifactStampTest, SetsFingerprintAndAttempt) {
  ValidationReport validation;
  StampArtifact({"abc123", 3}, &validation);
  EXPECT_EQ(validation.config_fingerprint(), "abc123");
  EXPECT_EQ(validation.attempt(), 3);
  RunSummary summary;
  StampArtifact({"f", 2}, &summary);
  EXPECT_EQ(summary.config_fingerprint(), "f");
  EXPECT_EQ(summary.attempt(), 2);
}

TEST(ArtifactStampDeathTest, ATypeWithoutTheFieldsIsAProgrammingError) {
  NamedTensor tensor;
  EXPECT_DEATH(StampArtifact({"f", 1}, &tensor), "has no artifact stamp fields");
}

}  // namespace
}  // namespace receipt_parity

#include "artifacts/artifact_stamp.h"

#include <cstdlib>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "artifacts/first_step.pb.h"
#include "artifacts/resume_record.pb.h"
#include "artifacts/run_folder_state.pb.h"
#include "artifacts/run_manifest.pb.h"
#include "artifacts/run_summary.pb.h"
#include "artifacts/world_size_change.pb.h"
#include "gtest/gtest.h"
#include "io/atomic_file.h"
#include "io/json_file.h"
#include "metrics/validation_report.pb.h"
#include "parity/parity_report.pb.h"
#include "samplers/audit.pb.h"

namespace receipt_parity {
namespace {

std::string TestPath(const std::string& name) {
  return absl::StrCat(std::getenv("TEST_TMPDIR"), "/", name);
}

// The stamp is appended to every artifact a run folder holds: none of them
// may have a field of the stamp's names (the file would hold the key twice).
TEST(ArtifactStampTest, NoArtifactTypeRepeatsTheStampsFields) {
  for (const google::protobuf::Descriptor* type :
       {RunManifest::descriptor(), RunSummary::descriptor(), FirstStep::descriptor(),
        ResumeRecord::descriptor(), WorldSizeChangeReport::descriptor(),
        FinishRecord::descriptor(), ValidationReport::descriptor(),
        SamplerAudit::descriptor(), ParityReport::descriptor()}) {
    for (int i = 0; i < ArtifactStamp::descriptor()->field_count(); ++i) {
      const std::string& name = ArtifactStamp::descriptor()->field(i)->name();
      EXPECT_EQ(type->FindFieldByName(name), nullptr) << type->full_name() << "." << name;
    }
  }
}

TEST(ArtifactStampTest, TheFileEndsWithTheStampAndReadsBack) {
  RunSummary summary;
  summary.set_world_size(2);
  summary.set_purpose("training run");
  const std::string path = TestPath("run_summary.json");
  ASSERT_TRUE(WriteArtifact(path, MakeArtifactStamp("abc123", 3), summary).ok());

  absl::StatusOr<std::string> text = ReadFileToString(path);
  ASSERT_TRUE(text.ok());
  EXPECT_TRUE(absl::EndsWith(*text, ",\n \"config_fingerprint\": \"abc123\",\n"
                                    " \"attempt\": 3\n}\n"))
      << *text;
  EXPECT_TRUE(absl::StartsWith(*text, "{\n \"world_size\": 2,")) << *text;

  RunSummary read;
  ArtifactStamp stamp;
  ASSERT_TRUE(ReadArtifact(path, &read, &stamp).ok());
  EXPECT_EQ(read.SerializeAsString(), summary.SerializeAsString());
  EXPECT_EQ(stamp.config_fingerprint(), "abc123");
  EXPECT_EQ(stamp.attempt(), 3);
  // The stamp is optional to the reader, not to the parser.
  RunSummary again;
  EXPECT_TRUE(ReadArtifact(path, &again).ok());
  EXPECT_EQ(ReadJsonFile(path, &again).code(), absl::StatusCode::kInvalidArgument);
}

TEST(ArtifactStampTest, InPlaceWritesTheSameBytes) {
  ValidationReport validation;
  validation.add_label_names("ok");
  validation.set_update(7);
  const ArtifactStamp stamp = MakeArtifactStamp("f", 2);
  ASSERT_TRUE(WriteArtifact(TestPath("a.json"), stamp, validation).ok());
  ASSERT_TRUE(WriteArtifactInPlace(TestPath("b.json"), stamp, &validation).ok());
  EXPECT_EQ(*ReadFileToString(TestPath("a.json")), *ReadFileToString(TestPath("b.json")));
  EXPECT_EQ(validation.update(), 7);
}

}  // namespace
}  // namespace receipt_parity

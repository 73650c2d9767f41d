#include "artifacts/run_artifacts.h"

#include <filesystem>
#include <memory>
#include <set>
#include <string>

#include "artifacts/artifact_stamp.h"
#include "gtest/gtest.h"
#include "io/json_file.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;

std::set<std::string> FilesIn(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.insert(entry.path().filename().string());
  }
  return names;
}

struct Messages {
  Messages() {
    manifest.set_precision("fp32");
    summary.set_updates(12);
    validation.set_accuracy(0.75);
    audit.set_world_size(3);
    parity.set_pass(true);
    resume.set_generation(2);
    first_step.set_world_size(2);
  }
  RunArtifactMessages Required() {
    RunArtifactMessages artifacts;
    artifacts.manifest = &manifest;
    artifacts.summary = &summary;
    artifacts.validation = &validation;
    artifacts.audit = &audit;
    return artifacts;
  }
  RunManifest manifest;
  RunSummary summary;
  ValidationReport validation;
  SamplerAudit audit;
  ParityReport parity;
  ResumeRecord resume;
  FirstStep first_step;
};

std::string FreshDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  fs::remove_all(dir);
  return dir;
}

TEST(RunArtifactsTest, EveryRunWritesItsFourArtifactsIntoANewFolder) {
  Messages m;
  const std::string dir = FreshDir("artifacts_required") + "/nested";
  ASSERT_TRUE(WriteRunArtifacts(dir, m.Required()).ok());
  EXPECT_EQ(FilesIn(dir),
            (std::set<std::string>{"run_manifest.json", "run_summary.json",
                                   "validation.json", "sampler_audit.json"}));
  RunSummary summary;
  ASSERT_TRUE(ReadArtifact(dir + "/run_summary.json", &summary).ok());
  EXPECT_EQ(summary.updates(), 12);
  SamplerAudit audit;
  ASSERT_TRUE(ReadArtifact(dir + "/sampler_audit.json", &audit).ok());
  EXPECT_EQ(audit.world_size(), 3);
}

TEST(RunArtifactsTest, EveryArtifactIsStampedOnDiskAndLeftAsItWas) {
  Messages m;
  RunArtifactMessages artifacts = m.Required();
  artifacts.first_step = &m.first_step;
  artifacts.parity = &m.parity;
  artifacts.resume = &m.resume;
  artifacts.stamp = MakeArtifactStamp("fingerprint-7", 4);
  const std::string dir = FreshDir("artifacts_stamped");
  const std::string audit_before = m.audit.SerializeAsString();
  ASSERT_TRUE(WriteRunArtifacts(dir, artifacts).ok());
  EXPECT_EQ(m.audit.SerializeAsString(), audit_before);
  for (const std::string& name : FilesIn(dir)) {
    std::unique_ptr<google::protobuf::Message> message;
    if (name == "sampler_audit.json") message = std::make_unique<SamplerAudit>();
    if (name == "run_summary.json") message = std::make_unique<RunSummary>();
    if (name == "run_manifest.json") message = std::make_unique<RunManifest>();
    if (name == "validation.json") message = std::make_unique<ValidationReport>();
    if (name == "parity.json") message = std::make_unique<ParityReport>();
    if (name == "resume.json") message = std::make_unique<ResumeRecord>();
    if (name == "first_step.json") message = std::make_unique<FirstStep>();
    ASSERT_NE(message, nullptr) << name;
    ArtifactStamp stamp;
    ASSERT_TRUE(ReadArtifact(dir + "/" + name, message.get(), &stamp).ok()) << name;
    EXPECT_EQ(stamp.config_fingerprint(), "fingerprint-7") << name;
    EXPECT_EQ(stamp.attempt(), 4) << name;
  }
  EXPECT_EQ(FilesIn(dir).size(), 7u);
}

TEST(RunArtifactsTest, OptionalArtifactsAreWrittenWhenSet) {
  Messages m;
  const std::string dir = FreshDir("artifacts_all");
  RunArtifactMessages artifacts = m.Required();
  artifacts.parity = &m.parity;
  artifacts.resume = &m.resume;
  artifacts.first_step = &m.first_step;
  ASSERT_TRUE(WriteRunArtifacts(dir, artifacts).ok());
  EXPECT_EQ(FilesIn(dir).size(), 7u);
  ParityReport parity;
  ASSERT_TRUE(ReadArtifact(dir + "/parity.json", &parity).ok());
  EXPECT_TRUE(parity.pass());
  ResumeRecord resume;
  ASSERT_TRUE(ReadArtifact(dir + "/resume.json", &resume).ok());
  EXPECT_EQ(resume.generation(), 2);
  FirstStep first_step;
  ASSERT_TRUE(ReadArtifact(dir + "/first_step.json", &first_step).ok());
  EXPECT_EQ(first_step.world_size(), 2);
}

TEST(RunArtifactsTest, AFolderThatCannotBeMadeIsAStatus) {
  Messages m;
  const std::string dir = FreshDir("artifacts_blocked");
  fs::create_directories(dir);
  ASSERT_TRUE(WriteJsonFile(dir + "/file", m.manifest).ok());
  EXPECT_FALSE(WriteRunArtifacts(dir + "/file/sub", m.Required()).ok());
}

TEST(RunArtifactsTest, ResumeIsWorthRecordingWhenAnythingHappened) {
  ResumeRecord fresh;
  fresh.set_checkpoint_root("/x");
  fresh.set_next_generation(1);
  EXPECT_FALSE(ResumeWorthRecording(fresh));
  ResumeRecord resumed = fresh;
  resumed.set_generation(3);
  EXPECT_TRUE(ResumeWorthRecording(resumed));
  ResumeRecord skipped = fresh;
  skipped.add_skipped("gen-000002: no MANIFEST");
  EXPECT_TRUE(ResumeWorthRecording(skipped));
  ResumeRecord cleaned = fresh;
  cleaned.add_cleaned_up("/x/gen-000002");
  EXPECT_TRUE(ResumeWorthRecording(cleaned));
}

}  // namespace
}  // namespace receipt_parity

#include "artifacts/run_artifacts.h"

#include <filesystem>
#include <utility>
#include <vector>

#include "logging/glog.h"
#include "io/json_file.h"

namespace receipt_parity {

bool ResumeWorthRecording(const ResumeRecord& resume) {
  return resume.generation() > 0 || resume.skipped_size() > 0 ||
         resume.cleaned_up_size() > 0 || resume.set_aside_size() > 0;
}

absl::Status WriteRunArtifacts(const std::string& dir,
                               const RunArtifactMessages& artifacts) {
  CHECK(artifacts.manifest != nullptr && artifacts.summary != nullptr &&
        artifacts.validation != nullptr && artifacts.audit != nullptr)
      << "WriteRunArtifacts: manifest, summary, validation and audit are required";
  std::error_code ignored;  // a missing folder fails the first write, named
  std::filesystem::create_directories(dir, ignored);
  const std::vector<std::pair<const char*, google::protobuf::Message*>> in_order = {
      {"parity.json", artifacts.parity},
      {"resume.json", artifacts.resume},
      {"run_manifest.json", artifacts.manifest},
      {"run_summary.json", artifacts.summary},
      {"validation.json", artifacts.validation},
      {"sampler_audit.json", artifacts.audit},
      {"first_step.json", artifacts.first_step}};
  for (const auto& [name, message] : in_order) {
    if (message == nullptr) continue;
    if (absl::Status s = WriteArtifactInPlace(dir + "/" + name, artifacts.stamp, message);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace receipt_parity

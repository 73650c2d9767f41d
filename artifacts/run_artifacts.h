// The JSON artifacts rank 0 writes at the end of a run, into its artifact
// folder (created when missing):
//   parity.json         a multi-worker run checked against its reference
//   resume.json         a run that resumed, or passed over or cleaned up
//                       checkpoint generations
//   run_manifest.json, run_summary.json, validation.json,
//   sampler_audit.json  every run
//   first_step.json     when given (a run's recorder writes it right after
//                       its first update: trainer/update_recorder.h)
// in this order, each atomically (io/json_file.h), each stamped with the
// run and attempt. update-K.json are
// written during the run (trainer/update_recorder.h),
// world_size_change.json at its start (artifacts/world_size_change.h).
#ifndef RECEIPT_PARITY_ARTIFACTS_RUN_ARTIFACTS_H_
#define RECEIPT_PARITY_ARTIFACTS_RUN_ARTIFACTS_H_

#include <string>

#include "absl/status/status.h"
#include "metrics/validation_report.pb.h"
#include "parity/parity_report.pb.h"
#include "samplers/audit.pb.h"
#include "artifacts/artifact_stamp.h"
#include "artifacts/first_step.pb.h"
#include "artifacts/run_manifest.pb.h"
#include "artifacts/run_summary.pb.h"
#include "artifacts/resume_record.pb.h"

namespace receipt_parity {

// Not owned; each is stamped and written in place (a copy would
// double the memory of the largest, the sampler audit: 16 MB at the end of
// a 4000-update two-worker run). The four every run has are required;
// nullptr leaves an optional artifact out.
struct RunArtifactMessages {
  RunManifest* manifest = nullptr;
  RunSummary* summary = nullptr;
  ValidationReport* validation = nullptr;
  SamplerAudit* audit = nullptr;
  ParityReport* parity = nullptr;
  ResumeRecord* resume = nullptr;
  FirstStep* first_step = nullptr;
  // Set on every artifact written (artifacts/artifact_stamp.h).
  ArtifactStamp stamp;
};

// Whether a run's ResumeRecord is worth resume.json: it resumed from a
// generation, or passed over or cleaned up any.
bool ResumeWorthRecording(const ResumeRecord& resume);

// Stamps the artifacts that are set, in place, and writes them into `dir`.
// Stops at the first error (Internal naming the file); what was written
// before stays.
// REQUIRES: manifest, summary, validation and audit are set.
absl::Status WriteRunArtifacts(const std::string& dir,
                               const RunArtifactMessages& artifacts);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_ARTIFACTS_RUN_ARTIFACTS_H_

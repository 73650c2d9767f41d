// The study's last stage: from the artifacts its earlier stages left in the
// study folder (study/study_layout.h) to trade_report.json, trade_report.md
// and trade_report.svg beside them.
#ifndef RECEIPT_PARITY_STUDY_TRADE_REPORT_STAGE_H_
#define RECEIPT_PARITY_STUDY_TRADE_REPORT_STAGE_H_

#include <string>

#include "absl/status/statusor.h"
#include "study/trade_report.pb.h"
#include "study/trade_report_builder.h"
#include "drill/drill_report.pb.h"
#include "artifacts/run_summary.pb.h"

namespace receipt_parity {

// Reads, relative to `study_dir`:
//   one_worker/reference/{run_summary,validation}.json
//   two_worker/{run_summary,validation,parity}.json
//   parity_simulated/parity.json
//   sampler_audit_duplicate_pad.json, sampler_audit_masked_tail.json
// and, when present, recovery.json (the fault drill's RecoveryReport) and
// the folders two_worker_mpi/ and two_worker_bf16/ (then each one's
// run_summary, validation and parity .json are required) and
// planted_mistakes/ (then every planted run's parity.json is required); the checkpoint
// cost is the two-worker run's RunSummary.checkpoint. A missing
// recovery.json, checkpoint record, two_worker_mpi/ or two_worker_bf16/ is
// "not measured", not an error.
// Errors: NotFound / InvalidArgument from ReadJsonFile naming the file for
// a missing or malformed required artifact.
absl::StatusOr<TradeReportInputs> LoadTradeReportInputs(
    const std::string& study_dir);

// LoadTradeReportInputs, BuildTradeReport, then writes the three files
// atomically. Returns the report. Errors: those of the steps, naming the
// file.
absl::StatusOr<TradeReport> WriteTradeReport(const std::string& study_dir);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_STUDY_TRADE_REPORT_STAGE_H_

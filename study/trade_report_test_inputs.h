// Small hand-made study artifacts for the trade report's tests. Every
// figure is distinct, so a test can tell which input a report number came
// from.
#ifndef RECEIPT_PARITY_STUDY_TRADE_REPORT_TEST_INPUTS_H_
#define RECEIPT_PARITY_STUDY_TRADE_REPORT_TEST_INPUTS_H_

#include <string>

#include "absl/status/status.h"
#include "study/trade_report_builder.h"
#include "drill/drill_report.pb.h"
#include "artifacts/run_summary.pb.h"

namespace receipt_parity {

// A run of `world_size` ranks: 4 updates (losses 1.5, 1.25, 1.0, 0.75 for
// one worker; two workers' differ by `loss_offset`), 8 examples each;
// examples_per_second 1000 * world_size + 0.5; sync_seconds_per_update
// 0.001 * (world_size - 1); sync_share 0.1 * (world_size - 1); rank r's
// peak RSS 100.25 + r + 10 * (world_size - 1) MiB; rank r's update seconds
// {0.008 + 0.001 r, 0.010 + 0.001 r}; epochs: 1 duplicate slot and 2
// masked slots per rank. Validation: classes "good" (support 6, precision
// 0.75, recall 0.5) and "blurry" (support 2, precision 0.25, recall 1).
RunArtifacts TestRun(int world_size, double loss_offset = 0);

// Passing parity (max_abs_diff 2.5e-8), simulated or not.
ParityReport TestParity(bool simulated);

// 5 ids on 2 ranks, 2 epochs: epoch 0 duplicates "r-0" once, epoch 1
// duplicates "r-3" once; masked_tail variant: 1 masked slot per epoch.
SamplerAudit TestAudit(const std::string& policy);

// A recovery.json: rank 1 killed mid_shard of generation 2, resumed from
// generation 1 (update 10), nothing lost; `pass` as given (with a failure
// line when false).
RecoveryReport TestRecovery(bool pass);

// 3 generations of 123456 bytes; save medians 0.03 s, sequential 0.02 s,
// ratio 1.5.
CheckpointCost TestCheckpointCost();

// The two-worker run over MPI: TestRun(2, 1e-6) from "two_worker_mpi",
// 2500.5 examples/s, sync share 0.05, the same final parameter hash as
// TestRun's, and a passing parity (TestParity(false), reducer
// mpi_allreduce).
MpiRunArtifacts TestMpiRun();

// The two-worker run in bf16: TestRun(2, 3e-3) from "two_worker_bf16",
// 1800.5 examples/s, rank r's peak RSS 150.25 + r MiB, macro F1 lowered by
// the "blurry" class's F1 0.3; a passing parity (TestParity(false)) with a
// derived tolerance (errors 2e-4 and 3e-5, factor 4, largest share 0.27,
// gate 0.5, one tensor listed).
PrecisionRunArtifacts TestBf16Run();

// The two-worker run with every recipe: TestRun(2, 2e-3) from
// "two_worker_all_recipes", 900.5 examples/s, its config using
// accumulation 2, a warmup-cosine schedule, global clipping 1, bf16, keyed
// dropout 0.1, synchronized batch norm, local batch sizes 20+12 and
// masked_tail; a passing parity (TestParity(false)) with a whole-run
// verdict of two checked updates (0 passing at 40 % of its budget, 9 not
// judged).
AllRecipesRunArtifacts TestAllRecipesRun();

// The world-size-change stage: the uninterrupted run's summary (4 updates,
// hash "hash"); continued on 3 workers from update 2 with the same hash
// and losses, and on 1 with another hash and loss 1e-3 off at update 3
// (both "world_size_independent", nothing changed); the duplicate_pad twin
// on 3 with 2 of its 3 remaining updates changed.
WorldSizeChangeArtifacts TestWorldSizeChange();

// Two planted runs of "per-rank clipping": in fp32 caught by the first
// update and the every-update reduction check (first failure "gradient of
// fc.weight differs by up to 0.5"), in bf16 passing (missed).
std::vector<PlantedRunArtifacts> TestPlantedMistakes();

// one_worker = TestRun(1), two_workers = TestRun(2, 1e-6), both parities
// passing, both audits; no recovery, no checkpoint cost, no run over MPI, no bf16 run.
TradeReportInputs TestInputs();

// Writes TestInputs()'s artifacts into `study_dir` where the study's stages
// put them (study/study_layout.h; trade_report_stage.h lists them),
// creating the folders. Errors: WriteJsonFile's.
absl::Status WriteTestArtifacts(const std::string& study_dir);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_STUDY_TRADE_REPORT_TEST_INPUTS_H_

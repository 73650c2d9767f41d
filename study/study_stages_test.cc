#include "study/study_stages.h"

#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/atomic_file.h"
#include "study/stage_runner.h"
#include "study/study_layout.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

std::string FreshDir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / "study_stages_test" / name;
  fs::remove_all(dir);
  return dir.string();
}

// An executable shell script standing in for one of the real programs.
std::string FakeProgram(const std::string& dir, const std::string& name,
                        const std::string& body) {
  fs::create_directories(dir);
  const std::string path = dir + "/" + name;
  EXPECT_TRUE(WriteFileAtomically(
                  path,
                  "#!/bin/sh\n"
                  "for a in \"$@\"; do case \"$a\" in\n"
                  "  --out=*) out=\"${a#--out=}\";;\n"
                  "  --config=*) config=\"${a#--config=}\";;\n"
                  "  --policy=*) policy=\"${a#--policy=}\";;\n"
                  "esac; done\n" +
                      body)
                  .ok());
  fs::permissions(path, fs::perms::owner_all);
  return path;
}

TEST(PrepareStudyFolderTest, CreatesAMissingFolder) {
  const std::string out = FreshDir("new") + "/deeper";
  ASSERT_TRUE(PrepareStudyFolder(out).ok());
  EXPECT_TRUE(fs::exists(out + "/" + study_layout::kMarker));
}

TEST(PrepareStudyFolderTest, EmptiesAFolderAPreviousStudyMade) {
  const std::string out = FreshDir("previous");
  ASSERT_TRUE(PrepareStudyFolder(out).ok());
  // What a previous study left: top-level artifacts, a stage folder with a
  // run inside, a log.
  fs::create_directories(out + "/two_worker/reference");
  fs::create_directories(out + "/logs");
  ASSERT_TRUE(WriteFileAtomically(out + "/parity.json", "{}").ok());
  ASSERT_TRUE(WriteFileAtomically(out + "/validation.json", "{}").ok());
  ASSERT_TRUE(WriteFileAtomically(out + "/two_worker/reference/first_step.json", "{}").ok());
  ASSERT_TRUE(WriteFileAtomically(out + "/logs/two_worker.log", "old").ok());
  ASSERT_TRUE(PrepareStudyFolder(out).ok());
  EXPECT_FALSE(fs::exists(out + "/parity.json"));
  EXPECT_FALSE(fs::exists(out + "/validation.json"));
  EXPECT_FALSE(fs::exists(out + "/two_worker"));
  EXPECT_FALSE(fs::exists(out + "/logs"));
  EXPECT_TRUE(fs::exists(out + "/" + study_layout::kMarker));
  // Emptied, not removed: the marker is all that is left.
  EXPECT_EQ(std::distance(fs::directory_iterator(out), fs::directory_iterator()), 1);
}

TEST(PrepareStudyFolderTest, RefusesAFolderItDidNotMake) {
  const std::string out = FreshDir("foreign");
  fs::create_directories(out);
  ASSERT_TRUE(WriteFileAtomically(out + "/notes.txt", "mine").ok());
  absl::Status status = PrepareStudyFolder(out);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr(out));
  EXPECT_TRUE(fs::exists(out + "/notes.txt"));
}

TEST(StudyStagesTest, RunsTheDesignedStagesInOrder) {
  std::vector<std::string> names;
  for (const Stage& stage : StudyStages({}, {})) names.push_back(stage.name);
  EXPECT_THAT(names, ::testing::ElementsAre("one_worker", "parity_simulated",
                                            "sampler_audit", "two_worker",
                                            "two_worker_mpi", "two_worker_bf16",
                                            "two_worker_all_recipes", "world_size_change",
                                            "planted_mistakes", "fault_drill",
                                            "trade_report"));
}

TEST(StudyStagesTest, AMissingProgramStopsTheStudyAtTheFirstStage) {
  const std::string out = FreshDir("missing_programs");
  ASSERT_TRUE(PrepareStudyFolder(out).ok());
  StudyPrograms programs;
  programs.train = "/nonexistent/trainer/train";
  programs.parity = "/nonexistent/trainer/parity";
  programs.fault_drill = "/nonexistent/trainer/fault_drill";
  programs.sampler_audit = "/nonexistent/samplers/audit";
  programs.configs_dir = "/nonexistent/configs";
  std::ostringstream progress;
  absl::Status status =
      RunStages(StudyStages(programs, {out, 0}), &progress);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("stage 'one_worker' failed"));
  EXPECT_THAT(status.message(), HasSubstr("/nonexistent/trainer/train"));
  EXPECT_THAT(progress.str(), Not(HasSubstr("[2/11]")));
}

// Fake programs that write stand-in artifacts where the real ones do:
// the one-worker run, the parity check, the audits and the fault drill
// succeed; the two-worker run exits `two_worker_exit` (3: parity failed,
// like the trainer), the one over MPI `mpi_exit` (1: mpirun failed), the
// one in bf16 `bf16_exit`, the one with every recipe `all_recipes_exit`.
StudyPrograms FakePrograms(const std::string& bin, int two_worker_exit,
                           int mpi_exit = 0, int bf16_exit = 0, int all_recipes_exit = 0) {
  StudyPrograms programs;
  programs.train = FakeProgram(bin, "train", absl::StrCat(R"(
case "$config" in
  */one_worker.pbtxt)
    mkdir -p "$out/reference"
    for f in run_manifest first_step run_summary validation; do
      echo '{}' > "$out/reference/$f.json"
    done;;
  */two_worker_mpi.pbtxt)
    mkdir -p "$out"
    for f in first_step parity run_summary validation; do echo '{}' > "$out/$f.json"; done
    echo "mpirun exited with status 1" >&2
    exit )", mpi_exit, R"(;;
  */two_worker_bf16.pbtxt)
    test -e "$out/reference" && echo "reference handed over"
    mkdir -p "$out"
    for f in first_step parity run_summary validation; do echo '{}' > "$out/$f.json"; done
    echo "bf16 run ends" >&2
    exit )", bf16_exit, R"(;;
  */two_worker_all_recipes.pbtxt)
    test -e "$out/reference" && echo "reference handed over"
    mkdir -p "$out"
    for f in first_step parity run_summary validation run_state; do
      echo '{}' > "$out/$f.json"
    done
    echo "all-recipes run ends" >&2
    exit )", all_recipes_exit, R"(;;
  /planted/*.pbtxt)
    mkdir -p "$out"
    echo '{}' > "$out/parity.json"
    exit 3;;
  */world_size_change*.pbtxt)
    mkdir -p "$out"
    for f in first_step parity run_summary validation resume world_size_change; do
      echo '{}' > "$out/$f.json"
    done
    for a in "$@"; do test "$a" = "--kill_signal=SIGTERM" && exit 4; done
    exit 0;;
  *)
    test -f "$out/reference/first_step.json" && echo "reference reused"
    for f in first_step parity run_summary validation; do echo '{}' > "$out/$f.json"; done
    echo "two-worker run ends"  >&2
    exit )", two_worker_exit, ";;\nesac\n"));
  programs.parity = FakeProgram(bin, "parity", R"(
mkdir -p "$out" && echo '{"simulated": true}' > "$out/parity.json"
)");
  programs.sampler_audit = FakeProgram(bin, "audit", R"(
echo "{\"policy\": \"$policy\"}" > "$out"
)");
  programs.fault_drill = FakeProgram(bin, "fault_drill", R"(
mkdir -p "$out/interrupted/checkpoints/gen-000001"
echo '{}' > "$out/interrupted/checkpoints/gen-000001/MANIFEST"
echo 'killed rank 1' > "$out/failure_trace.log"
echo '{"pass": true}' > "$out/recovery.json"
)");
  programs.configs_dir = "/configs";
  programs.planted_dir = "/planted";
  return programs;
}

TEST(StudyStagesTest, ATwoWorkerParityFailureStopsTheStudyNamingTheStage) {
  const std::string out = FreshDir("fake_study");
  const StudyPrograms programs = FakePrograms(FreshDir("fake_bin"), 3);
  ASSERT_TRUE(PrepareStudyFolder(out).ok());

  std::ostringstream progress;
  absl::Status status = RunStages(StudyStages(programs, {out, 7}), &progress);
  EXPECT_EQ(status.code(), absl::StatusCode::kAborted);
  EXPECT_THAT(status.message(), HasSubstr("stage 'two_worker' failed"));
  EXPECT_THAT(status.message(),
              HasSubstr("exited with status 3 (parity with the one-worker reference "
                        "failed (the first update or the whole run"));
  EXPECT_THAT(status.message(), HasSubstr("two-worker run ends"));
  EXPECT_THAT(status.message(), HasSubstr("see " + out + "/two_worker/parity.json"));
  EXPECT_THAT(progress.str(), HasSubstr("[3/11] sampler_audit: done"));
  EXPECT_THAT(progress.str(), HasSubstr("[4/11] two_worker: FAILED"));
  EXPECT_THAT(progress.str(), Not(HasSubstr("fault_drill")));
  EXPECT_FALSE(fs::exists(out + "/fault_drill"));

  // What the stages before it left at the top level.
  EXPECT_TRUE(fs::exists(out + "/reference/first_step.json"));
  EXPECT_TRUE(fs::exists(out + "/reference/run_manifest.json"));
  EXPECT_TRUE(fs::exists(out + "/parity_simulated/parity.json"));
  EXPECT_EQ(*ReadFileToString(out + "/sampler_audit.json"),
            "{\"policy\": \"duplicate_pad\"}\n");
  EXPECT_EQ(*ReadFileToString(out + "/sampler_audit_masked_tail.json"),
            "{\"policy\": \"masked_tail\"}\n");
  // The two-worker run was handed the study's reference, and the failed
  // run's artifacts were not copied up.
  EXPECT_THAT(*ReadFileToString(out + "/logs/two_worker.log"),
              HasSubstr("reference reused"));
  EXPECT_FALSE(fs::exists(out + "/parity.json"));
  EXPECT_FALSE(fs::exists(out + "/validation.json"));
  // The audit got the seed and the 47 ids on 3 ranks.
  EXPECT_THAT(*ReadFileToString(out + "/logs/sampler_audit.log"),
              HasSubstr("--num_ids=47 --world_size=3 --seed=7 --epochs=2 "
                        "--policy=masked_tail"));
}

TEST(StudyStagesTest, EveryStageLeavesItsArtifactsAtTheTop) {
  const std::string out = FreshDir("fake_study_through");
  const StudyPrograms programs = FakePrograms(FreshDir("fake_bin_through"), 0);
  ASSERT_TRUE(PrepareStudyFolder(out).ok());
  std::ostringstream progress;
  absl::Status status = RunStages(StudyStages(programs, {out, 0}), &progress);
  // The stand-in artifacts carry no figures: the report refuses them,
  // naming the file.
  EXPECT_THAT(status.message(), HasSubstr("stage 'trade_report' failed"));
  EXPECT_THAT(status.message(),
              HasSubstr("one_worker/reference/run_summary.json: world_size is 0"));
  EXPECT_THAT(progress.str(), HasSubstr("[10/11] fault_drill: done"));
  for (const char* artifact :
       {"reference/run_manifest.json", "reference/first_step.json",
        "first_step.json", "parity.json", "sampler_audit.json",
        "validation.json", "checkpoints/gen-000001/MANIFEST",
        "failure_trace.log", "recovery.json",
        "planted_mistakes/rank_local_bias/sync_batch_norm/parity.json"}) {
    EXPECT_TRUE(fs::is_regular_file(out + "/" + artifact)) << artifact;
  }
  // Each planted run got its config from the planted folder.
  EXPECT_THAT(*ReadFileToString(out + "/logs/planted_mistakes.log"),
              HasSubstr("--config=/planted/drifting_rate.pbtxt"));
}

TEST(StudyStagesTest, AFaultDrillWithoutCheckpointsFailsNamingTheFolder) {
  const std::string out = FreshDir("fake_study_no_checkpoints");
  StudyPrograms programs = FakePrograms(FreshDir("fake_bin_no_ckpt"), 0);
  programs.fault_drill = FakeProgram(FreshDir("fake_bin_no_ckpt_drill"),
                                     "fault_drill", R"(
mkdir -p "$out" && echo trace > "$out/failure_trace.log"
echo '{"pass": true}' > "$out/recovery.json"
)");
  ASSERT_TRUE(PrepareStudyFolder(out).ok());
  std::ostringstream progress;
  absl::Status status = RunStages(StudyStages(programs, {out, 0}), &progress);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("stage 'fault_drill' failed"));
  EXPECT_THAT(status.message(),
              HasSubstr(out + "/fault_drill/interrupted/checkpoints"));
}

// Sets MPIRUN for the life of the object, then restores it.
class ScopedMpirun {
 public:
  explicit ScopedMpirun(const std::string& program) {
    if (const char* old = std::getenv("MPIRUN")) old_ = old;
    setenv("MPIRUN", program.c_str(), 1);
  }
  ~ScopedMpirun() {
    if (old_.has_value()) {
      setenv("MPIRUN", old_->c_str(), 1);
    } else {
      unsetenv("MPIRUN");
    }
  }

 private:
  std::optional<std::string> old_;
};

// Stage 5 of 10, before the bf16 run and the fault drill.
TEST(StudyStagesTest, TheMpiStageFollowsTheTwoWorkerRun) {
  std::vector<Stage> stages = StudyStages({}, {});
  ASSERT_EQ(stages.size(), 11u);
  EXPECT_EQ(stages[4].name, "two_worker_mpi");
  EXPECT_EQ(stages[3].name, "two_worker");
}

TEST(StudyStagesTest, WithoutMpirunTheMpiStageSucceedsWithoutRunning) {
  const ScopedMpirun missing("/nonexistent/bin/mpirun");
  const std::string out = FreshDir("fake_study_no_mpirun");
  const StudyPrograms programs =
      FakePrograms(FreshDir("fake_bin_no_mpirun"), 0, /*mpi_exit=*/1);
  ASSERT_TRUE(PrepareStudyFolder(out).ok());
  std::ostringstream progress;
  RunStages(StudyStages(programs, {out, 0}), &progress).IgnoreError();
  EXPECT_THAT(progress.str(),
              HasSubstr("[5/11] two_worker_mpi: the two-worker run over OpenMPI "
                        "(configs/two_worker_mpi.pbtxt): not run, OpenMPI's "
                        "mpirun is not installed"));
  EXPECT_THAT(progress.str(), HasSubstr("[5/11] two_worker_mpi: done"));
  EXPECT_THAT(progress.str(), HasSubstr("[10/11] fault_drill: done"));
  EXPECT_FALSE(fs::exists(out + "/two_worker_mpi"));
  EXPECT_THAT(*ReadFileToString(out + "/logs/two_worker_mpi.log"),
              HasSubstr("not run: OpenMPI's mpirun is not installed "
                        "(/nonexistent/bin/mpirun"));
}

TEST(StudyStagesTest, WithMpirunTheMpiStageTrainsItsConfigIntoItsFolder) {
  const ScopedMpirun installed("/bin/true");
  const std::string out = FreshDir("fake_study_mpirun");
  const StudyPrograms programs = FakePrograms(FreshDir("fake_bin_mpirun"), 0);
  ASSERT_TRUE(PrepareStudyFolder(out).ok());
  std::ostringstream progress;
  RunStages(StudyStages(programs, {out, 0}), &progress).IgnoreError();
  EXPECT_THAT(progress.str(), HasSubstr("[5/11] two_worker_mpi: done"));
  EXPECT_THAT(progress.str(), Not(HasSubstr("not run")));
  EXPECT_THAT(*ReadFileToString(out + "/logs/two_worker_mpi.log"),
              HasSubstr("--config=/configs/two_worker_mpi.pbtxt --out=" + out +
                        "/two_worker_mpi"));
  for (const char* artifact : {"run_summary.json", "validation.json", "parity.json"}) {
    EXPECT_TRUE(fs::is_regular_file(out + "/two_worker_mpi/" + artifact)) << artifact;
  }
  // Nothing of it is copied to the top: those are the Gloo run's.
  EXPECT_FALSE(fs::exists(out + "/two_worker_mpi/reference/first_step.json"));
}

TEST(StudyStagesTest, AnInstalledMpirunThatFailsFailsTheStudy) {
  const ScopedMpirun installed("/bin/true");
  const std::string out = FreshDir("fake_study_mpirun_fails");
  const StudyPrograms programs =
      FakePrograms(FreshDir("fake_bin_mpirun_fails"), 0, /*mpi_exit=*/1);
  ASSERT_TRUE(PrepareStudyFolder(out).ok());
  std::ostringstream progress;
  absl::Status status = RunStages(StudyStages(programs, {out, 0}), &progress);
  EXPECT_EQ(status.code(), absl::StatusCode::kAborted);
  EXPECT_THAT(status.message(), HasSubstr("stage 'two_worker_mpi' failed"));
  EXPECT_THAT(status.message(),
              HasSubstr("exited with status 1 (a run failed: a rank died or a "
                        "peer timed out)"));
  EXPECT_THAT(status.message(), HasSubstr("mpirun exited with status"));
  EXPECT_THAT(progress.str(), HasSubstr("[5/11] two_worker_mpi: FAILED"));
  EXPECT_THAT(progress.str(), Not(HasSubstr("fault_drill")));
}

TEST(StudyStagesTest, TheBf16StageTrainsItsConfigIntoItsFolderWithItsOwnReference) {
  const std::string out = FreshDir("fake_study_bf16");
  const StudyPrograms programs = FakePrograms(FreshDir("fake_bin_bf16"), 0);
  ASSERT_TRUE(PrepareStudyFolder(out).ok());
  std::ostringstream progress;
  RunStages(StudyStages(programs, {out, 0}), &progress).IgnoreError();
  EXPECT_THAT(progress.str(),
              HasSubstr("[6/11] two_worker_bf16: the two-worker run with bf16 "
                        "forward passes (configs/two_worker_bf16.pbtxt)"));
  EXPECT_THAT(progress.str(), HasSubstr("[6/11] two_worker_bf16: done"));
  const std::string log = *ReadFileToString(out + "/logs/two_worker_bf16.log");
  EXPECT_THAT(log, HasSubstr("--config=/configs/two_worker_bf16.pbtxt --out=" +
                             out + "/two_worker_bf16"));
  // The study's fp32 reference is another config's: not handed over.
  EXPECT_THAT(log, Not(HasSubstr("reference handed over")));
  for (const char* artifact : {"run_summary.json", "validation.json", "parity.json"}) {
    EXPECT_TRUE(fs::is_regular_file(out + "/two_worker_bf16/" + artifact)) << artifact;
  }
}

TEST(StudyStagesTest, ABf16ParityFailureFailsTheStudyPointingAtItsParity) {
  const std::string out = FreshDir("fake_study_bf16_fails");
  const StudyPrograms programs =
      FakePrograms(FreshDir("fake_bin_bf16_fails"), 0, 0, /*bf16_exit=*/3);
  ASSERT_TRUE(PrepareStudyFolder(out).ok());
  std::ostringstream progress;
  absl::Status status = RunStages(StudyStages(programs, {out, 0}), &progress);
  EXPECT_EQ(status.code(), absl::StatusCode::kAborted);
  EXPECT_THAT(status.message(), HasSubstr("stage 'two_worker_bf16' failed"));
  EXPECT_THAT(status.message(), HasSubstr("exited with status 3 (parity with the"));
  EXPECT_THAT(status.message(), HasSubstr("bf16 run ends"));
  EXPECT_THAT(status.message(),
              HasSubstr("see " + out + "/two_worker_bf16/parity.json"));
  EXPECT_THAT(progress.str(), Not(HasSubstr("fault_drill")));
}

TEST(StudyStagesTest, TheAllRecipesStageTrainsItsConfigWithItsOwnReference) {
  const std::string out = FreshDir("fake_study_all");
  const StudyPrograms programs = FakePrograms(FreshDir("fake_bin_all"), 0);
  ASSERT_TRUE(PrepareStudyFolder(out).ok());
  std::ostringstream progress;
  RunStages(StudyStages(programs, {out, 0}), &progress).IgnoreError();
  EXPECT_THAT(progress.str(), HasSubstr("[7/11] two_worker_all_recipes: the two-worker run "
                                        "with every recipe and layer at once"));
  EXPECT_THAT(progress.str(), HasSubstr("[7/11] two_worker_all_recipes: done"));
  const std::string log = *ReadFileToString(out + "/logs/two_worker_all_recipes.log");
  EXPECT_THAT(log, HasSubstr("--config=/configs/two_worker_all_recipes.pbtxt --out=" + out +
                             "/two_worker_all_recipes"));
  EXPECT_THAT(log, Not(HasSubstr("reference handed over")));
}

TEST(StudyStagesTest, AnAllRecipesParityFailureFailsTheStudyPointingAtItsParity) {
  const std::string out = FreshDir("fake_study_all_fails");
  const StudyPrograms programs =
      FakePrograms(FreshDir("fake_bin_all_fails"), 0, 0, 0, /*all_recipes_exit=*/3);
  ASSERT_TRUE(PrepareStudyFolder(out).ok());
  std::ostringstream progress;
  absl::Status status = RunStages(StudyStages(programs, {out, 0}), &progress);
  EXPECT_THAT(status.message(), HasSubstr("stage 'two_worker_all_recipes' failed"));
  EXPECT_THAT(status.message(), HasSubstr("see " + out + "/two_worker_all_recipes/parity.json"));
  EXPECT_THAT(progress.str(), Not(HasSubstr("fault_drill")));
}

// The configs the study checks before its first stage are those its stages
// pass.
TEST(StudyStagesTest, StudyConfigsAreTheConfigsTheStagesPass) {
  StudyPrograms programs;
  programs.configs_dir = "/configs";
  programs.planted_dir = "/planted";
  EXPECT_EQ(StudyConfigs(programs),
            (std::vector<std::string>{"/configs/one_worker.pbtxt",
                                      "/configs/two_worker_masked_tail.pbtxt",
                                      "/configs/two_worker_mpi.pbtxt",
                                      "/configs/two_worker_bf16.pbtxt",
                                      "/configs/two_worker_all_recipes.pbtxt",
                                      "/configs/world_size_change.pbtxt",
                                      "/configs/world_size_change_on_three.pbtxt",
                                      "/configs/world_size_change_on_one.pbtxt",
                                      "/configs/world_size_change_duplicate_pad.pbtxt",
                                      "/configs/world_size_change_duplicate_pad_on_three.pbtxt",
                                      "/planted/ddp_tail_averaging.pbtxt",
                                      "/planted/per_rank_clipping.pbtxt",
                                      "/planted/functional_dropout.pbtxt",
                                      "/planted/drifting_rate.pbtxt",
                                      "/planted/rank_local_bias.pbtxt"}));
}

// The world-size-change stage needs its run preempted (exit 4): a run that
// trains through instead fails the stage, saying so.
TEST(StudyStagesTest, APreemptionThatDoesNotPreemptFailsTheWorldSizeStage) {
  const std::string out = FreshDir("fake_study_no_preemption");
  StudyPrograms programs = FakePrograms(FreshDir("fake_bin_no_preemption"), 0);
  const std::string real_train = programs.train;
  programs.train = FakeProgram(FreshDir("fake_bin_no_preemption_train"), "train",
                               absl::StrCat(R"(
case "$config" in
  */world_size_change*.pbtxt)
    mkdir -p "$out"; echo '{}' > "$out/run_summary.json"; exit 0;;
esac
exec )", real_train, R"( "$@"
)"));
  ASSERT_TRUE(PrepareStudyFolder(out).ok());
  std::ostringstream progress;
  absl::Status status = RunStages(StudyStages(programs, {out, 0}), &progress);
  EXPECT_EQ(status.code(), absl::StatusCode::kAborted);
  EXPECT_THAT(status.message(), HasSubstr("stage 'world_size_change' failed"));
  EXPECT_THAT(status.message(), HasSubstr("exited with status 0, not with status 4"));
  EXPECT_THAT(progress.str(), HasSubstr("[8/11] world_size_change: FAILED"));
}

}  // namespace
}  // namespace receipt_parity

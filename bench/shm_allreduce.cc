// mpirun -np 2 ... shm_allreduce --elements=N --repeats=30 --out=F
//
// The all-reduce half of issue 49's physical floor: MPI_Allreduce (SUM, in
// place) of --elements float32 values between the ranks mpirun started,
// over OpenMPI's shared-memory transport as the trainer's mpirun uses it
// (runtime/mpirun_launcher.h: pml ob1, btl self,vader). Nothing else runs:
// no model, no store, no c10d. Each timed call starts after a barrier; the
// result is the median of --repeats calls after --warmup of them, the
// slower rank's (the largest median over the ranks).
//
// Rank 0 writes a ShmAllreduceResult (bench/scaling_report.proto) as JSON
// to --out.
//
// Exit codes: 0 done; 2 bad flags; 1 MPI failed.
#include <mpi.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "bench/scaling_report.pb.h"
#include "io/json_file.h"

ABSL_FLAG(int64_t, elements, 0, "float32 values all-reduced (the gradient's count).");
ABSL_FLAG(int32_t, warmup, 5, "Untimed calls first.");
ABSL_FLAG(int32_t, repeats, 30, "Timed calls.");
ABSL_FLAG(std::string, out, "", "Where rank 0 writes the JSON result.");

namespace receipt_parity {
namespace {

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// The median seconds of this rank's timed calls.
double TimeAllreduce(std::vector<float>& values, int warmup, int repeats) {
  std::vector<double> seconds;
  for (int i = 0; i < warmup + repeats; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_FLOAT,
                  MPI_SUM, MPI_COMM_WORLD);
    if (i >= warmup) seconds.push_back(MPI_Wtime() - start);
  }
  return Median(seconds);
}

int Main() {
  const int64_t elements = absl::GetFlag(FLAGS_elements);
  const int repeats = absl::GetFlag(FLAGS_repeats);
  const std::string out = absl::GetFlag(FLAGS_out);
  if (elements < 1 || elements > (int64_t{1} << 30) || repeats < 1 ||
      absl::GetFlag(FLAGS_warmup) < 0 || out.empty()) {
    std::cerr << "error: --elements in [1, 2^30], --repeats >= 1, --warmup >= 0 and --out "
                 "are required"
              << std::endl;
    return 2;
  }
  if (MPI_Init(nullptr, nullptr) != MPI_SUCCESS) return 1;
  int rank = 0;
  int world = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  // Small values: sums of them stay finite however many calls add them.
  std::vector<float> values(static_cast<size_t>(elements), 1e-30f);
  double median = TimeAllreduce(values, absl::GetFlag(FLAGS_warmup), repeats);
  double slowest = 0;
  MPI_Reduce(&median, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  int code = 0;
  if (rank == 0) {
    ShmAllreduceResult result;
    result.set_elements(elements);
    result.set_world_size(world);
    result.set_repeats(repeats);
    result.set_median_seconds(slowest);
    if (absl::Status s = WriteJsonFile(out, result); !s.ok()) {
      std::cerr << "error: " << s.message() << std::endl;
      code = 1;
    }
  }
  MPI_Finalize();
  return code;
}

}  // namespace
}  // namespace receipt_parity

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Times MPI_Allreduce of --elements float32 values under mpirun (issue 49's floor).");
  absl::ParseCommandLine(argc, argv);
  return receipt_parity::Main();
}

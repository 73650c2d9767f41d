// Ranks of a conformance suite as real processes: copies of the suite's own
// binary, each with the torchrun environment (RANK, WORLD_SIZE, LOCAL_RANK,
// MASTER_ADDR=127.0.0.1, MASTER_PORT a free port), which connect one real
// c10d process group (runtime/process_group.h) and write what they got to
// files the suite then judges (rank_result.h).
#ifndef RECEIPT_PARITY_CONFORMANCE_RANK_PROCESSES_H_
#define RECEIPT_PARITY_CONFORMANCE_RANK_PROCESSES_H_

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace receipt_parity {

// How a suite starts one of its scenarios' ranks: its own binary's command
// line with the scenario and the folder the ranks write their results to
// (conformance_main.cc: --rank_scenario, --result_folder).
using RankCommand = std::function<std::vector<std::string>(const std::string& scenario,
                                                           const std::string& folder)>;

struct RankExit {
  // As from waitpid.
  int wait_status = 0;
  // Still running at the deadline (or after rank 0 ended, with
  // `end_with_rank_zero`), and killed.
  bool killed = false;
  double seconds = 0;
};

struct RankLaunch {
  // The program and its arguments (argv[0] is the program's path).
  std::vector<std::string> argv;
  int world_size = 2;
  // Every rank still running then is killed (SIGKILL) and reported killed.
  std::chrono::seconds deadline{60};
  // Once rank 0 has exited, the others are killed: for a scenario in which
  // a peer stops for ever.
  bool end_with_rank_zero = false;
};

// Starts the ranks and waits for them. Every rank also dies with this
// process (PR_SET_PDEATHSIG). Errors: Internal when a rank cannot be
// started or no port is free.
absl::StatusOr<std::vector<RankExit>> RunRankProcesses(const RankLaunch& launch);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CONFORMANCE_RANK_PROCESSES_H_

#include "study/stage_runner.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace receipt_parity {

absl::Status RunStages(const std::vector<Stage>& stages,
                       std::ostream* progress) {
  const size_t total = stages.size();
  for (size_t i = 0; i < total; ++i) {
    const Stage& stage = stages[i];
    const std::string prefix =
        absl::StrCat("[", i + 1, "/", total, "] ", stage.name, ": ");
    *progress << prefix << stage.description << std::endl;
    const auto start = std::chrono::steady_clock::now();
    absl::Status status =
        stage.run ? stage.run()
                  : absl::InternalError("the stage has nothing to run");
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (!status.ok()) {
      *progress << prefix << absl::StrFormat("FAILED after %.1f s", seconds)
                << std::endl;
      return absl::Status(status.code(),
                          absl::StrCat("stage '", stage.name,
                                       "' failed: ", status.message()));
    }
    *progress << prefix << absl::StrFormat("done in %.1f s", seconds)
              << std::endl;
  }
  return absl::OkStatus();
}

}  // namespace receipt_parity

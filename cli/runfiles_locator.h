// The one way a binary finds its sibling programs and data: through its
// runfiles (the `data` of its target), whether it was started by `bazel
// run`, from bazel-bin/, by a test, or by another binary from that one's
// runfiles. The user's own paths on the command line are another matter:
// ChangeToCallersDirectory (cli/command_line.h) makes them work as given.
#ifndef RECEIPT_PARITY_CLI_RUNFILES_LOCATOR_H_
#define RECEIPT_PARITY_CLI_RUNFILES_LOCATOR_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace bazel::tools::cpp::runfiles {
class Runfiles;
}  // namespace bazel::tools::cpp::runfiles

namespace receipt_parity {

class RunfilesLocator {
 public:
  // `argv0` is main's argv[0], relative to the directory the program
  // started in. Exports RUNFILES_DIR / RUNFILES_MANIFEST_FILE (absolute) to
  // this process's environment, so that the programs it starts, which are
  // in these runfiles, find the same runfiles (a binary run from another's
  // runfiles has no <argv0>.runfiles of its own). Errors: NotFound when the
  // binary has neither a runfiles folder nor a runfiles manifest (e.g. it
  // was copied away from bazel-bin/).
  // REQUIRES: called before the working directory changes, and while no
  // other thread reads the environment.
  static absl::StatusOr<RunfilesLocator> Create(const char* argv0);

  // The absolute path of `path`, given relative to the workspace root (e.g.
  // "trainer/train", "configs/one_worker.pbtxt"). Does not check that it
  // exists: a caller that runs it reports a missing program by this path.
  std::string Locate(const std::string& path) const;

  // The absolute path of the folder `path` (relative to the workspace root)
  // in the runfiles tree, where the folder's runfiles lie side by side as in
  // the workspace: a config and a library it names relative to itself (a
  // source file and a built one) are found together there, never through
  // the manifest, which maps each file to where it was made. Errors:
  // NotFound naming the folder when there is no runfiles tree (a binary
  // built with --nobuild_runfile_links) or no such folder in it.
  absl::StatusOr<std::string> LocateFolder(const std::string& path) const;

  // The same for a file of an external repository, `path` starting with the
  // repository's name (e.g. "libtorch/python" for @libtorch//:python).
  std::string LocateExternal(const std::string& path) const;

 private:
  explicit RunfilesLocator(
      std::shared_ptr<const bazel::tools::cpp::runfiles::Runfiles> runfiles)
      : runfiles_(std::move(runfiles)) {}

  std::shared_ptr<const bazel::tools::cpp::runfiles::Runfiles> runfiles_;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CLI_RUNFILES_LOCATOR_H_

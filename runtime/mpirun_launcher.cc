#include "runtime/mpirun_launcher.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "logging/glog.h"
#include "runtime/preemption.h"
#include "runtime/wait_status.h"

namespace receipt_parity {
namespace {

// Longer TMPDIRs (Bazel's test folders) overflow the Unix socket paths in
// OpenMPI's session folder.
constexpr size_t kLongestTmpdir = 60;

// In the child, before exec: "VALUE:<launcher pid>" becomes
// "VALUE:<mpirun's pid>" (this process becomes mpirun).
void NameMpirunAsParent(const std::vector<std::string>& variables) {
  for (const std::string& name : variables) {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) continue;
    std::string text = value;
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos) continue;
    text = absl::StrCat(text.substr(0, colon + 1), getpid());
    setenv(name.c_str(), text.c_str(), 1);
  }
}

pid_t StartMpirun(const std::vector<std::string>& command,
                  const std::vector<std::string>& parent_pid_variables) {
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid != 0) return pid;
  // Child: mpirun ends its ranks when it gets SIGTERM, so it gets SIGTERM
  // when the launcher dies.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(127);
  // mpirun handles SIGTERM itself (it ends its ranks): not blocked for it.
  UnblockPreemptionSignals();
  NameMpirunAsParent(parent_pid_variables);
  std::vector<std::string> storage = command;
  std::vector<char*> argv;
  for (std::string& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  _exit(127);
}

}  // namespace

std::string MpirunProgram() {
  const char* named = std::getenv("MPIRUN");
  return named != nullptr && *named != '\0' ? named : "mpirun";
}

std::string MpirunPath() {
  const std::string program = MpirunProgram();
  if (program.find('/') != std::string::npos) {
    return access(program.c_str(), X_OK) == 0 ? program : "";
  }
  const char* path = std::getenv("PATH");
  for (const absl::string_view folder : absl::StrSplit(path == nullptr ? "" : path, ':')) {
    if (folder.empty()) continue;
    std::string candidate = absl::StrCat(folder, "/", program);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

bool MpirunInstalled() { return !MpirunPath().empty(); }

std::vector<std::string> MpirunCommandLine(const LaunchOptions& options,
                                           const std::string& program) {
  std::vector<std::string> command = {
      MpirunProgram(), "-np", std::to_string(options.world_size),
      "--oversubscribe", "--mca", "pml", "ob1", "--mca", "btl", "self,vader",
      "--mca", "mpi_yield_when_idle", "1"};
  if (getuid() == 0) command.push_back("--allow-run-as-root");
  if (const char* tmpdir = std::getenv("TMPDIR");
      tmpdir != nullptr && std::strlen(tmpdir) > kLongestTmpdir) {
    command.insert(command.end(), {"--mca", "orte_tmpdir_base", "/tmp"});
  }
  command.insert(command.end(), {"-x", "MASTER_ADDR=" + options.master_addr, "-x",
                                 absl::StrCat("MASTER_PORT=", options.master_port)});
  command.push_back(program);
  command.insert(command.end(), options.args.begin(), options.args.end());
  return command;
}

absl::Status LaunchUnderMpirun(const LaunchOptions& options, LaunchResult* result) {
  result->wait_status.assign(1, 0);
  result->failed_rank = -1;
  std::error_code error;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", error).string();
  if (error) return absl::InternalError("cannot read /proc/self/exe: " + error.message());
  const std::vector<std::string> command = MpirunCommandLine(options, self);
  LOG(INFO) << "launcher: " << absl::StrJoin(command, " ");
  const pid_t pid = StartMpirun(command, options.parent_pid_variables);
  if (pid < 0) {
    return absl::InternalError(absl::StrCat("cannot start mpirun: ", std::strerror(errno)));
  }
  if (options.forward_preemption_signals) {
    // mpirun forwards SIGUSR1 to every rank and waits for them; a SIGTERM
    // it takes as an order to end the job (its ranks stop and save all the
    // same, but mpirun exits 1). Either signal reaches it as SIGUSR1.
    StartSignalForwarding([pid](int signal) {
      LOG(WARNING) << "launcher: " << strsignal(signal)
                   << " received: passed on to mpirun as SIGUSR1, which forwards it to the ranks";
      kill(pid, SIGUSR1);
    });
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      return absl::InternalError(absl::StrCat("waiting for mpirun: ", std::strerror(errno)));
    }
  }
  result->wait_status[0] = status;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return absl::OkStatus();
  if (WIFEXITED(status) && WEXITSTATUS(status) == kPreemptedExitCode) {
    return absl::AbortedError(
        "mpirun exited with status 4: the ranks were preempted (SIGTERM or SIGUSR1) and stopped "
        "at an update boundary; run the same command again to resume");
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    return absl::AbortedError(absl::StrCat(
        "mpirun exited with status 127: is OpenMPI's mpirun (", MpirunProgram(),
        ") installed and in PATH? (Debian: openmpi-bin)"));
  }
  const std::string how = absl::StrCat("mpirun ", DescribeWaitStatus(status),
                                       ": a rank failed and mpirun ended the job "
                                       "(its message above names the rank)");
  LOG(ERROR) << "launcher: " << how;
  return absl::AbortedError(how);
}

}  // namespace receipt_parity

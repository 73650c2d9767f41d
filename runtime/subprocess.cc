#include "runtime/subprocess.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/wait_status.h"

extern char** environ;

namespace receipt_parity {

bool ProcessExit::ok() const {
  return WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
}

int ProcessExit::exit_code() const {
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
}

std::string ProcessExit::Describe() const {
  return DescribeWaitStatus(wait_status);
}

absl::StatusOr<ProcessExit> RunProcess(const ProcessSpec& spec) {
  if (spec.argv.empty()) {
    return absl::InvalidArgumentError("RunProcess: empty argv");
  }
  const std::string& program = spec.argv[0];
  if (access(program.c_str(), X_OK) != 0 ||
      std::filesystem::is_directory(program)) {
    return absl::NotFoundError(
        absl::StrCat("no executable program at ", program));
  }
  std::error_code ignored;
  std::filesystem::create_directories(
      std::filesystem::path(spec.log_path).parent_path(), ignored);
  const int log_fd =
      open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
           0644);
  if (log_fd < 0) {
    return absl::InternalError(absl::StrCat("cannot open log ", spec.log_path,
                                            ": ", std::strerror(errno)));
  }
  const std::string header =
      absl::StrCat("$ ", absl::StrJoin(spec.argv, " "), "\n");
  if (write(log_fd, header.data(), header.size()) < 0) {
    // The header is a courtesy; the child's own output still goes there.
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, log_fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, log_fd, STDERR_FILENO);
  std::vector<char*> argv;
  for (const std::string& arg : spec.argv) {
    argv.push_back(const_cast<char*>(arg.c_str()));
  }
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawn_error = posix_spawn(&pid, program.c_str(), &actions,
                                      /*attrp=*/nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(log_fd);
  if (spawn_error != 0) {
    return absl::InternalError(absl::StrCat("cannot start ", program, ": ",
                                            std::strerror(spawn_error)));
  }
  int wait_status = 0;
  while (waitpid(pid, &wait_status, 0) < 0) {
    if (errno != EINTR) {
      return absl::InternalError(absl::StrCat("waiting for ", program, ": ",
                                              std::strerror(errno)));
    }
  }
  return ProcessExit{wait_status};
}

absl::Status RunProcessToSuccess(
    const ProcessSpec& spec,
    const std::vector<std::pair<int, std::string>>& exit_meanings) {
  absl::StatusOr<ProcessExit> exit = RunProcess(spec);
  if (!exit.ok()) return exit.status();
  if (exit->ok()) return absl::OkStatus();
  std::string meaning;
  for (const auto& [code, text] : exit_meanings) {
    if (code == exit->exit_code()) meaning = absl::StrCat(" (", text, ")");
  }
  return absl::AbortedError(absl::StrCat(
      "`", absl::StrJoin(spec.argv, " "), "` ", exit->Describe(), meaning,
      "; last lines of ", spec.log_path, ":\n", LastLines(spec.log_path, 15)));
}

std::string LastLines(const std::string& path, int max_lines) {
  std::ifstream in(path);
  std::deque<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
    if (static_cast<int>(lines.size()) > max_lines) lines.pop_front();
  }
  return absl::StrJoin(lines, "\n");
}

}  // namespace receipt_parity

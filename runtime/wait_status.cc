#include "runtime/wait_status.h"

#include <sys/wait.h>

#include <cstring>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"

namespace receipt_parity {

std::string DescribeWaitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) {
    return absl::StrCat("exited with status ", WEXITSTATUS(wait_status));
  }
  if (WIFSIGNALED(wait_status)) {
    return absl::StrCat("was killed by signal ", WTERMSIG(wait_status), " (",
                        strsignal(WTERMSIG(wait_status)), ")");
  }
  return absl::StrCat("ended with wait status ", wait_status);
}

bool ProcessIsStopped(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return false;
  // "PID (COMM) STATE ...": COMM may hold spaces and parentheses.
  const size_t close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size()) return false;
  const char state = text[close + 2];
  return state == 'T' || state == 't';
}

}  // namespace receipt_parity

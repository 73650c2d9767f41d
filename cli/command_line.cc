#include "cli/command_line.h"

#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <utility>

#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "logging/glog.h"

namespace receipt_parity {

void ChangeToCallersDirectory() {
  const char* cwd = std::getenv("BUILD_WORKING_DIRECTORY");
  if (cwd != nullptr && chdir(cwd) != 0) {
    PLOG(WARNING) << "cannot change to " << cwd;
  }
}

int ExitCodeFor(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kAlreadyExists:
      return kExitBadInput;
    default:
      return kExitRunFailed;
  }
}

int ReportFailure(const absl::Status& status) {
  std::cerr << "error: " << status.message() << std::endl;
  return ExitCodeFor(status);
}

absl::StatusOr<std::vector<std::string>> TakeRepeatedFlag(const std::string& name, int argc,
                                                          char** argv, std::vector<char*>* rest) {
  const std::string bare = "--" + name;
  const std::string with_value = bare + "=";
  std::vector<std::string> values;
  rest->clear();
  if (argc > 0) rest->push_back(argv[0]);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") {  // the rest is positional
      for (; i < argc; ++i) rest->push_back(argv[i]);
      break;
    }
    if (arg.rfind(with_value, 0) == 0) {
      values.push_back(arg.substr(with_value.size()));
    } else if (arg == bare) {
      if (i + 1 == argc) {
        return absl::InvalidArgumentError(absl::StrCat(bare, " needs a value"));
      }
      values.push_back(argv[++i]);
    } else {
      rest->push_back(argv[i]);
    }
  }
  return values;
}

absl::StatusOr<std::vector<std::string>> ParseCommandLineTaking(
    const std::string& name, int argc, char** argv, std::vector<char*>* positional) {
  std::vector<char*> rest;
  absl::StatusOr<std::vector<std::string>> values = TakeRepeatedFlag(name, argc, argv, &rest);
  if (!values.ok()) return values.status();
  const int rest_count = static_cast<int>(rest.size());
  rest.push_back(nullptr);
  std::vector<char*> parsed = absl::ParseCommandLine(rest_count, rest.data());
  if (positional != nullptr) *positional = std::move(parsed);
  return values;
}

}  // namespace receipt_parity

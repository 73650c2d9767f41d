#include "runtime/heap_trim.h"

#include <cstdlib>
#include <fstream>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace receipt_parity {

bool ReturnFreeHeapPages() {
#if defined(__GLIBC__)
  return malloc_trim(0) == 1;
#else
  return false;
#endif
}

int64_t ProcessStatusKib(const std::string& field) {
  std::ifstream status("/proc/self/status");
  const std::string prefix = field + ":";
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(prefix, 0) == 0) {
      return std::strtoll(line.c_str() + prefix.size(), nullptr, 10);  // "  1234 kB"
    }
  }
  return -1;
}

std::optional<int64_t> AvailableMemoryBytes() {
  std::ifstream meminfo("/proc/meminfo");
  const std::string prefix = "MemAvailable:";
  std::string line;
  while (std::getline(meminfo, line)) {
    if (line.rfind(prefix, 0) == 0) {
      char* end = nullptr;
      const int64_t kib = std::strtoll(line.c_str() + prefix.size(), &end, 10);  // " 1234 kB"
      if (end == line.c_str() + prefix.size()) return std::nullopt;
      return kib * 1024;
    }
  }
  return std::nullopt;
}

}  // namespace receipt_parity

#include "runtime/heap_trim.h"

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

int64_t ResidentAnonymousBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("RssAnon:", 0) == 0) {
      return std::stoll(line.substr(8)) * 1024;  // in kB
    }
  }
  return -1;
}

}  // namespace receipt_parity

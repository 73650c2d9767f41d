#include "runtime/heap_trim.h"

#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include <unistd.h>

#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

constexpr int64_t kMiB = 1024 * 1024;

// 2048 chunks of 32 KiB (under glibc's mmap threshold, so they are carved
// from the heap), each followed by a small chunk that stays in use: freeing
// the large ones leaves 64 MiB of holes that no top-of-heap trim can reach.
struct HeapWithHoles {
  HeapWithHoles() {
    for (int i = 0; i < 2048; ++i) {
      void* large = std::malloc(32 * 1024);
      std::memset(large, 1, 32 * 1024);  // resident
      holes.push_back(large);
      pins.push_back(std::malloc(64));
    }
    for (void* large : holes) std::free(large);
  }
  ~HeapWithHoles() {
    for (void* pin : pins) std::free(pin);
  }
  std::vector<void*> holes;
  std::vector<void*> pins;
};

int64_t ResidentAnonymousBytes() { return ProcessStatusKib("RssAnon") * 1024; }

TEST(HeapTrimTest, ProcessStatusFieldsAreRead) {
  const int64_t before = ResidentAnonymousBytes();
  ASSERT_GT(before, 0);
  std::vector<char> touched(16 * kMiB, 1);
  EXPECT_GE(ResidentAnonymousBytes(), before + 15 * kMiB);
  EXPECT_GE(ProcessStatusKib("VmHWM") * 1024, before + 15 * kMiB);
  EXPECT_EQ(ProcessStatusKib("NoSuchField"), -1);
  EXPECT_EQ(ProcessStatusKib("VmHW"), -1);  // a field's name, not its prefix
}

TEST(HeapTrimTest, AvailableMemoryIsSomeOfThisMachines) {
  const std::optional<int64_t> available = AvailableMemoryBytes();
  ASSERT_TRUE(available.has_value());
  const int64_t physical = int64_t{sysconf(_SC_PHYS_PAGES)} * sysconf(_SC_PAGESIZE);
  EXPECT_GT(*available, 16 * kMiB);
  EXPECT_LE(*available, physical);
}

#if defined(__GLIBC__)
TEST(HeapTrimTest, FreePagesBelowChunksInUseGoBackToTheSystem) {
  HeapWithHoles heap;
  const int64_t held = ResidentAnonymousBytes();
  ASSERT_GT(held, 64 * kMiB) << "the holes should still be resident before the trim";
  EXPECT_TRUE(ReturnFreeHeapPages());
  EXPECT_LE(ResidentAnonymousBytes(), held - 48 * kMiB);
}
#endif

}  // namespace
}  // namespace receipt_parity

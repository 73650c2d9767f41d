// Handing the heap's free pages back to the system, so a rank's resident set
// is what it holds rather than what the allocator has kept; and reading this
// process's memory figures.
//
// glibc's malloc returns freed memory to the system only from the top of its
// heap; a free chunk below a chunk still in use stays resident. Measured on
// the benchmark's communication-bound MLP (two ranks, 4000 updates): in
// some runs one rank's heap grew about 30 KB per update while what it held
// stayed flat; malloc_stats() at update ~2500 read 148.7 MB of heap against
// 57.5 MB in use on that rank, 76.2 MB against 57.7 MB on the other. The
// update loop calls ReturnFreeHeapPages every 64 updates, outside the timed
// update (trainer/update_loop.cc), and rank 0 between reading the parity
// reference and building the sampler audit (trainer/run_finish.cc).
#ifndef RECEIPT_PARITY_RUNTIME_HEAP_TRIM_H_
#define RECEIPT_PARITY_RUNTIME_HEAP_TRIM_H_

#include <cstdint>
#include <optional>
#include <string>

namespace receipt_parity {

// malloc_trim(0): every whole page inside a free chunk of every arena is
// handed back (madvise MADV_DONTNEED); nothing in use moves. Returns whether
// any memory was handed back; false, doing nothing, where the C library is
// not glibc.
bool ReturnFreeHeapPages();

// The value of `field` ("VmHWM", "RssAnon", ...) of /proc/self/status, in
// KiB; -1 where it cannot be read.
int64_t ProcessStatusKib(const std::string& field);

// MemAvailable of /proc/meminfo in bytes: what this machine can still give
// a process without swapping; nullopt where it cannot be read.
std::optional<int64_t> AvailableMemoryBytes();

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_RUNTIME_HEAP_TRIM_H_

// Preemption: the signals a scheduler sends ahead of a kill, SIGTERM
// (Slurm, Kubernetes, torchrun, this binary's launcher) and SIGUSR1
// (Slurm's --signal), turned from "die now" into "stop at the next update
// boundary" (issue 26, item 6).
//
// The signals are blocked in every thread (BlockPreemptionSignals, called
// first thing in main, before any thread starts, so every thread inherits
// the mask) and taken by one watcher thread with sigwait, never by a
// handler. A process that does not handle them unblocks them again
// (UnblockPreemptionSignals: the default action, death, as before).
//
// A training process (StartPreemptionWatch): the first signal sets
// PreemptionRequested() and starts the grace clock; the run polls it
// (trainer/preemption_gate.h), agrees with its peers on the update to stop
// after, saves one generation there when it fits, and exits
// kExitPreempted. A second signal, or the grace period running out, stops
// the process at once (_exit(kExitPreempted), nothing else run): the commit
// rule leaves only verified generations advertised.
// A launcher (StartSignalForwarding): every signal is passed on to its
// workers, which then stop as above; the launcher itself keeps waiting.
//
// Thread safety: all functions may be called from any thread; each Start
// once per process.
#ifndef RECEIPT_PARITY_RUNTIME_PREEMPTION_H_
#define RECEIPT_PARITY_RUNTIME_PREEMPTION_H_

#include <chrono>
#include <functional>

namespace receipt_parity {

// The exit code of a preempted process (cli/command_line.h's
// kExitPreempted).
inline constexpr int kPreemptedExitCode = 4;

// Blocks SIGTERM and SIGUSR1 in the calling thread (and threads it starts).
void BlockPreemptionSignals();

// Unblocks them in the calling thread: they act as by default.
void UnblockPreemptionSignals();

// The watcher of a training process, with `grace` from the first signal.
void StartPreemptionWatch(std::chrono::seconds grace);

// The first signal has come (always false without StartPreemptionWatch).
bool PreemptionRequested();

// The signal that came first (SIGTERM or SIGUSR1), 0 before.
int PreemptionSignal();

// The watcher of a launcher: `forward(signal)` for every signal that comes.
void StartSignalForwarding(std::function<void(int signal)> forward);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_RUNTIME_PREEMPTION_H_

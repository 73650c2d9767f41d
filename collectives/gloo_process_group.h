// c10d's Gloo process group of one rank, as a c10d::ProcessGroup.
//
// Since LibTorch 2.x, ProcessGroupGloo is a c10d::Backend and
// c10d::ProcessGroup dispatches each collective to the backend registered
// for the tensors' device. The group made here has Gloo registered for
// CPU tensors and for CUDA tensors (Gloo stages CUDA tensors through host
// memory, which is how two ranks share one GPU), so reducers and gathers
// call c10d's ProcessGroup interface only and work unchanged on either.
//
// c10d's flight recorder (a process-wide trace of every collective, for
// debugging hangs) is turned off unless TORCH_FR_BUFFER_SIZE is set: in
// LibTorch 2.11 its record races when several groups of one process enqueue
// at once (a segfault in FlightRecorder::recordWithResetEnabled, in about
// one run in five of the tests whose ranks are threads), and a run reports
// its own timeouts.
#ifndef RECEIPT_PARITY_COLLECTIVES_GLOO_PROCESS_GROUP_H_
#define RECEIPT_PARITY_COLLECTIVES_GLOO_PROCESS_GROUP_H_

#include <chrono>
#include <memory>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace gloo {
namespace transport {
class Device;
}  // namespace transport
}  // namespace gloo

namespace receipt_parity {

// Connects rank `rank` of `world_size` through `store` (blocks until every
// rank has joined or `timeout` passes). Throws what c10d throws (c10::Error,
// std::runtime_error); the caller converts it.
c10::intrusive_ptr<c10d::ProcessGroup> MakeGlooProcessGroup(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size,
    std::chrono::milliseconds timeout,
    std::shared_ptr<::gloo::transport::Device> device);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_COLLECTIVES_GLOO_PROCESS_GROUP_H_

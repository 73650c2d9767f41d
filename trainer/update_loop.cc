#include "trainer/update_loop.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "logging/glog.h"
#include "runtime/heap_trim.h"
#include "runtime/heartbeat.h"

namespace receipt_parity {
namespace {

using Clock = std::chrono::steady_clock;

// How often the loop hands the heap's free pages back (runtime/heap_trim.h):
// often enough that a rank's heap cannot grow by much in between (about
// 2 MB at the 30 KB per update measured there), seldom enough that the
// pages it re-touches cost well under 1 % of the updates.
constexpr int64_t kUpdatesBetweenHeapTrims = 64;

absl::StatusOr<EpochPlan> PlanEpoch(const UpdateSchedule& schedule, int epoch) {
  OrderRequest request;
  request.num_examples = schedule.num_examples;
  request.world_size = schedule.world_size;
  request.seed = schedule.seed;
  request.epoch = epoch;
  return BuildEpochPlan(*schedule.sampler, request, schedule.local_batch);
}

// Whether a failed every-update check stops the run (said on every rank).
bool StopsOnFailedCheck(const UpdateLoopParts& parts, const UpdateVerdict& verdict) {
  if (parts.failed_check_stop.empty() || verdict.verified) return false;
  const EveryUpdateFailure& failure = *verdict.failure;
  LOG(ERROR) << "update " << failure.update() << " failed its every-update check ("
             << failure.check() << "): " << failure.what()
             << "; parity.stop_on_failure stops the run after it, saving nothing";
  return true;
}

// With the checks: the last update's verdict settled now (a collective on
// every rank) and recorded; whether it stops the run.
absl::StatusOr<bool> SettleLastUpdate(const UpdateLoopParts& parts) {
  absl::StatusOr<std::optional<UpdateVerdict>> verdict = parts.step->SettleChecks();
  if (!verdict.ok()) return verdict.status();
  if (!verdict->has_value()) return false;
  parts.report->AddVerdict(**verdict);
  return StopsOnFailedCheck(parts, **verdict);
}

}  // namespace

absl::StatusOr<std::optional<GateStop>> GateChain::AfterUpdate(int64_t completed) {
  std::optional<GateStop> first;
  for (UpdateGate* gate : gates_) {
    absl::StatusOr<std::optional<GateStop>> stop = gate->AfterUpdate(completed);
    if (!stop.ok()) return stop.status();
    if (!first.has_value() && stop->has_value()) first = *std::move(*stop);
  }
  return first;
}

absl::StatusOr<int64_t> RunUpdateCount(const UpdateSchedule& schedule) {
  absl::StatusOr<EpochPlan> first = PlanEpoch(schedule, 0);
  if (!first.ok()) return first.status();
  const int64_t per_epoch = first->num_updates();
  if (per_epoch > 0 && schedule.epochs > kMostRunUpdates / per_epoch) {
    return absl::InvalidArgumentError(absl::StrCat(
        "epochs: ", schedule.epochs, " epochs of ", per_epoch, " updates are more than the ",
        kMostRunUpdates, " updates a run records (its artifacts count them in 32 bits)"));
  }
  if (schedule.sampler->same_size_every_epoch()) return per_epoch * schedule.epochs;
  const int64_t slots = per_epoch * first->global_batch();
  if (schedule.epochs > 1 && slots > 0 && schedule.epochs > kMostSlotsPlannedAtStart / slots) {
    return absl::InvalidArgumentError(absl::StrCat(
        "epochs: ", schedule.epochs, " epochs of ", slots,
        " slots are more than a start plans one by one (", kMostSlotsPlannedAtStart,
        " slots): the sampler does not declare the same size every epoch "
        "(SamplerPolicy::same_size_every_epoch), so each epoch would be planned to count "
        "the run's updates; train fewer epochs or declare it"));
  }
  int64_t total = per_epoch;
  for (int epoch = 1; epoch < schedule.epochs; ++epoch) {
    absl::StatusOr<EpochPlan> plan = PlanEpoch(schedule, epoch);
    if (!plan.ok()) return plan.status();
    total += plan->num_updates();
  }
  return total;
}

namespace {

// After update `total` (update `u` of `epoch`'s `num_updates`): whether the
// preemption gate stops the run here. When it does, the last update's
// checks are settled first (a failure is the stop's reason), then the
// generation the gate asks for is saved unless the cadence saved it;
// `end` records why and whether.
absl::StatusOr<bool> StopsAtGate(const UpdateLoopParts& parts, int64_t total, int epoch,
                                 int64_t u, int64_t num_updates, UpdateLoopEnd* end) {
  if (parts.gate == nullptr) return false;
  absl::StatusOr<std::optional<GateStop>> gate_stop = parts.gate->AfterUpdate(total);
  if (!gate_stop.ok()) return gate_stop.status();
  if (!gate_stop->has_value()) return false;
  end->stopped_by = (*gate_stop)->reason;
  absl::StatusOr<bool> failed = SettleLastUpdate(parts);
  if (!failed.ok()) return failed.status();
  if (*failed) {
    end->stopped_by = parts.failed_check_stop;
    return true;
  }
  if ((*gate_stop)->save && !parts.cadence->SavesAfter(total)) {
    if (absl::Status s = parts.cadence->SaveNow(total, epoch, u, num_updates); !s.ok()) {
      return s;
    }
  }
  end->saved_at_stop = (*gate_stop)->save && parts.cadence->saves();
  return true;
}

// The cursor after update `u` of `updates_in_epoch` in `epoch`, the run's
// update `total`.
TrainingCursor CursorAfter(int epoch, int64_t u, int64_t updates_in_epoch, int64_t total) {
  if (u + 1 < updates_in_epoch) return TrainingCursor{total + 1, epoch, u + 1};
  return TrainingCursor{total + 1, epoch + 1, 0};
}

void MarkInFlight(const UpdateLoopParts& parts, const TrainingCursor& after) {
  if (parts.position != nullptr) parts.position->after_in_flight = after;
}

// `total` updates done: the position, and the heartbeat's count
// (runtime/heartbeat.h).
void MarkCompleted(const UpdateLoopParts& parts, int64_t total) {
  PublishUpdatesCompleted(total);
  if (parts.position != nullptr) parts.position->completed = parts.position->after_in_flight;
}

}  // namespace

absl::StatusOr<UpdateLoopEnd> RunUpdateLoop(const UpdateSchedule& schedule,
                                            const UpdateLoopParts& parts) {
  CHECK(schedule.sampler != nullptr && parts.step != nullptr &&
        parts.cadence != nullptr && parts.progress != nullptr &&
        parts.report != nullptr)
      << "RunUpdateLoop: sampler, step, cadence, progress and report are required";
  const TrainingCursor& start = schedule.start;
  int64_t total = start.total_updates;
  if (parts.position != nullptr) *parts.position = LoopPosition{start, start};
  bool stop = false;
  UpdateLoopEnd end;
  for (int epoch = start.epoch; epoch < schedule.epochs && !stop; ++epoch) {
    absl::StatusOr<EpochPlan> plan = PlanEpoch(schedule, epoch);
    if (!plan.ok()) return plan.status();
    const int64_t first = epoch == start.epoch ? start.update_in_epoch : 0;
    int64_t u = first;
    for (; u < plan->num_updates(); ++u) {
      if (schedule.max_updates > 0 && total >= schedule.max_updates) {
        stop = true;
        break;
      }
      const Clock::time_point begin = Clock::now();
      MarkInFlight(parts, CursorAfter(epoch, u, plan->num_updates(), total));
      absl::StatusOr<UpdateResult> result =
          parts.step->Run(*plan, u, total, parts.observer);
      if (!result.ok()) return result.status();
      if (result->earlier_verdict.has_value()) {
        parts.report->AddVerdict(*result->earlier_verdict);
        if (StopsOnFailedCheck(parts, *result->earlier_verdict)) {
          // This update was not stepped: the run ends after the failed one.
          end.stopped_by = parts.failed_check_stop;
          stop = true;
          break;
        }
      }
      parts.report->AddUpdate(
          *result, epoch, std::chrono::duration<double>(Clock::now() - begin).count());
      if (parts.observer != nullptr) {
        if (absl::Status s = parts.observer->AfterTimedUpdate(total); !s.ok()) return s;
      }
      MarkCompleted(parts, ++total);
      // A generation holds this update only once its checks passed.
      if (parts.cadence->SavesAfter(total)) {
        absl::StatusOr<bool> failed = SettleLastUpdate(parts);
        if (!failed.ok()) return failed.status();
        if (*failed) {
          end.stopped_by = parts.failed_check_stop;
          stop = true;
          ++u;  // this update is done, and no generation holds it
          break;
        }
      }
      if (absl::Status s =
              parts.cadence->AfterUpdate(total, epoch, u, plan->num_updates());
          !s.ok()) {
        return s;
      }
      parts.progress->AfterUpdate(total, plan->num_updates(), epoch,
                                  result->weighted_loss, parts.report->updates());
      if (total % kUpdatesBetweenHeapTrims == 0) ReturnFreeHeapPages();
      absl::StatusOr<bool> stopped_at_gate =
          StopsAtGate(parts, total, epoch, u, plan->num_updates(), &end);
      if (!stopped_at_gate.ok()) return stopped_at_gate.status();
      if (*stopped_at_gate) {
        stop = true;
        ++u;  // this update is done
        break;
      }
    }
    parts.report->AddEpoch(*plan, first, u);
  }
  // The last update's checks.
  absl::StatusOr<bool> failed = SettleLastUpdate(parts);
  if (!failed.ok()) return failed.status();
  if (*failed) end.stopped_by = parts.failed_check_stop;
  return end;
}

}  // namespace receipt_parity

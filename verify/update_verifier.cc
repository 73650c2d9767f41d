#include "verify/update_verifier.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <utility>

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "collectives/collective_error.h"
#include "collectives/sum_across_ranks.h"
#include "logging/glog.h"

namespace receipt_parity {
namespace {

// Updates listed in EveryUpdateVerdict.failed_updates.
constexpr int kMostListedFailures = 1000;

// A report's 64-bit words (ReportWords), and the 16-bit pieces a rider
// carries each as.
constexpr int64_t kReportWords = 17;
constexpr int64_t kPiecesPerWord = 4;

int64_t Word(double value) {
  int64_t word = 0;
  std::memcpy(&word, &value, sizeof(word));
  return word;
}

double Double(int64_t word) {
  double value = 0;
  std::memcpy(&value, &word, sizeof(value));
  return value;
}

void PutProjection(const Projection& p, std::vector<int64_t>* words) {
  words->push_back(Word(p.dot));
  words->push_back(Word(p.magnitude));
  words->push_back(p.products);
}

Projection TakeProjection(const std::vector<int64_t>& words, size_t* at) {
  Projection p;
  p.dot = Double(words[(*at)++]);
  p.magnitude = Double(words[(*at)++]);
  p.products = words[(*at)++];
  return p;
}

// A report as the 64-bit words the ranks gather, and back.
std::vector<int64_t> ReportWords(const RankUpdateReport& report) {
  std::vector<int64_t> words = {static_cast<int64_t>(report.accounting),
                                static_cast<int64_t>(report.expected_own),
                                static_cast<int64_t>(report.expected_total),
                                report.counted_rows, report.expected_rows};
  PutProjection(report.contribution, &words);
  PutProjection(report.reduced, &words);
  PutProjection(report.stepped, &words);
  words.push_back(Word(report.clip_factor));
  words.push_back(static_cast<int64_t>(report.replica));
  words.push_back((report.reduced_not_finite ? 1 : 0) | (report.loss_not_finite ? 2 : 0));
  CHECK_EQ(static_cast<int64_t>(words.size()), kReportWords);
  return words;
}

RankUpdateReport ReportOf(const std::vector<int64_t>& words) {
  RankUpdateReport report;
  size_t at = 0;
  report.accounting = static_cast<uint64_t>(words[at++]);
  report.expected_own = static_cast<uint64_t>(words[at++]);
  report.expected_total = static_cast<uint64_t>(words[at++]);
  report.counted_rows = words[at++];
  report.expected_rows = words[at++];
  report.contribution = TakeProjection(words, &at);
  report.reduced = TakeProjection(words, &at);
  report.stepped = TakeProjection(words, &at);
  report.clip_factor = Double(words[at++]);
  report.replica = static_cast<uint64_t>(words[at++]);
  report.reduced_not_finite = (words[at] & 1) != 0;
  report.loss_not_finite = (words[at] & 2) != 0;
  return report;
}

std::string WeightText(double weight) { return absl::StrFormat("%.17g", weight); }

using Clock = std::chrono::steady_clock;

}  // namespace

// Adds the wall time of its scope to the verifier's seconds.
class UpdateVerifier::Timed {
 public:
  explicit Timed(UpdateVerifier* verifier) : verifier_(verifier), start_(Clock::now()) {}
  ~Timed() {
    const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    const std::lock_guard<std::mutex> lock(verifier_->contribution_mutex_);
    verifier_->seconds_ += seconds;
  }

 private:
  UpdateVerifier* verifier_;
  Clock::time_point start_;
};

// The launched update: what its Settle() judges and, on a failure,
// describes.
struct UpdateVerifier::GatherInFlight {
  // Every rank's words as float64 halves: the sum in flight, or (one rank,
  // no group) the words already.
  at::Tensor table;
  RankSumInFlight sum;
  int64_t width = 0;
  std::vector<int64_t> own;
};

struct UpdateVerifier::Pending {
  int64_t total_update = 0;
  // The report rides in this rider (Launch's); undefined: gathered alone.
  at::Tensor rider;
  std::vector<AccountingRow> rows;
  std::vector<AccountingRow> expected;
  std::vector<ReplicaTensor> replica;
  GatherInFlight gather;
  // Measuring and sending, so far.
  double seconds = 0;
};

UpdateVerifier::~UpdateVerifier() = default;

UpdateVerifier::UpdateVerifier(UpdateVerifierOptions options)
    : options_(std::move(options)),
      one_worker_(options_.one_worker),
      direction_(options_.gradient_elements, options_.seed) {
  CHECK_GE(options_.world_size, 1);
  CHECK_GE(options_.reduced_divisor, 1);
  for (const auto& [check, method] :
       EveryUpdateMethods(options_.clip_max_norm.has_value(), reduces())) {
    record_.add_checks(check);
    record_.add_method(absl::StrCat(check, ": ", method));
  }
}

absl::Status UpdateVerifier::BeginEpoch(const EpochPlan& plan) {
  if (absl::Status s = one_worker_.BeginEpoch(plan); !s.ok()) return s;
  if (!one_worker_.order_note().empty()) {
    const std::string note = absl::StrCat("epoch ", plan.epoch(), ": ", one_worker_.order_note());
    if (record_.order_notes_size() < 16) record_.add_order_notes(note);
  }
  return absl::OkStatus();
}

absl::Status UpdateVerifier::BeginUpdate(const EpochPlan& plan, int64_t update,
                                         int64_t total_update) {
  {
    const std::lock_guard<std::mutex> lock(contribution_mutex_);
    seconds_ = 0;
  }
  const Timed timed(this);
  plan_ = &plan;
  update_ = update;
  total_update_ = total_update;
  rows_.clear();
  contribution_ = Projection();
  contribution_error_ = absl::OkStatus();
  reduced_ = Projection();
  reduced_not_finite_ = false;
  stepped_ = Projection();
  clip_factor_ = std::numeric_limits<double>::quiet_NaN();
  absl::StatusOr<std::vector<AccountingRow>> expected = one_worker_.Rows(update, total_update);
  if (!expected.ok()) return expected.status();
  expected_ = *std::move(expected);
  return absl::OkStatus();
}

void UpdateVerifier::AddRow(AccountingRow row) {
  row.weight /= options_.reduced_divisor;
  rows_.push_back(row);
}

void UpdateVerifier::AddSlots(int first, absl::Span<const Slot> slots,
                              absl::Span<const double> weights, const at::Tensor& update_keys,
                              int micro_batch) {
  const std::vector<int64_t> keys = KeysOf(update_keys, static_cast<int64_t>(slots.size()));
  for (size_t i = 0; i < slots.size(); ++i) {
    AccountingRow row;
    row.position = plan_->BlockPosition(options_.rank, update_, first + static_cast<int>(i));
    row.dataset_index = slots[i].dataset_index;
    row.valid = slots[i].valid;
    row.weight = weights[i];
    row.key = keys[i];
    row.micro_batch = micro_batch;
    AddRow(row);
  }
}

void UpdateVerifier::AddPositions(absl::Span<const int64_t> positions,
                                  absl::Span<const Slot> slots, absl::Span<const double> weights,
                                  const at::Tensor& update_keys, int micro_batch) {
  const std::vector<int64_t> keys = KeysOf(update_keys, static_cast<int64_t>(slots.size()));
  for (size_t i = 0; i < slots.size(); ++i) {
    AccountingRow row;
    row.position = positions[i];
    row.dataset_index = slots[i].dataset_index;
    row.valid = slots[i].valid;
    row.weight = weights[i];
    row.key = keys[i];
    row.micro_batch = micro_batch;
    AddRow(row);
  }
}

absl::Status UpdateVerifier::AddContribution(const at::Tensor& piece, int64_t offset) {
  if (!reduces()) return absl::OkStatus();
  const Timed timed(this);
  absl::StatusOr<Projection> p = direction_.Project(piece, offset, total_update_);
  const std::lock_guard<std::mutex> lock(contribution_mutex_);
  if (!p.ok()) {
    if (contribution_error_.ok()) contribution_error_ = p.status();
    return p.status();
  }
  contribution_.Add(*p);
  return absl::OkStatus();
}

absl::StatusOr<Projection> UpdateVerifier::ProjectLayout(const std::vector<at::Tensor>& layout) {
  Projection whole;
  int64_t offset = 0;
  for (const at::Tensor& piece : layout) {
    absl::StatusOr<Projection> p = direction_.Project(piece, offset, total_update_);
    if (!p.ok()) return p.status();
    whole.Add(*p);
    offset += piece.numel();
  }
  return whole;
}

absl::Status UpdateVerifier::SetReduced(const std::vector<at::Tensor>& layout) {
  if (!reduces()) return absl::OkStatus();
  const Timed timed(this);
  absl::StatusOr<Projection> reduced = ProjectLayout(layout);
  if (!reduced.ok()) return reduced.status();
  reduced_ = *reduced;
  reduced_not_finite_ = !reduced_.finite();
  return absl::OkStatus();
}

absl::Status UpdateVerifier::ExpectClipFactor(const std::vector<at::Tensor>& parameters) {
  if (!options_.clip_max_norm.has_value() || !reduces()) return absl::OkStatus();
  const Timed timed(this);
  try {
    // torch::nn::utils::clip_grad_norm_'s own arithmetic (norm type 2), on
    // the gradients it is given.
    std::vector<at::Tensor> norms;
    for (const at::Tensor& p : parameters) {
      if (p.grad().defined()) norms.push_back(p.grad().data().norm(2));
    }
    if (norms.empty()) {
      clip_factor_ = 1;
      return absl::OkStatus();
    }
    const at::Tensor total = norms.size() == 1 ? norms[0] : at::stack(norms).norm(2);
    const at::Tensor coef = *options_.clip_max_norm / (total + 1e-6);
    clip_factor_ = at::clamp(coef, std::nullopt, 1.0).item<double>();
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "the clip factor the reduced gradient asks for: LibTorch");
  }
  return absl::OkStatus();
}

absl::Status UpdateVerifier::SetStepped(const std::vector<at::Tensor>& layout) {
  if (!reduces()) return absl::OkStatus();
  const Timed timed(this);
  absl::StatusOr<Projection> stepped = ProjectLayout(layout);
  if (!stepped.ok()) return stepped.status();
  stepped_ = *stepped;
  return absl::OkStatus();
}

absl::StatusOr<UpdateVerifier::GatherInFlight> UpdateVerifier::StartGather(
    const std::vector<int64_t>& mine) {
  GatherInFlight in_flight;
  in_flight.width = static_cast<int64_t>(mine.size());
  in_flight.own = mine;
  if (!reduces()) return in_flight;
  // Each word as its two 32-bit halves, each a float64 holding a whole
  // number below 2^32: every backend sums float64 (MPI's only floats), and
  // a sum of one rank's row with the others' zeros is exact.
  const int64_t width = in_flight.width;
  try {
    at::Tensor table = at::zeros({options_.world_size, 2 * width}, at::kDouble);
    double* row = table[options_.rank].data_ptr<double>();
    for (int64_t i = 0; i < width; ++i) {
      const auto word = static_cast<uint64_t>(mine[static_cast<size_t>(i)]);
      row[2 * i] = static_cast<double>(word >> 32);
      row[2 * i + 1] = static_cast<double>(word & 0xffffffffu);
    }
    in_flight.table = table.to(options_.device);
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "the every-update checks' report: LibTorch");
  }
  absl::StatusOr<RankSumInFlight> sum = StartSumAcrossRanks(
      *options_.group, in_flight.table,
      absl::StrCat("rank ", options_.rank, ", update ", total_update_,
                   ": gathering the every-update checks"));
  if (!sum.ok()) return sum.status();
  in_flight.sum = *std::move(sum);
  return in_flight;
}

absl::StatusOr<std::vector<std::vector<int64_t>>> UpdateVerifier::FinishGather(
    GatherInFlight in_flight) {
  if (!reduces()) return std::vector<std::vector<int64_t>>{in_flight.own};
  if (absl::Status s = in_flight.sum.Wait(); !s.ok()) return s;
  const int world = options_.world_size;
  const int64_t width = in_flight.width;
  std::vector<std::vector<int64_t>> all(static_cast<size_t>(world));
  try {
    const at::Tensor host = in_flight.table.to(at::kCPU).contiguous();
    const double* data = host.data_ptr<double>();
    for (int r = 0; r < world; ++r) {
      all[r].resize(static_cast<size_t>(width));
      for (int64_t i = 0; i < width; ++i) {
        const double* halves = data + r * 2 * width + 2 * i;
        all[r][static_cast<size_t>(i)] = static_cast<int64_t>(
            (static_cast<uint64_t>(halves[0]) << 32) | static_cast<uint64_t>(halves[1]));
      }
    }
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "the every-update checks' reports: LibTorch");
  }
  return all;
}

absl::StatusOr<std::vector<std::vector<int64_t>>> UpdateVerifier::Gather(
    const std::vector<int64_t>& mine) {
  absl::StatusOr<GatherInFlight> in_flight = StartGather(mine);
  if (!in_flight.ok()) return in_flight.status();
  return FinishGather(*std::move(in_flight));
}

std::vector<int64_t> UpdateVerifier::FirstDifferingRow(const Pending& pending) {
  // found, position, then the rank's and one worker's dataset index, valid,
  // weight and key, and the micro-batch.
  const std::vector<AccountingRow>& expected = pending.expected;
  for (const AccountingRow& row : pending.rows) {
    const bool known = row.position >= 0 && row.position < static_cast<int64_t>(expected.size());
    AccountingRow want;
    want.position = row.position;
    want.dataset_index = -1;
    want.valid = false;
    if (known) want = expected[static_cast<size_t>(row.position)];
    const bool same = known && AccountingRowHash(pending.total_update, row) ==
                                   AccountingRowHash(pending.total_update, want);
    if (same || (!Counts(row) && !Counts(want))) continue;
    return {1,
            row.position,
            row.dataset_index,
            row.valid ? 1 : 0,
            Word(row.weight),
            row.key,
            want.dataset_index,
            want.valid ? 1 : 0,
            Word(want.weight),
            want.key,
            row.micro_batch};
  }
  return std::vector<int64_t>(11, 0);
}

absl::StatusOr<std::string> UpdateVerifier::DescribeAccounting(const Pending& pending,
                                                               const std::vector<int>& outliers) {
  absl::StatusOr<std::vector<std::vector<int64_t>>> rows = Gather(FirstDifferingRow(pending));
  if (!rows.ok()) return rows.status();
  const int rank = outliers.front();
  const std::vector<int64_t>& w = (*rows)[static_cast<size_t>(rank)];
  if (w[0] == 0) return std::string();
  const auto receipt = [this](int64_t index) {
    const std::vector<std::string>* ids = options_.receipt_ids;
    if (index < 0) return std::string("nothing");
    if (ids == nullptr || index >= static_cast<int64_t>(ids->size())) {
      return absl::StrCat("dataset index ", index);
    }
    return absl::StrCat("receipt ", (*ids)[static_cast<size_t>(index)], " (dataset index ",
                        index, ")");
  };
  std::vector<std::string> differs;
  if (w[2] != w[6] || w[3] != w[7]) {
    differs.push_back(absl::StrCat("trains ", receipt(w[2]), w[3] ? "" : " masked",
                                   " where one worker's trains ", receipt(w[6]),
                                   w[7] ? "" : " masked"));
  }
  if (w[4] != w[8]) {
    differs.push_back(absl::StrCat("weighs ", WeightText(Double(w[4])),
                                   options_.reduced_divisor > 1
                                       ? absl::StrCat(" (after the reducer's division by ",
                                                      options_.reduced_divisor, ")")
                                       : "",
                                   " where one worker's weighs ", WeightText(Double(w[8]))));
  }
  if (w[5] != w[9]) {
    differs.push_back(absl::StrCat("draws its keyed dropout from key ", w[5],
                                   " where one worker's draws from ", w[9]));
  }
  return absl::StrCat(": its slot at position ", w[1], " of the update (", receipt(w[2]),
                      ", micro-batch ", w[10], ") ", absl::StrJoin(differs, ", and "));
}

absl::StatusOr<std::string> UpdateVerifier::DescribeReplicas(const Pending& pending,
                                                             const std::vector<int>& outliers) {
  const std::vector<ReplicaTensor>& replica = pending.replica;
  std::vector<at::Tensor> tensors;
  for (const ReplicaTensor& t : replica) tensors.push_back(t.second);
  absl::StatusOr<std::vector<uint64_t>> each = checksum_.OfEach(tensors);
  if (!each.ok()) return each.status();
  std::vector<int64_t> words(each->begin(), each->end());
  absl::StatusOr<std::vector<std::vector<int64_t>>> all = Gather(words);
  if (!all.ok()) return all.status();
  const int rank = outliers.front();
  const std::vector<int64_t>& theirs = (*all)[static_cast<size_t>(rank)];
  const std::vector<int64_t>& first = (*all)[0];
  for (size_t t = 0; t < replica.size() && t < theirs.size(); ++t) {
    if (theirs[t] != first[t]) return absl::StrCat(", first in ", replica[t].first);
  }
  return std::string();
}

// Every update verified but those lost with a rank, and none left
// unverified.
static bool PassesWhole(const EveryUpdateVerdict& record) {
  return record.updates() > 0 &&
         record.verified() + record.lost_with_rank_size() == record.updates() &&
         record.not_verified().empty();
}

void UpdateVerifier::Record(int64_t total_update, const UpdateCheckResult& result) {
  record_.set_updates(record_.updates() + 1);
  record_.set_largest_reduction_share(
      std::max(record_.largest_reduction_share(), result.reduction_share));
  record_.set_largest_clipping_share(
      std::max(record_.largest_clipping_share(), result.clipping_share));
  if (!result.failure.has_value()) {
    record_.set_verified(record_.verified() + 1);
  } else {
    if (!record_.has_first_failure()) *record_.mutable_first_failure() = *result.failure;
    if (record_.failed_updates_size() < kMostListedFailures) {
      record_.add_failed_updates(static_cast<int32_t>(total_update));
    }
    record_.set_failed_updates_total(record_.failed_updates_total() + 1);
  }
  record_.set_pass(PassesWhole(record_));
}

int64_t UpdateVerifier::RiderElements(at::ScalarType dtype) const {
  if (!reduces() || (dtype != at::kFloat && dtype != at::kDouble)) return 0;
  return options_.world_size * kReportWords * kPiecesPerWord;
}

absl::Status UpdateVerifier::Launch(std::vector<ReplicaTensor> replica, bool loss_finite,
                                    at::Tensor rider) {
  CHECK(pending_ == nullptr) << "UpdateVerifier: Launch before the last update settled";
  const Clock::time_point start = Clock::now();
  {
    const std::lock_guard<std::mutex> lock(contribution_mutex_);
    if (!contribution_error_.ok()) return contribution_error_;
  }
  RankUpdateReport mine;
  mine.accounting = FoldAccounting(total_update_, rows_);
  for (const AccountingRow& row : rows_) {
    mine.counted_rows += Counts(row);
    if (row.position >= 0 && row.position < static_cast<int64_t>(expected_.size())) {
      const AccountingRow& want = expected_[static_cast<size_t>(row.position)];
      if (Counts(want)) mine.expected_own += AccountingRowHash(total_update_, want);
    }
  }
  mine.expected_total = FoldAccounting(total_update_, expected_);
  for (const AccountingRow& row : expected_) mine.expected_rows += Counts(row);
  mine.contribution = contribution_;
  mine.reduced = reduced_;
  mine.stepped = stepped_;
  mine.clip_factor = clip_factor_;
  if (reduces()) {
    std::vector<at::Tensor> tensors;
    for (const ReplicaTensor& t : replica) tensors.push_back(t.second);
    absl::StatusOr<std::vector<uint64_t>> each = checksum_.OfEach(tensors);
    if (!each.ok()) return each.status();
    mine.replica = ReplicaChecksum::Combine(*each);
  }
  mine.reduced_not_finite = reduced_not_finite_;
  mine.loss_not_finite = !loss_finite;
  const std::vector<int64_t> words = ReportWords(mine);
  auto pending = std::make_unique<Pending>();
  if (rider.defined() && rider.numel() == RiderElements(rider.scalar_type())) {
    // This rank's row of 16-bit pieces, the other rows zeroed.
    try {
      at::Tensor row = at::zeros({rider.numel()}, at::kDouble);
      double* pieces = row.data_ptr<double>() + options_.rank * kReportWords * kPiecesPerWord;
      for (int64_t i = 0; i < kReportWords; ++i) {
        const auto word = static_cast<uint64_t>(words[static_cast<size_t>(i)]);
        for (int64_t k = 0; k < kPiecesPerWord; ++k) {
          pieces[i * kPiecesPerWord + k] =
              static_cast<double>((word >> (16 * (kPiecesPerWord - 1 - k))) & 0xffffu);
        }
      }
      rider.copy_(row);
    } catch (const std::exception& e) {
      return LibTorchErrorToStatus(e, "the every-update checks' report: LibTorch");
    }
    pending->rider = rider;
    pending->gather.own = words;
    pending->gather.width = kReportWords;
  } else {
    absl::StatusOr<GatherInFlight> gather = StartGather(words);
    if (!gather.ok()) return gather.status();
    pending->gather = *std::move(gather);
  }
  pending->total_update = total_update_;
  pending->rows = std::move(rows_);
  pending->expected = std::move(expected_);
  pending->replica = std::move(replica);
  const double launch = std::chrono::duration<double>(Clock::now() - start).count();
  {
    const std::lock_guard<std::mutex> lock(contribution_mutex_);
    pending->seconds = seconds_ + launch;
  }
  pending_ = std::move(pending);
  return absl::OkStatus();
}

std::optional<std::vector<std::vector<int64_t>>> UpdateVerifier::ReadRider(
    const at::Tensor& rider, std::string* altered) const {
  const at::Tensor host = rider.to(at::kCPU, at::kDouble).contiguous();
  const double* pieces = host.data_ptr<double>();
  const double divisor = options_.reduced_divisor;
  std::vector<std::vector<int64_t>> all(static_cast<size_t>(options_.world_size));
  for (int r = 0; r < options_.world_size; ++r) {
    for (int64_t i = 0; i < kReportWords; ++i) {
      uint64_t word = 0;
      for (int64_t k = 0; k < kPiecesPerWord; ++k) {
        const int64_t at = (r * kReportWords + i) * kPiecesPerWord + k;
        // A summing reducer gives the piece back exactly; one that divides
        // by its divisor, within its rounding (far below 1/64).
        const double value = pieces[at] * divisor;
        const double whole = std::nearbyint(value);
        if (!(std::fabs(value - whole) <= 1.0 / 64) || whole < 0 || whole > 0xffff) {
          *altered = absl::StrCat("value ", pieces[at], " at ", at);
          return std::nullopt;
        }
        word = (word << 16) | static_cast<uint64_t>(whole);
      }
      all[r].push_back(static_cast<int64_t>(word));
    }
  }
  return all;
}

absl::StatusOr<std::optional<UpdateVerdict>> UpdateVerifier::Settle(bool rider_reduced) {
  if (pending_ == nullptr) return std::optional<UpdateVerdict>();
  const Clock::time_point start = Clock::now();
  const std::unique_ptr<Pending> pending = std::move(pending_);
  absl::StatusOr<std::vector<std::vector<int64_t>>> gathered;
  std::string altered;
  if (pending->rider.defined() && rider_reduced) {
    try {
      std::optional<std::vector<std::vector<int64_t>>> read = ReadRider(pending->rider, &altered);
      if (read.has_value()) gathered = *std::move(read);
    } catch (const std::exception& e) {
      return LibTorchErrorToStatus(e, "reading the every-update checks' reports: LibTorch");
    }
  } else if (pending->rider.defined()) {
    gathered = Gather(pending->gather.own);  // no reduction carried it: alone, now
  } else {
    gathered = FinishGather(std::move(pending->gather));
  }
  if (!altered.empty()) {
    // The reduction that carried the reports (this update's, the one after
    // the pending one) did not return the ranks' rows summed: that update
    // fails its reduction check when it settles; the pending one is judged
    // by its reports gathered on their own.
    carried_failure_ = std::make_pair(
        total_update_,
        absl::StrCat("the last gradient bucket of update ", total_update_,
                     " came back otherwise than the ranks' values summed",
                     options_.reduced_divisor > 1
                         ? absl::StrCat(" over ", options_.reduced_divisor)
                         : "",
                     ": the every-update reports that rode there (", altered,
                     ") were altered, so the reducer did not sum that bucket"));
    gathered = Gather(pending->gather.own);
  }
  if (!gathered.ok()) return gathered.status();

  std::vector<RankUpdateReport> reports;
  for (const std::vector<int64_t>& words : *gathered) reports.push_back(ReportOf(words));

  UpdateCheckContext context;
  context.total_update = pending->total_update;
  context.reduced_divisor = options_.reduced_divisor;
  context.reduction_terms = options_.reduction_terms;
  context.unit_roundoff = options_.unit_roundoff;
  context.clipping = options_.clip_max_norm.has_value() && reduces();
  context.reduces = reduces();
  UpdateCheckResult result = JudgeUpdate(reports, context);
  if (carried_failure_.has_value() && carried_failure_->first == pending->total_update) {
    if (!result.failure.has_value()) {
      result.failure = EveryUpdateFailure();
      result.failure->set_update(static_cast<int32_t>(pending->total_update));
      result.failure->set_rank(-1);
      result.failure->set_check(kReductionCheck);
      result.failure->set_what(carried_failure_->second);
    }
    carried_failure_.reset();
  }
  UpdateVerdict verdict;
  verdict.update = pending->total_update;
  if (result.not_finite) {
    verdict.not_finite = true;
    return std::optional<UpdateVerdict>(verdict);
  }
  if (result.failure.has_value()) {
    absl::StatusOr<std::string> more = std::string();
    if (result.failure->check() == kAccountingCheck && !result.accounting_outliers.empty()) {
      more = DescribeAccounting(*pending, result.accounting_outliers);
    } else if (result.failure->check() == kReplicasCheck) {
      more = DescribeReplicas(*pending, result.replica_outliers);
    }
    if (!more.ok()) return more.status();
    result.failure->set_what(absl::StrCat(result.failure->what(), *more));
    verdict.verified = false;
    verdict.failure = result.failure;
  }
  Record(pending->total_update, result);
  verdict.seconds =
      pending->seconds + std::chrono::duration<double>(Clock::now() - start).count();
  return std::optional<UpdateVerdict>(verdict);
}

absl::StatusOr<UpdateVerdict> UpdateVerifier::Exchange(std::vector<ReplicaTensor> replica,
                                                       bool loss_finite) {
  if (absl::Status s = Launch(std::move(replica), loss_finite); !s.ok()) return s;
  absl::StatusOr<std::optional<UpdateVerdict>> verdict = Settle();
  if (!verdict.ok()) return verdict.status();
  return **verdict;
}

void UpdateVerifier::Restore(const EveryUpdateVerdict& earlier, int64_t resume_update) {
  EveryUpdateVerdict restored = earlier;
  restored.clear_failed_updates();
  int64_t failed_before = 0;
  for (int32_t u : earlier.failed_updates()) {
    if (u < resume_update) {
      restored.add_failed_updates(u);
      ++failed_before;
    }
  }
  restored.set_failed_updates_total(static_cast<int32_t>(failed_before));
  restored.clear_lost_with_rank();
  restored.clear_lost_with_rank_why();
  for (int i = 0; i < earlier.lost_with_rank_size(); ++i) {
    if (earlier.lost_with_rank(i) >= resume_update) continue;  // redone here
    restored.add_lost_with_rank(earlier.lost_with_rank(i));
    restored.add_lost_with_rank_why(i < earlier.lost_with_rank_why_size()
                                        ? earlier.lost_with_rank_why(i)
                                        : std::string());
  }
  if (earlier.has_first_failure() && earlier.first_failure().update() >= resume_update) {
    restored.clear_first_failure();
  }
  if (earlier.updates() < resume_update) {
    restored.set_not_verified(absl::StrCat(
        "updates ", earlier.updates(), " to ", resume_update - 1,
        " were trained by an attempt that recorded no every-update checks"));
  }
  restored.set_updates(static_cast<int32_t>(resume_update));
  restored.set_verified(static_cast<int32_t>(std::min<int64_t>(
      earlier.verified(), std::max<int64_t>(0, std::min<int64_t>(earlier.updates(), resume_update) -
                                                   failed_before))));
  restored.clear_checks();
  for (const std::string& check : record_.checks()) restored.add_checks(check);
  restored.clear_method();
  for (const std::string& method : record_.method()) restored.add_method(method);
  restored.set_pass(PassesWhole(restored));
  record_ = std::move(restored);
}

void UpdateVerifier::RestoreAfterLoss(const EveryUpdateVerdict& earlier, int64_t resume_update,
                                      const std::string& why) {
  EveryUpdateVerdict taken = earlier;
  if (earlier.updates() + 1 == resume_update) {
    taken.add_lost_with_rank(static_cast<int32_t>(earlier.updates()));
    taken.add_lost_with_rank_why(why);
    taken.set_updates(static_cast<int32_t>(resume_update));
  }
  Restore(taken, resume_update);
}

}  // namespace receipt_parity

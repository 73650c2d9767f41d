#include "model/buffer_comparison.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <set>
#include <string>

#include <ATen/ATen.h>
#include <c10/util/hash.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace receipt_parity {
namespace {

BufferDigest Digest(const std::string& name, const at::Tensor& buffer) {
  BufferDigest digest;
  digest.set_name(name);
  const at::Tensor cpu = buffer.detach().to(at::kCPU).contiguous();
  for (int64_t d : cpu.sizes()) digest.add_shape(static_cast<int32_t>(d));
  std::string bytes = absl::StrCat(c10::toString(cpu.scalar_type()), ":",
                                   absl::StrJoin(cpu.sizes(), "x"), ":");
  bytes.append(static_cast<const char*>(cpu.data_ptr()), cpu.nbytes());
  digest.set_sha1(c10::sha1(bytes).str());
  if (cpu.numel() <= kMaxDigestValues) {
    const at::Tensor values = cpu.to(at::kFloat).contiguous();
    const float* data = values.data_ptr<float>();
    digest.mutable_values()->Add(data, data + values.numel());
  }
  return digest;
}

// max |a - b| over their values; 0 when either carries none.
double MaxAbsDiff(const BufferDigest& a, const BufferDigest& b) {
  if (a.values_size() == 0 || a.values_size() != b.values_size()) return 0;
  double diff = 0;
  for (int i = 0; i < a.values_size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a.values(i)) - b.values(i)));
  }
  return diff;
}

std::string Verdict(const BufferComparison& c) {
  if (c.compared() == 0) return "the model has no buffers: nothing to compare";
  if (c.ranks() == 1) {
    return absl::StrCat("one rank: ", c.compared(), " buffers, nothing to compare them with");
  }
  if (c.equal()) {
    return absl::StrCat("all ", c.compared(), " buffers are bitwise equal on all ",
                        c.ranks(), " ranks");
  }
  return absl::StrCat(
      c.differing_size(), " of ", c.compared(), " buffers differ across the ", c.ranks(),
      " ranks (", absl::StrJoin(c.differing(), ", "), "; max abs diff ", c.max_abs_diff(),
      "): nothing reduces buffers, so each rank's replica kept statistics of its own "
      "batches; the replicas' parameters may be equal while their evaluation differs");
}

}  // namespace

absl::StatusOr<RankBuffers> DigestBuffers(const torch::nn::Module& model, int rank) {
  RankBuffers out;
  out.set_rank(rank);
  std::string current;
  try {
    for (const auto& item : model.named_buffers(/*recurse=*/true)) {
      current = item.key();
      if (!item.value().defined()) continue;
      *out.add_buffers() = Digest(item.key(), item.value());
    }
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("digesting buffer ", current, ": LibTorch: ", e.what()));
  }
  return out;
}

BufferComparison CompareBuffers(const std::vector<RankBuffers>& ranks) {
  BufferComparison c;
  const RankBuffers& first = ranks.front();
  c.set_compared(first.buffers_size());
  c.set_ranks(static_cast<int32_t>(ranks.size()));
  std::set<std::string> differing;
  for (const RankBuffers& other : ranks) {
    if (other.buffers_size() != first.buffers_size()) {
      differing.insert(absl::StrCat("rank ", other.rank(), " has ", other.buffers_size(),
                                    " buffers, rank 0 ", first.buffers_size()));
      continue;
    }
    for (int i = 0; i < first.buffers_size(); ++i) {
      const BufferDigest& a = first.buffers(i);
      const BufferDigest& b = other.buffers(i);
      if (a.name() != b.name() || a.sha1() != b.sha1()) differing.insert(a.name());
      c.set_max_abs_diff(std::max(c.max_abs_diff(), MaxAbsDiff(a, b)));
    }
  }
  for (const std::string& name : differing) c.add_differing(name);
  c.set_equal(differing.empty());
  c.set_verdict(Verdict(c));
  return c;
}

}  // namespace receipt_parity

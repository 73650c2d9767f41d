// A team's own loss weighting: `team_class_weights` weighs each valid slot
// by its class's weight, normalised over the update's valid slots on ALL
// ranks,
//
//   w_i = valid_i * c_{y_i} / sum_{j in A} c_{y_j},
//
// so the weights of an update sum to 1 however it is split over ranks and
// micro-batches (the effective-batch rule with a SUM reducer). The
// denominator is summed over ranks and slots in order.
//
//   plugin_library: "path/to/libteam_class_weights_weighting.so"
//   loss_weighting {
//     name: "team_class_weights"
//     options { [type.googleapis.com/receipt_parity.TeamClassWeightsOptions] { class_weight: [1, 1, 1, 3] } }
//   }
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "examples/team/team_data_options.pb.h"
#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"
#include "weighting/loss_weighting.h"

namespace receipt_parity {
namespace {

constexpr char kName[] = "team_class_weights";

class TeamClassWeights : public LossWeighting {
 public:
  explicit TeamClassWeights(std::vector<double> class_weight)
      : class_weight_(std::move(class_weight)) {}

  std::vector<double> Weights(const UpdateComposition& update, int rank) const override {
    double total = 0;
    for (const auto& slots : update.by_rank) {
      for (const WeightedSlot& slot : slots) total += slot.valid ? ClassWeight(slot.label) : 0;
    }
    std::vector<double> weights;
    for (const WeightedSlot& slot : update.by_rank[rank]) {
      weights.push_back(slot.valid && total > 0 ? ClassWeight(slot.label) / total : 0);
    }
    return weights;
  }

  bool split_independent() const override { return true; }

 private:
  double ClassWeight(int label) const {
    return label >= 0 && label < static_cast<int>(class_weight_.size()) ? class_weight_[label] : 1;
  }
  const std::vector<double> class_weight_;
};

class TeamClassWeightsFactory : public TypedFactory<LossWeighting, TeamClassWeightsOptions> {
 public:
  std::string name() const override { return kName; }

 private:
  absl::StatusOr<std::unique_ptr<LossWeighting>> CreateTyped(
      const TeamClassWeightsOptions& options) const override {
    std::vector<double> weights(options.class_weight().begin(), options.class_weight().end());
    for (size_t k = 0; k < weights.size(); ++k) {
      if (!std::isfinite(weights[k]) || weights[k] <= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("class_weight[", k, "]: must be finite and > 0, got ", weights[k]));
      }
    }
    return std::make_unique<TeamClassWeights>(std::move(weights));
  }
};

PluginRegistrar<TeamClassWeightsFactory, LossWeighting> registrar;

}  // namespace
}  // namespace receipt_parity

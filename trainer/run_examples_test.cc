#include "trainer/run_examples.h"

#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <c10/util/hash.h>

#include "absl/strings/str_cat.h"
#include "artifacts/run_manifest.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

DataConfig Synthetic(int identities) {
  DataConfig config;
  config.mutable_synthetic()->set_num_identities(identities);
  config.mutable_synthetic()->set_seed(3);
  config.set_views_per_identity(3);
  config.set_validation_fraction(0.25);
  config.set_split_seed(9);
  config.set_augmentation_seed(21);
  config.set_image_size(12);
  return config;
}

std::vector<Slot> AllSlots(int64_t n) {
  std::vector<Slot> slots(n);
  for (int64_t i = 0; i < n; ++i) slots[i].dataset_index = n - 1 - i;  // any order
  return slots;
}

TEST(ChooseExamplePixelsTest, RendersSyntheticDataAboveTheThreshold) {
  EXPECT_EQ(ChooseExamplePixels(Synthetic(100), 100), ExamplePixels::kInMemory);
  EXPECT_EQ(ChooseExamplePixels(Synthetic(101), 100), ExamplePixels::kRenderedOnDemand);
  EXPECT_EQ(ChooseExamplePixels(Synthetic(1), 0), ExamplePixels::kRenderedOnDemand);
  DataConfig manifest;
  manifest.set_manifest_path("receipts.csv");
  EXPECT_EQ(ChooseExamplePixels(manifest, 0), ExamplePixels::kInMemory);
  EXPECT_EQ(LoadingFor(ExamplePixels::kRenderedOnDemand), PixelLoading::kIndexOnly);
  EXPECT_EQ(ExamplePixelsName(ExamplePixels::kRenderedOnDemand), "rendered_on_demand");
}

// The run's examples either way: the same ids, labels, pixels and keys.
TEST(MakeRunDataTest, RenderedOnDemandIsInMemoryBitwise) {
  const DataConfig config = Synthetic(40);
  absl::StatusOr<ReceiptSplit> whole = LoadReceipts(config);
  absl::StatusOr<ReceiptSplit> index = LoadReceipts(config, PixelLoading::kIndexOnly);
  ASSERT_TRUE(whole.ok() && index.ok()) << index.status();
  absl::StatusOr<RunData> held = MakeRunData(*whole, config, ExamplePixels::kInMemory, 0);
  absl::StatusOr<RunData> rendered =
      MakeRunData(*index, config, ExamplePixels::kRenderedOnDemand, /*cache_bytes=*/4096);
  ASSERT_TRUE(held.ok() && rendered.ok()) << rendered.status();
  EXPECT_EQ(rendered->train_ids, held->train_ids);
  EXPECT_EQ(rendered->train_labels, held->train_labels);
  EXPECT_EQ(rendered->validation_ids, held->validation_ids);
  for (auto part : {&RunData::train, &RunData::validation}) {
    const ExampleSource& want = *((*held).*part);
    const ExampleSource& got = *((*rendered).*part);
    ASSERT_EQ(got.size(), want.size());
    absl::StatusOr<ExampleTensors> a = want.Select(AllSlots(want.size()));
    absl::StatusOr<ExampleTensors> b = got.Select(AllSlots(got.size()));
    ASSERT_TRUE(a.ok() && b.ok()) << b.status();
    EXPECT_TRUE(at::equal(a->images, b->images));
    EXPECT_TRUE(at::equal(a->labels, b->labels));
    EXPECT_TRUE(at::equal(a->keys, b->keys));
  }
}

// What DataHash hashed before it streamed: the whole byte string at once.
std::string WholeBytesHash(const ReceiptSplit& data) {
  std::string bytes;
  for (const auto* part : {&data.train, &data.validation}) {
    for (const ReceiptExample& e : *part) {
      absl::StrAppend(&bytes, e.receipt_id, "/", e.label, "/", e.view, ";");
      bytes.append(reinterpret_cast<const char*>(e.pixels.data()), e.pixels.size() * sizeof(float));
    }
  }
  return c10::sha1(bytes).str();
}

// The streamed hash is the hash runs and checkpoints kept before, and the
// same over rendered pixels; another seed's pixels hash differently.
TEST(DataHashTest, StreamedFromEitherSourceIsTheWholeBytesHash) {
  // More examples than one hash chunk (4096).
  const DataConfig config = Synthetic(2000);
  absl::StatusOr<ReceiptSplit> whole = LoadReceipts(config);
  absl::StatusOr<ReceiptSplit> index = LoadReceipts(config, PixelLoading::kIndexOnly);
  ASSERT_TRUE(whole.ok() && index.ok());
  ASSERT_GT(whole->train.size(), 4096u);
  absl::StatusOr<RunData> held = MakeRunData(*whole, config, ExamplePixels::kInMemory, 0);
  absl::StatusOr<RunData> rendered =
      MakeRunData(*index, config, ExamplePixels::kRenderedOnDemand, 1 << 16);
  ASSERT_TRUE(held.ok() && rendered.ok());
  absl::StatusOr<std::string> from_memory = DataHash(*whole, *held->train, *held->validation);
  absl::StatusOr<std::string> from_renders =
      DataHash(*index, *rendered->train, *rendered->validation);
  ASSERT_TRUE(from_memory.ok() && from_renders.ok()) << from_renders.status();
  EXPECT_EQ(*from_memory, WholeBytesHash(*whole));
  EXPECT_EQ(*from_renders, *from_memory);

  DataConfig other = config;
  other.mutable_synthetic()->set_seed(4);
  absl::StatusOr<ReceiptSplit> other_index = LoadReceipts(other, PixelLoading::kIndexOnly);
  ASSERT_TRUE(other_index.ok());
  absl::StatusOr<RunData> other_data =
      MakeRunData(*other_index, other, ExamplePixels::kRenderedOnDemand, 0);
  ASSERT_TRUE(other_data.ok());
  absl::StatusOr<std::string> other_hash =
      DataHash(*other_index, *other_data->train, *other_data->validation);
  ASSERT_TRUE(other_hash.ok());
  EXPECT_NE(*other_hash, *from_memory);
}

TEST(DataHashTest, ASourceOfAnotherSizeIsRefused) {
  const DataConfig config = Synthetic(20);
  absl::StatusOr<ReceiptSplit> index = LoadReceipts(config, PixelLoading::kIndexOnly);
  ASSERT_TRUE(index.ok());
  absl::StatusOr<RunData> data = MakeRunData(*index, config, ExamplePixels::kRenderedOnDemand, 0);
  ASSERT_TRUE(data.ok());
  absl::StatusOr<std::string> hash = DataHash(*index, *data->validation, *data->validation);
  ASSERT_FALSE(hash.ok());
  EXPECT_NE(hash.status().message().find("a source of"), std::string::npos) << hash.status();
}

}  // namespace
}  // namespace receipt_parity

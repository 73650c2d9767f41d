#include "bench/receipt_pool.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "data/label_map.h"
#include "io/atomic_file.h"

namespace receipt_parity {
namespace {

template <typename T>
std::string Bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()),
                     values.size() * sizeof(T));
}

// `bytes` as whole records of `record_bytes`, or an error naming `path`.
template <typename T>
absl::StatusOr<std::vector<T>> Records(const std::string& path,
                                       const std::string& bytes,
                                       size_t values_per_record) {
  const size_t record_bytes = values_per_record * sizeof(T);
  if (bytes.size() % record_bytes != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", bytes.size(), " bytes is not a whole number of ",
                     record_bytes, "-byte records"));
  }
  std::vector<T> values(bytes.size() / sizeof(T));
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

}  // namespace

ReceiptPool PoolOf(const ReceiptSplit& split) {
  ReceiptPool pool;
  pool.image_size = split.image_size;
  for (const ReceiptExample& e : split.train) {
    pool.images.insert(pool.images.end(), e.pixels.begin(), e.pixels.end());
    pool.labels.push_back(e.label);
  }
  return pool;
}

absl::Status WriteReceiptPool(const ReceiptPool& pool,
                              const std::string& images_path,
                              const std::string& labels_path) {
  const int64_t pixels = int64_t{pool.image_size} * pool.image_size;
  if (pool.size() == 0 || pixels == 0 ||
      static_cast<int64_t>(pool.images.size()) != pool.size() * pixels) {
    return absl::InvalidArgumentError(absl::StrCat(
        "receipt pool: ", pool.images.size(), " pixels for ", pool.size(),
        " labels of ", pool.image_size, "x", pool.image_size, " images"));
  }
  if (absl::Status s = WriteFileAtomically(images_path, Bytes(pool.images)); !s.ok()) {
    return s;
  }
  return WriteFileAtomically(labels_path, Bytes(pool.labels));
}

absl::StatusOr<ReceiptPool> ReadReceiptPool(const std::string& images_path,
                                            const std::string& labels_path,
                                            int image_size) {
  if (image_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("receipt pool: image size must be >= 1, got ", image_size));
  }
  absl::StatusOr<std::string> image_bytes = ReadFileToString(images_path);
  if (!image_bytes.ok()) return image_bytes.status();
  absl::StatusOr<std::string> label_bytes = ReadFileToString(labels_path);
  if (!label_bytes.ok()) return label_bytes.status();
  ReceiptPool pool;
  pool.image_size = image_size;
  absl::StatusOr<std::vector<float>> images = Records<float>(
      images_path, *image_bytes, static_cast<size_t>(image_size) * image_size);
  if (!images.ok()) return images.status();
  absl::StatusOr<std::vector<int64_t>> labels =
      Records<int64_t>(labels_path, *label_bytes, 1);
  if (!labels.ok()) return labels.status();
  pool.images = *std::move(images);
  pool.labels = *std::move(labels);
  const int64_t count =
      static_cast<int64_t>(pool.images.size()) / (int64_t{image_size} * image_size);
  if (count != pool.size() || count == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(images_path, " holds ", count, " images of ", image_size, "x",
                     image_size, " but ", labels_path, " holds ", pool.size(),
                     " labels"));
  }
  for (int64_t i = 0; i < pool.size(); ++i) {
    if (pool.labels[i] < 0 || pool.labels[i] >= kNumLabels) {
      return absl::InvalidArgumentError(
          absl::StrCat(labels_path, ": label ", i, " is ", pool.labels[i],
                       ", not in [0, ", kNumLabels, ")"));
    }
  }
  return pool;
}

}  // namespace receipt_parity

// The store a rank uses (runtime/process_group.h): c10d's PrefixStore over
// the TCPStore, every blocking call held under a CallDeadline
// (runtime/call_deadline.h) of the store's timeout plus a margin, so that a
// store whose host froze ends this rank within that bound instead of
// blocking it forever. Keys are the PrefixStore's.
//
// Thread safety: as c10d's stores.
#ifndef RECEIPT_PARITY_RUNTIME_GUARDED_STORE_H_
#define RECEIPT_PARITY_RUNTIME_GUARDED_STORE_H_

#include <chrono>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

namespace receipt_parity {

// How long past the store's own timeout a call may block before the rank
// gives up.
inline constexpr std::chrono::seconds kStoreDeadlineMargin{5};

class GuardedStore : public c10d::PrefixStore {
 public:
  // `rank` names this rank in the line a deadline writes.
  GuardedStore(std::string prefix, c10::intrusive_ptr<c10d::Store> store, int rank);

  using c10d::PrefixStore::set;
  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  using c10d::PrefixStore::compareSet;
  std::vector<uint8_t> compareSet(const std::string& key,
                                  const std::vector<uint8_t>& expected_value,
                                  const std::vector<uint8_t>& desired_value) override;
  std::vector<uint8_t> get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t value) override;
  bool deleteKey(const std::string& key) override;
  int64_t getNumKeys() override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;
  void append(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<std::vector<uint8_t>> multiGet(const std::vector<std::string>& keys) override;
  void multiSet(const std::vector<std::string>& keys,
                const std::vector<std::vector<uint8_t>>& values) override;

 private:
  // The limit of one call waiting `timeout` (the store's own by default).
  std::chrono::milliseconds Limit(std::chrono::milliseconds timeout) const;
  std::string What(const std::string& call, const std::string& key) const;

  int rank_;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_RUNTIME_GUARDED_STORE_H_

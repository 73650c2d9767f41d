#include "runtime/guarded_store.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/call_deadline.h"

namespace receipt_parity {

GuardedStore::GuardedStore(std::string prefix, c10::intrusive_ptr<c10d::Store> store, int rank)
    : c10d::PrefixStore(std::move(prefix), std::move(store)), rank_(rank) {}

std::chrono::milliseconds GuardedStore::Limit(std::chrono::milliseconds timeout) const {
  return timeout + std::chrono::duration_cast<std::chrono::milliseconds>(kStoreDeadlineMargin);
}

std::string GuardedStore::What(const std::string& call, const std::string& key) const {
  return absl::StrCat("rank ", rank_, ": the store's answer to ", call, "(", key, ")");
}

void GuardedStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  const CallDeadline deadline(Limit(getTimeout()), What("set", key));
  c10d::PrefixStore::set(key, value);
}

std::vector<uint8_t> GuardedStore::compareSet(const std::string& key,
                                              const std::vector<uint8_t>& expected_value,
                                              const std::vector<uint8_t>& desired_value) {
  const CallDeadline deadline(Limit(getTimeout()), What("compareSet", key));
  return c10d::PrefixStore::compareSet(key, expected_value, desired_value);
}

std::vector<uint8_t> GuardedStore::get(const std::string& key) {
  const CallDeadline deadline(Limit(getTimeout()), What("get", key));
  return c10d::PrefixStore::get(key);
}

int64_t GuardedStore::add(const std::string& key, int64_t value) {
  const CallDeadline deadline(Limit(getTimeout()), What("add", key));
  return c10d::PrefixStore::add(key, value);
}

bool GuardedStore::deleteKey(const std::string& key) {
  const CallDeadline deadline(Limit(getTimeout()), What("deleteKey", key));
  return c10d::PrefixStore::deleteKey(key);
}

int64_t GuardedStore::getNumKeys() {
  const CallDeadline deadline(Limit(getTimeout()), What("getNumKeys", ""));
  return c10d::PrefixStore::getNumKeys();
}

bool GuardedStore::check(const std::vector<std::string>& keys) {
  const CallDeadline deadline(Limit(getTimeout()), What("check", absl::StrJoin(keys, ",")));
  return c10d::PrefixStore::check(keys);
}

void GuardedStore::wait(const std::vector<std::string>& keys) {
  const CallDeadline deadline(Limit(getTimeout()), What("wait", absl::StrJoin(keys, ",")));
  c10d::PrefixStore::wait(keys);
}

void GuardedStore::wait(const std::vector<std::string>& keys,
                        const std::chrono::milliseconds& timeout) {
  const CallDeadline deadline(Limit(timeout), What("wait", absl::StrJoin(keys, ",")));
  c10d::PrefixStore::wait(keys, timeout);
}

void GuardedStore::append(const std::string& key, const std::vector<uint8_t>& value) {
  const CallDeadline deadline(Limit(getTimeout()), What("append", key));
  c10d::PrefixStore::append(key, value);
}

std::vector<std::vector<uint8_t>> GuardedStore::multiGet(const std::vector<std::string>& keys) {
  const CallDeadline deadline(Limit(getTimeout()), What("multiGet", absl::StrJoin(keys, ",")));
  return c10d::PrefixStore::multiGet(keys);
}

void GuardedStore::multiSet(const std::vector<std::string>& keys,
                            const std::vector<std::vector<uint8_t>>& values) {
  const CallDeadline deadline(Limit(getTimeout()), What("multiSet", absl::StrJoin(keys, ",")));
  c10d::PrefixStore::multiSet(keys, values);
}

}  // namespace receipt_parity

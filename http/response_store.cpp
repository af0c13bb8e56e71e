#include "http/response_store.hpp"

namespace parley::http {

void ResponseStore::set_max_responses(size_t max_responses) {
  std::lock_guard lock(mutex_);
  max_responses_ = max_responses;
  evict();
}

void ResponseStore::put(const std::string& id, StoredResponse response) {
  auto stored = std::make_shared<const StoredResponse>(std::move(response));
  std::lock_guard lock(mutex_);
  if (auto it = by_id_.find(id); it != by_id_.end()) {  // the same id again: the newer one, at the young end
    oldest_first_.erase(it->second.age);
    by_id_.erase(it);
  }
  oldest_first_.push_back(id);
  by_id_.emplace(id, Entry{std::move(stored), std::prev(oldest_first_.end())});
  evict();
}

std::shared_ptr<const StoredResponse> ResponseStore::get(const std::string& id) const {
  std::lock_guard lock(mutex_);
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second.response;
}

bool ResponseStore::remove(const std::string& id) {
  std::lock_guard lock(mutex_);
  const auto it = by_id_.find(id);
  if (it == by_id_.end()) return false;
  oldest_first_.erase(it->second.age);
  by_id_.erase(it);
  return true;
}

size_t ResponseStore::size() const {
  std::lock_guard lock(mutex_);
  return by_id_.size();
}

void ResponseStore::evict() {
  while (by_id_.size() > max_responses_) {
    by_id_.erase(oldest_first_.front());
    oldest_first_.pop_front();
  }
}

}  // namespace parley::http

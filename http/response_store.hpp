// The Responses API's stored responses (`store`, default true): what GET /v1/responses/{id} shows and what a later
// request's previous_response_id continues, kept in memory, the newest --responses-store-max of them. Thread-safe:
// the HTTP sessions run on several io threads.
#pragma once
#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace parley::http {

struct StoredResponse {
  nlohmann::ordered_json response;  // the Response object, as the client got it
  nlohmann::ordered_json input;     // the input items it answered, its previous responses' turns included
};

class ResponseStore {
 public:
  explicit ResponseStore(size_t max_responses = 1000) : max_responses_(max_responses) {}
  void set_max_responses(size_t max_responses);  // the oldest beyond it are dropped now
  // Kept under its id (the response's own), the oldest dropped past the bound; 0 keeps nothing.
  void put(const std::string& id, StoredResponse response);
  std::shared_ptr<const StoredResponse> get(const std::string& id) const;  // nullptr: unknown or dropped
  bool remove(const std::string& id);                                      // false: unknown
  size_t size() const;

 private:
  void evict();  // under mutex_
  struct Entry {
    std::shared_ptr<const StoredResponse> response;
    std::list<std::string>::iterator age;  // its place in oldest_first_
  };
  mutable std::mutex mutex_;
  size_t max_responses_;
  std::list<std::string> oldest_first_;
  std::unordered_map<std::string, Entry> by_id_;
};

}  // namespace parley::http

// What the server keeps for /admin: the live generations by request id (so that an abort by id reaches
// every engine request of it, an n > 1 request's children included), and the last views of the engine,
// refreshed in the background so that the live feed never waits behind a busy worker.
#pragma once
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/engine_client.hpp"

namespace parley::http {

class LiveRequests {
 public:
  // Registered while the generation runs; the handle's destruction unregisters it.
  struct Entry {
    LiveRequests* registry;
    std::string id;
    ~Entry() { registry->remove(id); }
  };
  // prompt: its text for the admin console (--admin-show-prompts), "" otherwise.
  std::unique_ptr<Entry> add(const std::string& id, std::vector<std::string> engine_ids, std::string prompt = "");
  // The engine requests of a request id (or the one engine request id given); empty when none is live.
  std::vector<std::string> engine_ids(const std::string& id) const;
  // Engine request id -> its prompt text, for every live request registered with one.
  std::map<std::string, std::string> prompts() const;

 private:
  struct Live {
    std::vector<std::string> engine_ids;
    std::string prompt;
  };
  void remove(const std::string& id);
  mutable std::mutex mutex_;
  std::map<std::string, Live> live_;
};

class AdminSnapshots {
 public:
  struct View {
    std::string requests = "{}", actors = "{}", metrics;
    long age_ms = -1;  // -1: no answer yet
  };
  // The latest views; asks the engine again (without waiting) when they are older than a quarter second.
  View current(EngineClient& engine);

 private:
  struct State {
    std::mutex mutex;
    View view;
    std::chrono::steady_clock::time_point answered_at{}, asked_at{};
    bool asking = false;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();  // engine callbacks may outlive the server
};

}  // namespace parley::http

// `parley admin`'s console without the terminal: the last snapshot of /admin/events, the sort and the
// selected request, what a key asks the server to do, and the screen as lines. The ncurses shell
// (actors/admin_command.cpp) only draws the lines and passes the keys.
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace parley {

class AdminConsole {
 public:
  // An /admin action for a key: method, path, body, and what the message line calls it.
  struct Call {
    std::string method, path, body, what;
  };
  // Sort orders of the requests table ('s' cycles them).
  enum class Sort { Id, State, Output, Blocks };

  explicit AdminConsole(std::string url) : url_(std::move(url)) {}
  void update(const nlohmann::json& snapshot);
  // A key: navigation changes the view; an action key returns the call to make.
  std::optional<Call> on_key(int key);
  void on_result(const std::string& what, int status, const std::string& body);
  void on_error(const std::string& message) { message_ = message; }
  std::vector<std::string> render(int width, int height) const;

  bool quit() const { return quit_; }
  const std::string& selected() const { return selected_; }
  Sort sort() const { return sort_; }

 private:
  std::vector<nlohmann::json> sorted_requests() const;

  std::string url_;
  nlohmann::json snapshot_;
  Sort sort_ = Sort::Id;
  std::string selected_;  // an engine request id ("" : the first row)
  std::string message_ = "keys: up/down (j/k) select, a abort, d drain, r resume, l log level, s sort, q quit";
  bool quit_ = false;
};

}  // namespace parley

#include "actors/admin_console.hpp"

#include <algorithm>
#include <cstdio>

namespace parley {
namespace {

const char* const kLevels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
constexpr int kKeyUp = 0403, kKeyDown = 0402;  // ncurses' KEY_UP and KEY_DOWN

std::string row(const char* fmt, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

std::string text(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "-";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

}  // namespace

void AdminConsole::update(const nlohmann::json& snapshot) {
  snapshot_ = snapshot;
  const auto rows = sorted_requests();
  const bool still_live =
      std::any_of(rows.begin(), rows.end(), [&](const auto& r) { return r.value("id", "") == selected_; });
  if (!still_live) selected_ = rows.empty() ? "" : rows.front().value("id", "");
}

std::vector<nlohmann::json> AdminConsole::sorted_requests() const {
  std::vector<nlohmann::json> rows;
  if (snapshot_.contains("requests") && snapshot_["requests"].contains("requests"))
    for (const auto& r : snapshot_["requests"]["requests"]) rows.push_back(r);
  auto key = [&](const nlohmann::json& r) -> std::pair<std::string, long> {
    switch (sort_) {
      case Sort::State:
        return {r.value("state", ""), 0};
      case Sort::Output:
        return {"", -r.value("output_tokens", 0L)};
      case Sort::Blocks:
        return {"", -long(r.value("blocks", nlohmann::json::array()).size())};
      case Sort::Id:
        break;
    }
    return {r.value("id", ""), 0};
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) { return key(a) < key(b); });
  return rows;
}

std::optional<AdminConsole::Call> AdminConsole::on_key(int key) {
  const auto rows = sorted_requests();
  auto at = std::find_if(rows.begin(), rows.end(), [&](const auto& r) { return r.value("id", "") == selected_; });
  switch (key) {
    case 'q':
      quit_ = true;
      return std::nullopt;
    case 'j':
    case kKeyDown:
      if (at != rows.end() && at + 1 != rows.end()) selected_ = (at + 1)->value("id", "");
      return std::nullopt;
    case 'k':
    case kKeyUp:
      if (at != rows.end() && at != rows.begin()) selected_ = (at - 1)->value("id", "");
      return std::nullopt;
    case 's':
      sort_ = Sort((int(sort_) + 1) % 4);
      return std::nullopt;
    case 'a':
      if (selected_.empty()) return std::nullopt;
      return Call{"POST", "/admin/requests/" + selected_ + "/abort", "", "abort " + selected_};
    case 'd':
      return Call{"POST", "/admin/drain", "", "drain"};
    case 'r':
      return Call{"POST", "/admin/resume", "", "resume"};
    case 'l': {
      const std::string now = snapshot_.value("log_level", "info");
      size_t i = 0;
      while (i < 7 && now != kLevels[i]) ++i;
      const std::string next = kLevels[(i + 1) % 7];
      return Call{"PUT", "/admin/log-level", nlohmann::json{{"level", next}}.dump(), "log level " + next};
    }
    default:
      return std::nullopt;
  }
}

void AdminConsole::on_result(const std::string& what, int status, const std::string& body) {
  if (status >= 200 && status < 300) {
    message_ = what + ": done";
    return;
  }
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  const std::string why = !j.is_discarded() && j.contains("error") ? j["error"].value("message", body) : body;
  message_ = what + ": " + std::to_string(status) + " " + why;
}

std::vector<std::string> AdminConsole::render(int width, int height) const {
  std::vector<std::string> out;
  const nlohmann::json& view = snapshot_.contains("requests") ? snapshot_["requests"] : nlohmann::json::object();
  const nlohmann::json pool = view.value("kv_blocks", nlohmann::json::object());
  const auto rows = sorted_requests();
  static const char* const sort_names[] = {"id", "state", "output", "blocks"};
  out.push_back(row("Parley admin  %s  live %zu  KV %s/%s used  %s  log %s  snapshot %s ms old", url_.c_str(),
                    rows.size(), text(pool, "used").c_str(), text(pool, "total").c_str(),
                    snapshot_.value("draining", false) ? "DRAINING" : "accepting",
                    snapshot_.value("log_level", "?").c_str(), text(snapshot_, "age_ms").c_str()));
  out.push_back(message_);
  out.push_back("");
  out.push_back(row("%-12s %8s %10s", "ACTOR", "MAILBOX", "HANDLED"));
  auto actors = snapshot_.contains("actors") ? snapshot_["actors"].value("actors", nlohmann::json::array())
                                             : nlohmann::json::array();
  std::stable_sort(actors.begin(), actors.end(), [](const auto& a, const auto& b) {
    return a.value("mailbox_depth", 0) > b.value("mailbox_depth", 0);
  });
  for (const auto& a : actors)
    out.push_back(row("%-12s %8s %10s", text(a, "name").c_str(),
                      a.value("busy", false) ? "busy" : text(a, "mailbox_depth").c_str(),
                      text(a, "messages_handled").c_str()));
  out.push_back("");
  out.push_back(row("  %-28s %-22s %6s %6s %8s %6s %3s   (sorted by %s)", "REQUEST", "STATE", "PROMPT", "OUTPUT",
                    "COMPUTED", "BLOCKS", "N", sort_names[int(sort_)]));
  for (const auto& r : rows)
    out.push_back(row("%s %-28s %-22s %6s %6s %8s %6zu %3s", r.value("id", "") == selected_ ? ">" : " ",
                      text(r, "id").c_str(), text(r, "state").c_str(), text(r, "prompt_tokens").c_str(),
                      text(r, "output_tokens").c_str(), text(r, "computed_tokens").c_str(),
                      r.value("blocks", nlohmann::json::array()).size(), text(r, "n").c_str()));
  if (int(out.size()) > height) out.resize(size_t(std::max(0, height)));
  for (auto& line : out)
    if (int(line.size()) > width) line.resize(size_t(std::max(0, width)));
  return out;
}

}  // namespace parley

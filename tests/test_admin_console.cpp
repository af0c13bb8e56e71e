// `parley admin`'s console model: what a snapshot renders, what each key asks the server to do.
#include <catch2/catch.hpp>

#include "actors/admin_console.hpp"

using parley::AdminConsole;

namespace {

nlohmann::json snapshot() {
  return nlohmann::json::parse(R"({"age_ms": 120, "draining": false, "log_level": "info",
    "actors": {"actors": [{"name": "worker", "mailbox_depth": 0, "messages_handled": 10},
                          {"name": "scheduler", "mailbox_depth": 3, "messages_handled": 40}]},
    "requests": {"kv_blocks": {"total": 64, "used": 5, "cached": 0, "free": 59},
                 "requests": [{"id": "cmpl-b-0", "state": "running", "prompt_tokens": 9, "output_tokens": 30,
                               "computed_tokens": 38, "blocks": [1, 2, 3], "n": 1},
                              {"id": "cmpl-a-0", "state": "waiting", "prompt_tokens": 5, "output_tokens": 2,
                               "computed_tokens": 0, "blocks": [4, 5], "n": 1}]}})");
}

std::string screen(const AdminConsole& c) {
  std::string s;
  for (const auto& line : c.render(160, 40)) s += line + "\n";
  return s;
}

}  // namespace

TEST_CASE("the admin console renders the snapshot and selects the first request") {
  AdminConsole c("http://127.0.0.1:8000");
  c.update(snapshot());
  const std::string s = screen(c);
  CHECK_THAT(s, Catch::Contains("live 2  KV 5/64 used  accepting  log info  snapshot 120 ms old"));
  CHECK_THAT(s, Catch::Contains("> cmpl-a-0"));   // sorted by id
  CHECK(s.find("scheduler") < s.find("worker"));  // actors by mailbox depth
  CHECK(c.selected() == "cmpl-a-0");
  CHECK(c.render(20, 3).size() == 3);
  CHECK(c.render(20, 3)[0].size() == 20);
}

TEST_CASE("the admin console keys select and act") {
  AdminConsole c("http://x:1");
  c.update(snapshot());
  CHECK_FALSE(c.on_key('j'));
  CHECK(c.selected() == "cmpl-b-0");
  c.on_key('j');  // the last row stays selected
  CHECK(c.selected() == "cmpl-b-0");
  const auto abort = c.on_key('a');
  REQUIRE(abort);
  CHECK(abort->method == "POST");
  CHECK(abort->path == "/admin/requests/cmpl-b-0/abort");
  CHECK(c.on_key('d')->path == "/admin/drain");
  CHECK(c.on_key('r')->path == "/admin/resume");
  const auto level = c.on_key('l');
  CHECK(level->method == "PUT");
  CHECK(level->body == R"({"level":"warn"})");
  c.on_key('s');
  CHECK(c.sort() == AdminConsole::Sort::State);
  c.on_key('k');
  c.on_result("drain", 403, R"({"error": {"message": "The read-only admin token may not act."}})");
  CHECK_THAT(screen(c), Catch::Contains("drain: 403 The read-only admin token may not act."));
  c.on_key('q');
  CHECK(c.quit());
}

TEST_CASE("a selected request that ends moves the selection to a live one") {
  AdminConsole c("http://x:1");
  c.update(snapshot());
  c.on_key('j');
  auto s = snapshot();
  s["requests"]["requests"].erase(0);  // cmpl-b-0 ended
  c.update(s);
  CHECK(c.selected() == "cmpl-a-0");
}

// `parley admin`: the admin console in a terminal (ncurses), or one snapshot as JSON for scripts.
#include <ncurses.h>

#include <cstdio>
#include <iostream>

#include "actors/admin_console.hpp"
#include "actors/commands.hpp"
#include "http/admin_client.hpp"

namespace parley {
namespace {

// Restores the terminal however the loop ends.
struct Screen {
  Screen() {
    initscr();
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    curs_set(0);
  }
  ~Screen() { endwin(); }
};

void refresh_view(const http::AdminClient& client, AdminConsole& console) {
  const http::AdminReply r = client.snapshot();
  if (!r.error.empty()) return console.on_error("cannot read the feed: " + r.error);
  if (r.status != 200) return console.on_result("the feed", r.status, r.body);
  const nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_discarded()) return console.on_error("the feed sent something that is not JSON");
  console.update(j);
}

}  // namespace

int run_admin(const AdminOptions& o) {
  const http::AdminClient client(o.url, o.token);
  if (o.once) {
    const http::AdminReply r = client.snapshot();
    if (r.status != 200) {
      std::cerr << "parley admin: " << (r.error.empty() ? std::to_string(r.status) + " " + r.body : r.error) << "\n";
      return 1;
    }
    std::cout << (o.json ? nlohmann::json::parse(r.body).dump(2) : r.body) << "\n";
    return 0;
  }
  AdminConsole console(o.url);
  Screen screen;
  timeout(int(o.interval_s * 1000));
  refresh_view(client, console);
  while (!console.quit()) {
    erase();
    int row = 0;
    for (const std::string& line : console.render(COLS, LINES)) mvaddnstr(row++, 0, line.c_str(), COLS);
    refresh();
    const int key = getch();
    if (key != ERR)
      if (auto call = console.on_key(key)) {
        const http::AdminReply r = client.call(call->method, call->path, call->body);
        if (!r.error.empty())
          console.on_error(call->what + ": " + r.error);
        else
          console.on_result(call->what, r.status, r.body);
      }
    if (!console.quit()) refresh_view(client, console);
  }
  return 0;
}

}  // namespace parley

// The /admin actions, run by a session for the router's AdminAction: abort (every engine request of a live
// request), drain and resume, the log level, the prefix cache reset. Each writes one audit log line.
#pragma once
#include <functional>
#include <string>

#include "http/session_common.hpp"

namespace parley::http {

// who: the client's address, for the audit line. reply(status, JSON body) may come later (the prefix cache).
void run_admin_action(ServerContext& ctx, const AdminAction& a, const std::string& who,
                      std::function<void(int, std::string)> reply);

}  // namespace parley::http

// The router's own checks before any endpoint (http/router.cpp): the credentials (one Authorization header, the
// Bearer scheme in any case), and the excerpt a log line shows of a client's string (http/log_text.hpp).
#include "http/log_text.hpp"
#include "http/router.hpp"
#include "tests/openai_test_util.hpp"

using namespace parley::http;
using parley::openai_test::context;

namespace {

const RouterConfig kKeyed{"sekrit", "adm", "", "0.1.0", ""};

RouteResult route(const std::string& target, const std::string& authorization, int authorization_headers = 1,
                  const std::string& method = "GET") {
  HttpRequestView view{method, target, authorization, ""};
  view.authorization_headers = authorization_headers;
  return handle_request(view, kKeyed, context());
}

}  // namespace

TEST_CASE("The Bearer scheme matches in any case, with one or more spaces before the key", "[router]") {
  for (const char* ok : {"Bearer sekrit", "bearer sekrit", "BEARER sekrit", "bEaReR  sekrit"})
    CHECK(bearer_matches(ok, "sekrit"));
  for (const char* bad : {"Bearer sekri", "Bearer sekritt", "Bearersekrit", "Bearer", "Bearer ", "Basic sekrit",
                          "Bearer: sekrit", "xBearer sekrit", "sekrit", ""})
    CHECK_FALSE(bearer_matches(bad, "sekrit"));
  CHECK(route("/v1/models", "bearer sekrit").status == 200);
  CHECK(route("/admin/requests", "BEARER adm").kind == RouteResult::Kind::AdminRequests);
}

TEST_CASE("Two Authorization headers are a 400 on every path, before the key is looked at", "[router]") {
  for (const char* target : {"/v1/models", "/health", "/admin/requests"}) {
    const RouteResult r = route(target, "Bearer sekrit", 2);
    CHECK(r.status == 400);
    CHECK(nlohmann::json::parse(r.body)["error"]["message"] ==
          "Only one Authorization header is allowed; this request has 2.");
  }
  CHECK(route("/v1/models", "Bearer wrong", 1).status == 401);
  CHECK(route("/health", "", 0).status == 200);
}

TEST_CASE("The route table: each path its methods, a tree of paths under a trailing slash, 404 elsewhere", "[router]") {
  auto status = [](const std::string& method, const std::string& target) {
    return route(target, "Bearer sekrit", 1, method).status;
  };
  CHECK(status("POST", "/v1/models") == 405);
  CHECK(status("GET", "/v1/chat/completions") == 405);
  CHECK(status("PUT", "/v1/responses/resp_1") == 405);
  CHECK(status("GET", "/v1/responses/resp_1") == 404);  // under /v1/responses/: no such stored response
  CHECK(status("GET", "/v1/responses/a/b") == 404);
  CHECK(status("POST", "/v1/ws") == 426);  // any method: it speaks websocket
  CHECK(status("GET", "/v1/embeddings/x") == 404);
  CHECK(status("GET", "/health?probe=1") == 200);  // the query is not the path
  // /admin answers every method itself: a PUT without the token is a 401, not the table's 405.
  CHECK(route("/admin/log-level", "", 0, "PUT").status == 401);
}

TEST_CASE("A log line shows a client's string cut to 64 bytes with its length, control bytes escaped", "[router]") {
  CHECK(log_excerpt("user-7") == "user-7");
  CHECK(log_excerpt(std::string(64, 'a')) == std::string(64, 'a'));
  CHECK(log_excerpt(std::string(900000, 'a')) == std::string(64, 'a') + "...(900000 bytes)");
  CHECK(log_excerpt("a\nb\x7f\x01") == "a\\x0ab\\x7f\\x01");
  CHECK(log_excerpt("abcdef", 3) == "abc...(6 bytes)");
  CHECK(log_excerpt("caf\xc3\xa9") == "caf\xc3\xa9");  // UTF-8 passes as it is
}

// Shared by the OpenAI protocol tests: the tok512 tokenizer, a serving context over it, checks that a request
// parses or fails with an exact error body, and SSE text split into its events.
#pragma once
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "http/openai_protocol.hpp"
#include "tests/test_support.hpp"

namespace parley::openai_test {

using namespace parley::http;

inline const Tokenizer& tok512() {
  static const Tokenizer tok(read_llama2c_tokenizer(test::shared_model("tok512.bin"), 512));
  return tok;
}

// stories260K's vocabulary with a short context, so over-context cases stay small.
inline constexpr long kCreated = 1700000000;  // the "created" every rendered response carries

// Splits SSE text into its events' JSON, checking each is "data: ...\n\n".
inline std::vector<nlohmann::json> events(const std::string& sse) {
  std::vector<nlohmann::json> out;
  for (size_t at = 0; at < sse.size();) {
    REQUIRE(sse.compare(at, 6, "data: ") == 0);
    const size_t end = sse.find("\n\n", at);
    REQUIRE(end != std::string::npos);
    out.push_back(nlohmann::json::parse(sse.substr(at + 6, end - at - 6)));
    at = end + 2;
  }
  return out;
}

inline ServingContext context() { return ServingContext{&tok512(), "stories260K", 64, nullptr}; }
// A context for requests with tools: a 512-token context, the parser given (hermes), auto tool choice allowed.
inline ServingContext tool_context(std::optional<ToolCallParser> parser = ToolCallParser::Hermes,
                                   bool allow_auto = true) {
  ServingContext ctx = context();
  ctx.max_model_len = 512;
  ctx.tools.parser = parser;
  ctx.tools.enable_auto_tool_choice = allow_auto;
  return ctx;
}

inline GenerateRequest parse_ok(Endpoint ep, const std::string& body) {
  INFO(body);
  auto r = parse_generate_request(ep, body, context());
  if (auto* e = std::get_if<ApiError>(&r)) FAIL(e->message);
  return std::get<GenerateRequest>(r);
}

inline ApiError parse_error(Endpoint ep, const std::string& body) {
  INFO(body);
  auto r = parse_generate_request(ep, body, context());
  REQUIRE(std::holds_alternative<ApiError>(r));
  return std::get<ApiError>(r);
}

// The rendered body must be exactly {"error": {message, type, param, code}}, param and code null when "".
inline void check_error(const ApiError& e, int status, const std::string& type, const std::string& param,
                        const std::string& message, const std::string& code = "") {
  CHECK(e.status == status);
  auto or_null = [](const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); };
  const nlohmann::json expected = {
      {"error", {{"message", message}, {"type", type}, {"param", or_null(param)}, {"code", or_null(code)}}}};
  CHECK(nlohmann::json::parse(error_body(e)) == expected);
}

}  // namespace parley::openai_test

// Tool calls in model output: the three formats, one scanner for the finished text and the stream.
//
// The scanner decides the output from the front, one piece at a time: content, whitespace dropped next to a
// call, or a call. A piece is decided only when no later text can change it (else it waits: NeedMore), so a
// stream fed any split of an output decides the same pieces as one call on the whole text.
#include "http/tool_calls.hpp"

#include <cstdint>
#include <cstdio>
#include <stdexcept>

#include "http/json_brackets.hpp"

namespace parley::http {
namespace {

using ojson = nlohmann::ordered_json;
constexpr size_t npos = std::string_view::npos;
constexpr std::string_view kHermesStart = "<tool_call>", kHermesEnd = "</tool_call>";
constexpr std::string_view kMistralStart = "[TOOL_CALLS]", kPythonTag = "<|python_tag|>";
constexpr std::string_view kOpenAiStart = "<|channel|>commentary to=functions.", kOpenAiArguments = "<|message|>",
                           kOpenAiEnd = "<|call|>";
constexpr int kMaxJsonDepth = 64;  // as request bodies: deeper model output stays content

struct NamedParser {
  ToolCallParser parser;
  std::string_view name;
};
constexpr NamedParser kParsers[] = {{ToolCallParser::Llama3Json, "llama3_json"},
                                    {ToolCallParser::Hermes, "hermes"},
                                    {ToolCallParser::Mistral, "mistral"},
                                    {ToolCallParser::OpenAi, "openai"}};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
size_t skip_space(std::string_view s, size_t i = 0) {
  while (i < s.size() && is_space(s[i])) ++i;
  return i;
}
std::string_view trim(std::string_view s) {
  const size_t b = skip_space(s);
  size_t e = s.size();
  while (e > b && is_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}
// s may still grow into marker (a strict prefix of it; "" included).
bool could_become(std::string_view s, std::string_view marker) {
  return s.size() < marker.size() && marker.starts_with(s);
}

// The end (one past) of the JSON object or array opening at s[i]: npos while s ends inside it, 0 when it
// nests deeper than kMaxJsonDepth. Only strings and brackets are followed; the parse that comes next checks.
size_t json_value_end(std::string_view s, size_t i) {
  JsonBrackets brackets;
  int depth = 0;
  for (size_t k = i; k < s.size(); ++k) {
    const int step = brackets.feed(s[k]);
    depth += step;
    if (step > 0 && depth > kMaxJsonDepth) return 0;
    if (step < 0 && depth == 0) return k + 1;
  }
  return npos;
}

// {"name": "f", <argument key>: {...}}: a call when name is a non-empty string and the arguments an object.
std::optional<ToolCall> call_from(const ojson& j, std::string_view argument_key, std::string_view other_key = "") {
  if (!j.is_object()) return std::nullopt;
  const auto name = j.find("name");
  if (name == j.end() || !name->is_string() || name->get_ref<const std::string&>().empty()) return std::nullopt;
  auto args = j.find(std::string(argument_key));
  if (args == j.end() && !other_key.empty()) args = j.find(std::string(other_key));
  if (args == j.end() || !args->is_object()) return std::nullopt;
  return ToolCall{name->get<std::string>(), args->dump(-1, ' ', false, ojson::error_handler_t::replace)};
}

// The calls in one JSON value (its whole text): an object, or with lists, an array of objects; none if any
// element is not a call.
std::vector<ToolCall> calls_in(std::string_view text, std::string_view key, std::string_view other_key, bool lists) {
  if (text.empty() || json_value_end(text, 0) != text.size()) return {};
  const ojson j = ojson::parse(text, nullptr, false);
  if (j.is_discarded()) return {};
  std::vector<ToolCall> calls;
  if (j.is_array() && lists) {
    for (const ojson& element : j) {
      auto call = call_from(element, key, other_key);
      if (!call) return {};
      calls.push_back(std::move(*call));
    }
  } else if (auto call = call_from(j, key, other_key)) {
    calls.push_back(std::move(*call));
  }
  return calls;
}

// What stands at the start of some text: no call, not known yet, a call (or a list), or a marker whose
// call does not parse (the marker goes out as content and the text after it is read on).
struct CallScan {
  enum Kind { NotACall, NeedMore, Calls, Malformed, Separator } kind = NotACall;
  size_t length = 0;  // Calls: the calls' text; Malformed: the marker's; Separator: the text to drop
  std::vector<ToolCall> calls;
};

CallScan not_yet(bool final, bool prefix, size_t marker) {
  if (final) return {marker ? CallScan::Malformed : CallScan::NotACall, marker};
  return {prefix || marker ? CallScan::NeedMore : CallScan::NotACall, marker};
}

CallScan scan_hermes(std::string_view s, bool final) {
  if (!s.starts_with(kHermesStart)) return not_yet(final, could_become(s, kHermesStart), 0);
  const size_t close = s.find(kHermesEnd, kHermesStart.size());
  if (close == npos && !final) return {CallScan::NeedMore};
  // vLLM also takes a last block the output ends inside (<tool_call>(.*)).
  const size_t inner_end = close == npos ? s.size() : close;
  const std::string_view inner = trim(s.substr(kHermesStart.size(), inner_end - kHermesStart.size()));
  std::vector<ToolCall> calls = calls_in(inner, "arguments", "", false);
  if (calls.empty()) return {CallScan::Malformed, kHermesStart.size()};
  return {CallScan::Calls, close == npos ? s.size() : close + kHermesEnd.size(), std::move(calls)};
}

CallScan scan_mistral(std::string_view s, bool final) {
  if (!s.starts_with(kMistralStart)) return not_yet(final, could_become(s, kMistralStart), 0);
  const size_t open = skip_space(s, kMistralStart.size());
  if (open == s.size()) return not_yet(final, true, kMistralStart.size());
  if (s[open] != '[' && s[open] != '{') return {CallScan::Malformed, kMistralStart.size()};
  const size_t end = json_value_end(s, open);
  if (end == npos) return not_yet(final, true, kMistralStart.size());
  std::vector<ToolCall> calls =
      end ? calls_in(s.substr(open, end - open), "arguments", "", true) : std::vector<ToolCall>{};
  if (calls.empty()) return {CallScan::Malformed, kMistralStart.size()};
  return {CallScan::Calls, end, std::move(calls)};
}

// gpt-oss: one call per Harmony message, its arguments the message's JSON object (<|call|> after it optional).
CallScan scan_openai(std::string_view s, bool final) {
  if (!s.starts_with(kOpenAiStart)) return not_yet(final, could_become(s, kOpenAiStart), 0);
  const size_t arguments = s.find(kOpenAiArguments, kOpenAiStart.size());
  if (arguments == npos) return not_yet(final, true, kOpenAiStart.size());
  const std::string_view name = s.substr(kOpenAiStart.size(), arguments - kOpenAiStart.size());
  const size_t open = skip_space(s, arguments + kOpenAiArguments.size());
  if (open == s.size()) return not_yet(final, true, kOpenAiStart.size());
  const size_t end = s[open] == '{' ? json_value_end(s, open) : 0;
  if (end == npos) return not_yet(final, true, kOpenAiStart.size());
  const ojson args = end ? ojson::parse(s.substr(open, end - open), nullptr, false) : ojson(nullptr);
  if (name.empty() || !args.is_object()) return {CallScan::Malformed, kOpenAiStart.size()};
  const size_t after = skip_space(s, end);
  const std::string_view rest = s.substr(after);
  if (!final && could_become(rest, kOpenAiEnd)) return {CallScan::NeedMore};
  std::vector<ToolCall> calls{{std::string(name), args.dump(-1, ' ', false, ojson::error_handler_t::replace)}};
  return {CallScan::Calls, rest.starts_with(kOpenAiEnd) ? after + kOpenAiEnd.size() : end, std::move(calls)};
}

// Llama 3: calls lead the output (after <|python_tag|> when the model writes it), separated by ';'.
CallScan scan_llama3(std::string_view s, bool final, bool at_start) {
  size_t i = 0;
  if (at_start && s.starts_with(kPythonTag))
    i = skip_space(s, kPythonTag.size());
  else if (at_start && !s.empty() && could_become(s, kPythonTag))
    return not_yet(final, true, 0);
  else if (!at_start && s.starts_with(";"))
    i = skip_space(s, 1);
  if (i == s.size()) {
    if (!final) return {CallScan::NeedMore};
    return {i && !at_start ? CallScan::Separator : i ? CallScan::Malformed : CallScan::NotACall, i};
  }
  if (s[i] != '{') return {i ? CallScan::Malformed : CallScan::NotACall, i};
  const size_t end = json_value_end(s, i);
  if (end == npos) return not_yet(final, true, i);
  std::vector<ToolCall> calls =
      end ? calls_in(s.substr(i, end - i), "parameters", "arguments", false) : std::vector<ToolCall>{};
  if (calls.empty()) return {i ? CallScan::Malformed : CallScan::NotACall, i};
  return {CallScan::Calls, end, std::move(calls)};
}

// One decided piece of the output.
struct Piece {
  enum Kind { NeedMore, Content, Drop, Calls } kind = NeedMore;
  size_t length = 0;
  std::vector<ToolCall> calls;
  bool ends_calls = false;  // llama3_json: no call may follow
};

// The longest tail of s that could grow into marker.
size_t held_marker_prefix(std::string_view s, std::string_view marker) {
  for (size_t k = std::min(s.size(), marker.size() - 1); k > 0; --k)
    if (s.ends_with(marker.substr(0, k))) return k;
  return 0;
}

}  // namespace

std::string_view tool_call_parser_name(ToolCallParser parser) {
  for (const auto& p : kParsers)
    if (p.parser == parser) return p.name;
  return "";
}

std::string known_tool_call_parsers() {
  std::string out;
  for (const auto& p : kParsers) out += (out.empty() ? "" : ", ") + std::string(p.name);
  return out;
}

ToolCallParser parse_tool_call_parser(std::string_view name) {
  for (const auto& p : kParsers)
    if (p.name == name) return p.parser;
  throw std::invalid_argument("unknown tool call parser '" + std::string(name) +
                              "'; known: " + known_tool_call_parsers());
}

std::optional<ToolCallParser> detect_tool_call_parser(std::string_view source) {
  auto has = [&](std::string_view s) { return source.find(s) != npos; };
  // Mistral's v11 format ([TOOL_CALLS]name[ARGS]{...}) is another parser's.
  if (has("[TOOL_CALLS]")) return has("[ARGS]") ? std::nullopt : std::optional(ToolCallParser::Mistral);
  if (has("<tool_call>")) {
    // The same tag around XML-like arguments (Qwen3-Coder, Nemotron 3, GLM 4.5+, MiniMax) is not Hermes.
    for (std::string_view xml : {"<function=", "<arg_key>", "<parameter=", "<invoke"})
      if (has(xml)) return std::nullopt;
    return has("arguments") ? std::optional(ToolCallParser::Hermes) : std::nullopt;
  }
  // gpt-oss's Harmony: calls are messages to a recipient.
  if (has("<|channel|>") && has("to=")) return ToolCallParser::OpenAi;
  // Llama 3.1+: 'Respond in the format {"name": function name, "parameters": ...}'.
  if (has("\"name\": function name, \"parameters\"")) return ToolCallParser::Llama3Json;
  return std::nullopt;
}

std::string tool_call_id(std::string_view request_id, int call_index) {
  // FNV-1a then splitmix64's finaliser, twice: 128 well-mixed bits of (request id, index).
  auto hash = [](std::string_view s, uint64_t h) {
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
    return h ^ (h >> 31);
  };
  const std::string key = std::string(request_id) + '#' + std::to_string(call_index);
  const uint64_t hi = hash(key, 0xcbf29ce484222325ULL), lo = hash(key, hi ^ 0x9e3779b97f4a7c15ULL);
  char buf[64];
  std::snprintf(buf, sizeof buf, "chatcmpl-tool-%016llx%016llx", (unsigned long long)hi, (unsigned long long)lo);
  return buf;
}

std::string renamed_tool_call_id(std::string_view chat_tool_call_id, std::string_view prefix) {
  constexpr std::string_view kChatPrefix = "chatcmpl-tool-";
  if (chat_tool_call_id.starts_with(kChatPrefix)) chat_tool_call_id.remove_prefix(kChatPrefix.size());
  return std::string(prefix) + std::string(chat_tool_call_id);
}

ToolCallStream::ToolCallStream(ToolCallParser parser, std::string request_id, bool parallel_tool_calls)
    : parser_(parser), request_id_(std::move(request_id)), parallel_(parallel_tool_calls) {}

std::vector<ToolStreamEvent> ToolCallStream::feed(std::string_view text) {
  text_ += text;
  return advance(false);
}

std::vector<ToolStreamEvent> ToolCallStream::finish() { return advance(true); }

std::vector<ToolStreamEvent> ToolCallStream::advance(bool final) {
  std::vector<ToolStreamEvent> events;
  auto add_content = [&](std::string_view s) {
    if (s.empty()) return;
    if (!events.empty() && !events.back().tool_call)
      events.back().content += s;
    else
      events.push_back({std::string(s), std::nullopt});
  };
  // The next decided piece of rest (text_ after what is decided).
  auto next_piece = [&](std::string_view rest) -> Piece {
    const size_t ws = skip_space(rest);
    const bool llama = parser_ == ToolCallParser::Llama3Json;
    if (!content_only_) {
      const std::string_view at = rest.substr(ws);
      CallScan c = parser_ == ToolCallParser::Hermes    ? scan_hermes(at, final)
                   : parser_ == ToolCallParser::Mistral ? scan_mistral(at, final)
                   : parser_ == ToolCallParser::OpenAi  ? scan_openai(at, final)
                                                        : scan_llama3(at, final, decided_ == 0 && !after_call_);
      switch (c.kind) {
        case CallScan::NeedMore:
          return {};
        case CallScan::Calls:
          return {Piece::Calls, ws + c.length, std::move(c.calls)};
        case CallScan::Separator:
          return {Piece::Drop, ws + c.length};
        case CallScan::Malformed:
          if (ws && after_call_) return {Piece::Drop, ws};
          return {Piece::Content, ws + c.length, {}, llama};
        case CallScan::NotACall:
          if (llama && !(ws && after_call_)) return {Piece::Content, rest.size(), {}, true};
          break;
      }
    }
    if (ws == rest.size()) {  // whitespace only: it sticks to a call before it, or to one that may follow
      if (!final) return {};
      return {after_call_ ? Piece::Drop : Piece::Content, ws};
    }
    if (ws && after_call_) return {Piece::Drop, ws};
    if (content_only_ || llama) return {Piece::Content, rest.size()};
    // Content up to where a call could start, less the whitespace before it.
    const std::string_view marker = parser_ == ToolCallParser::Hermes   ? kHermesStart
                                    : parser_ == ToolCallParser::OpenAi ? kOpenAiStart
                                                                        : kMistralStart;
    size_t end = rest.find(marker);
    if (end == npos) end = final ? rest.size() : rest.size() - held_marker_prefix(rest, marker);
    while (end > 0 && is_space(rest[end - 1])) --end;
    return end ? Piece{Piece::Content, end} : Piece{};
  };
  while (decided_ < text_.size()) {
    Piece piece = next_piece(std::string_view(text_).substr(decided_));
    if (piece.kind == Piece::NeedMore || piece.length == 0) {
      if (!final) break;
      piece = {Piece::Content, text_.size() - decided_};  // cannot happen: every final piece is decided
    }
    if (piece.kind == Piece::Content) add_content(std::string_view(text_).substr(decided_, piece.length));
    for (ToolCall& call : piece.calls) {
      const int index = calls_++;
      if (!parallel_ && index > 0) continue;  // vLLM keeps the first call only
      events.push_back({"", ToolCallDelta{index, tool_call_id(request_id_, index), std::move(call.name), ""}});
      events.push_back({"", ToolCallDelta{index, std::nullopt, std::nullopt, std::move(call.arguments)}});
    }
    if (piece.kind != Piece::Drop) after_call_ = piece.kind == Piece::Calls;
    if (piece.ends_calls) content_only_ = true;
    decided_ += piece.length;
  }
  return events;
}

ExtractedToolCalls extract_tool_calls(ToolCallParser parser, std::string_view output, bool parallel_tool_calls) {
  ToolCallStream stream(parser, "", parallel_tool_calls);
  std::vector<ToolStreamEvent> events = stream.feed(output);
  for (auto& e : stream.finish()) events.push_back(std::move(e));
  ExtractedToolCalls out;
  std::string content;
  for (auto& e : events) {
    if (!e.tool_call)
      content += e.content;
    else if (e.tool_call->name)
      out.calls.push_back({std::move(*e.tool_call->name), ""});
    else
      out.calls.back().arguments += e.tool_call->arguments;
  }
  if (out.calls.empty() || !content.empty()) out.content = std::move(content);
  return out;
}

}  // namespace parley::http

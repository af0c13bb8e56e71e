#include "http/reasoning.hpp"

#include <algorithm>
#include <stdexcept>

namespace parley::http {
namespace {

constexpr std::string_view kStart = "<think>", kEnd = "</think>";
// Harmony's markup (gpt-oss), special tokens decoded as their text.
constexpr std::string_view kStartTag = "<|start|>", kChannel = "<|channel|>", kMessage = "<|message|>";
constexpr std::string_view kCall = "<|call|>", kToolHeader = "<|channel|>commentary to=";
constexpr std::string_view kBodyEnds[] = {"<|end|>", "<|return|>", kCall, kStartTag, kChannel};
constexpr size_t kMaxHeader = 256;  // "<|start|>assistant<|channel|>commentary to=functions.x <|constrain|>json"

// The length of text's longest suffix that is a proper prefix of marker: it may still become the marker.
size_t partial_marker(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n)
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  return 0;
}

}  // namespace

ReasoningParser parse_reasoning_parser(std::string_view name) {
  if (name == "deepseek_r1") return ReasoningParser::DeepSeekR1;
  if (name == "qwen3") return ReasoningParser::Qwen3;
  if (name == "openai_gptoss" || name == "gpt_oss" || name == "gpt-oss") return ReasoningParser::GptOss;
  throw std::invalid_argument("unknown reasoning parser '" + std::string(name) +
                              "' (known: deepseek_r1, qwen3, openai_gptoss, auto)");
}

std::string_view reasoning_parser_name(ReasoningParser p) {
  switch (p) {
    case ReasoningParser::DeepSeekR1:
      return "deepseek_r1";
    case ReasoningParser::Qwen3:
      return "qwen3";
    case ReasoningParser::GptOss:
      return "openai_gptoss";
  }
  return "";
}

namespace {
bool closes_thinking(std::string_view prompt) {
  const size_t last = prompt.find_last_not_of(" \t\r\n");
  return last != std::string_view::npos && prompt.substr(0, last + 1).ends_with(kEnd);
}
}  // namespace

ReasoningParser parser_for_prompt(ReasoningParser parser, std::string_view prompt) {
  return parser == ReasoningParser::DeepSeekR1 && closes_thinking(prompt) ? ReasoningParser::Qwen3 : parser;
}

std::optional<std::string> reasoning_end_marker(ReasoningParser parser, std::string_view prompt) {
  if (parser == ReasoningParser::GptOss) return std::string(kChannel) + "final" + std::string(kMessage);
  if (closes_thinking(prompt)) return std::nullopt;
  return std::string(kEnd);
}

std::optional<ReasoningParser> detect_reasoning_parser(std::string_view source, std::string_view generation_prompt) {
  if (source.find(kChannel) != std::string_view::npos) return ReasoningParser::GptOss;
  if (source.find(kStart) == std::string_view::npos) return std::nullopt;
  // DeepSeek-R1's templates open the thinking in the prompt; Qwen3's leave it to the model (or close it at once).
  const bool opened = generation_prompt.find(kStart) != std::string_view::npos &&
                      generation_prompt.find(kEnd) == std::string_view::npos;
  return opened ? ReasoningParser::DeepSeekR1 : ReasoningParser::Qwen3;
}

ReasoningStream::ReasoningStream(ReasoningParser parser)
    : parser_(parser), state_(parser == ReasoningParser::GptOss ? State::Header : State::Opening) {}

void ReasoningStream::emit(bool reasoning, std::string text, std::vector<ReasoningPiece>& out) {
  if (text.empty()) return;
  if (!out.empty() && out.back().reasoning == reasoning)
    out.back().text += text;
  else
    out.push_back({reasoning, std::move(text)});
}

void ReasoningStream::enter_content(size_t held_at) {
  if (!content_start_) content_start_ = fed_ - held_.size() + held_at;
}

std::vector<ReasoningPiece> ReasoningStream::feed(std::string_view delta) {
  std::vector<ReasoningPiece> out;
  held_ += delta;
  fed_ += delta.size();
  if (parser_ == ReasoningParser::GptOss)
    feed_harmony(out);
  else
    feed_think(out);
  return out;
}

void ReasoningStream::feed_think(std::vector<ReasoningPiece>& out) {
  for (;;) {
    if (state_ == State::Opening) {  // is the output opening with <think>?
      if (held_.size() < kStart.size() && kStart.substr(0, held_.size()) == held_) return;  // not known yet
      const bool opens = held_.compare(0, kStart.size(), kStart) == 0;
      if (opens) held_.erase(0, kStart.size());
      state_ = opens || parser_ == ReasoningParser::DeepSeekR1 ? State::Reasoning : State::Content;
      if (state_ == State::Content) enter_content(0);
      continue;
    }
    if (state_ == State::Content) {
      emit(false, std::move(held_), out);
      held_.clear();
      return;
    }
    const size_t end = held_.find(kEnd);
    if (end == std::string::npos) {  // all reasoning but what may be the end marker's start
      const size_t keep = partial_marker(held_, kEnd);
      emit(true, held_.substr(0, held_.size() - keep), out);
      held_.erase(0, held_.size() - keep);
      return;
    }
    emit(true, held_.substr(0, end), out);
    enter_content(end + kEnd.size());
    held_.erase(0, end + kEnd.size());
    state_ = State::Content;
  }
}

bool ReasoningStream::read_header(std::vector<ReasoningPiece>& out) {
  const size_t message = held_.find(kMessage);
  if (message == std::string::npos) return false;
  const std::string_view header = std::string_view(held_).substr(0, message);
  auto word_after = [&](std::string_view key) {  // the header's value after key, up to a space or a marker
    const size_t at = header.find(key);
    if (at == std::string_view::npos) return std::string_view();
    const std::string_view value = header.substr(at + key.size());
    return value.substr(0, value.find_first_of(" <"));
  };
  const std::string_view channel = word_after(kChannel), recipient = word_after("to=");
  analysis_ = channel == "analysis";
  to_function_ = recipient.starts_with("functions.");
  std::string call_header =
      to_function_ ? std::string(kToolHeader) + std::string(recipient) + std::string(kMessage) : "";
  held_.erase(0, message + kMessage.size());
  if (to_function_) {
    enter_content(0);
    emit(false, std::move(call_header), out);
  }
  return true;
}

void ReasoningStream::feed_harmony(std::vector<ReasoningPiece>& out) {
  for (;;) {
    if (state_ == State::Header) {
      // A header starts with a marker ("<|start|>assistant<|channel|>final...") or, right after the prompt's
      // "<|start|>assistant", a recipient (" to=functions.f<|channel|>..."); other text is an unformatted answer.
      const bool header = held_.starts_with("<|") || held_.starts_with(" to=") ||
                          std::string_view("<|").starts_with(held_) || std::string_view(" to=").starts_with(held_);
      if (header && !read_header(out)) {
        if (held_.size() <= kMaxHeader) return;  // not known yet
        analysis_ = to_function_ = false;        // too long for a header: text, not markup
      } else if (!header) {
        analysis_ = to_function_ = false;
      }
      state_ = State::Body;
      if (!analysis_) enter_content(0);
      continue;
    }
    // The body runs to the next marker: a message's end, or another header.
    size_t at = std::string::npos, length = 0, keep = 0;
    for (std::string_view marker : kBodyEnds) {
      const size_t found = held_.find(marker);
      if (found < at) at = found, length = marker.size();
      keep = std::max(keep, partial_marker(held_, marker));
    }
    if (at == std::string::npos) {
      emit(analysis_, held_.substr(0, held_.size() - keep), out);
      held_.erase(0, held_.size() - keep);
      return;
    }
    emit(analysis_, held_.substr(0, at), out);
    if (to_function_) emit(false, std::string(kCall), out);  // the call's end, in the one form
    const bool opens_header =
        held_.compare(at, kStartTag.size(), kStartTag) == 0 || held_.compare(at, kChannel.size(), kChannel) == 0;
    held_.erase(0, opens_header ? at : at + length);
    state_ = State::Header;
  }
}

std::vector<ReasoningPiece> ReasoningStream::finish() {
  std::vector<ReasoningPiece> out;
  // Held text never became a marker: it is what the state says (an unopened output's start is content, or
  // reasoning for deepseek_r1; an unfinished Harmony header is dropped).
  bool reasoning = state_ == State::Reasoning || (state_ == State::Opening && parser_ == ReasoningParser::DeepSeekR1);
  if (state_ == State::Body) reasoning = analysis_;
  if (state_ == State::Header) held_.clear();
  if (!reasoning && !held_.empty()) enter_content(0);
  emit(reasoning, std::move(held_), out);
  held_.clear();
  return out;
}

SplitReasoning split_reasoning(ReasoningParser parser, std::string_view text) {
  ReasoningStream stream(parser);
  std::vector<ReasoningPiece> pieces = stream.feed(text);
  for (ReasoningPiece& p : stream.finish()) pieces.push_back(std::move(p));
  SplitReasoning out;
  for (const ReasoningPiece& p : pieces) {
    std::optional<std::string>& part = p.reasoning ? out.reasoning : out.content;
    part = part.value_or("") + p.text;
  }
  if (!out.content && !out.reasoning) out.content = "";
  out.content_start = stream.content_start().value_or(text.size());
  return out;
}

}  // namespace parley::http

#include "http/reasoning.hpp"

#include <stdexcept>

namespace parley::http {
namespace {

constexpr std::string_view kStart = "<think>", kEnd = "</think>";

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
  throw std::invalid_argument("unknown reasoning parser '" + std::string(name) + "' (known: deepseek_r1, qwen3)");
}

std::string_view reasoning_parser_name(ReasoningParser p) {
  return p == ReasoningParser::DeepSeekR1 ? "deepseek_r1" : "qwen3";
}

ReasoningStream::ReasoningStream(ReasoningParser parser) : parser_(parser), state_(State::Opening) {}

void ReasoningStream::emit(bool reasoning, std::string text, std::vector<ReasoningPiece>& out) {
  if (text.empty()) return;
  if (!out.empty() && out.back().reasoning == reasoning)
    out.back().text += text;
  else
    out.push_back({reasoning, std::move(text)});
}

std::vector<ReasoningPiece> ReasoningStream::feed(std::string_view delta) {
  std::vector<ReasoningPiece> out;
  held_ += delta;
  for (;;) {
    if (state_ == State::Opening) {  // is the output opening with <think>?
      if (held_.size() < kStart.size() && kStart.substr(0, held_.size()) == held_) return out;  // not known yet
      const bool opens = held_.compare(0, kStart.size(), kStart) == 0;
      if (opens) held_.erase(0, kStart.size());
      state_ = opens || parser_ == ReasoningParser::DeepSeekR1 ? State::Reasoning : State::Content;
      continue;
    }
    if (state_ == State::Content) {
      emit(false, std::move(held_), out);
      held_.clear();
      return out;
    }
    const size_t end = held_.find(kEnd);
    if (end == std::string::npos) {  // all reasoning but what may be the end marker's start
      const size_t keep = partial_marker(held_, kEnd);
      emit(true, held_.substr(0, held_.size() - keep), out);
      held_.erase(0, held_.size() - keep);
      return out;
    }
    emit(true, held_.substr(0, end), out);
    held_.erase(0, end + kEnd.size());
    state_ = State::Content;
  }
}

std::vector<ReasoningPiece> ReasoningStream::finish() {
  std::vector<ReasoningPiece> out;
  // Held text never became a marker: it is what the state says (an unopened output's start is content, or
  // reasoning for deepseek_r1).
  const bool reasoning =
      state_ == State::Reasoning || (state_ == State::Opening && parser_ == ReasoningParser::DeepSeekR1);
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
  return out;
}

}  // namespace parley::http

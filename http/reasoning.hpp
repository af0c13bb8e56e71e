// Reasoning output (vLLM's --reasoning-parser): a thinking model's text split into its reasoning and its answer,
// so clients show the answer as `content` and the thinking as `reasoning_content`. One stream serves both ways: a
// whole output is the stream fed once, so the streamed deltas always add up to the non-streamed answer.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace parley::http {

enum class ReasoningParser {
  DeepSeekR1,  // the template opens <think> in the prompt: the output is reasoning until </think> (a leading
               // <think> of its own is dropped); no </think>: all reasoning
  Qwen3,       // reasoning only when the output opens with <think>, until </think>; otherwise all content
};

// "deepseek_r1", "qwen3"; throws std::invalid_argument naming the known ones.
ReasoningParser parse_reasoning_parser(std::string_view name);
std::string_view reasoning_parser_name(ReasoningParser p);

struct ReasoningPiece {
  bool reasoning = false;
  std::string text;
};

// A choice's text as it streams. Text that could still be part of a marker is held back until it is known.
class ReasoningStream {
 public:
  explicit ReasoningStream(ReasoningParser parser);
  // The pieces this delta completes, reasoning before content, markers never included.
  std::vector<ReasoningPiece> feed(std::string_view delta);
  // What was held back, at the end of the output.
  std::vector<ReasoningPiece> finish();

 private:
  enum class State { Opening, Reasoning, Content };
  void emit(bool reasoning, std::string text, std::vector<ReasoningPiece>& out);
  ReasoningParser parser_;
  State state_;
  std::string held_;
};

// A whole output split: the reasoning (nullopt when there was none) and the content (nullopt when empty after
// reasoning that never ended).
struct SplitReasoning {
  std::optional<std::string> reasoning, content;
};
SplitReasoning split_reasoning(ReasoningParser parser, std::string_view text);

}  // namespace parley::http

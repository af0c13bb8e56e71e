// Reasoning output (vLLM's --reasoning-parser): a thinking model's text split into its reasoning and its answer,
// so clients show the answer as `content` and the thinking as `reasoning_content`. One stream serves both ways: a
// whole output is the stream fed once, so the streamed deltas always add up to the non-streamed answer.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace parley::http {

enum class ReasoningParser {
  DeepSeekR1,  // the template opens <think> in the prompt: the output is reasoning until </think> (a leading
               // <think> of its own is dropped); no </think>: all reasoning
  Qwen3,       // reasoning only when the output opens with <think>, until </think>; otherwise all content
  GptOss,      // Harmony: <|channel|>analysis<|message|>... is reasoning, the final and commentary channels content;
               // the headers and <|start|>, <|end|>, <|return|>, <|call|> markers are dropped (decoded as text);
               // a message to a function is content in one header form for the openai tool-call parser:
               // <|channel|>commentary to=functions.NAME<|message|>ARGUMENTS<|call|>
};

// "deepseek_r1", "qwen3", "openai_gptoss" (vLLM's name; also "gpt_oss", "gpt-oss"); throws std::invalid_argument
// naming the known ones. "auto" is resolved by detect_reasoning_parser.
ReasoningParser parse_reasoning_parser(std::string_view name);
std::string_view reasoning_parser_name(ReasoningParser p);
// The parser for one request's prompt: deepseek_r1's open thinking read as qwen3's optional one when the prompt
// already closed it (a template given enable_thinking false ends the prompt with </think>).
ReasoningParser parser_for_prompt(ReasoningParser parser, std::string_view prompt);
// The text that ends the reasoning in an output, after which structured outputs and forced tool calls begin
// ("</think>"; Harmony's "<|channel|>final<|message|>"); nullopt when the prompt already closed the thinking.
std::optional<std::string> reasoning_end_marker(ReasoningParser parser, std::string_view prompt);
// --reasoning-parser auto: the format a chat template shows. generation_prompt is what the template appends for
// the assistant's turn (a template that opens <think> there is deepseek_r1's); nullopt: no thinking format.
std::optional<ReasoningParser> detect_reasoning_parser(std::string_view source, std::string_view generation_prompt);

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
  // Where the answer began in the text fed so far (a byte offset; 0 when there was no reasoning), nullopt while
  // it has not: the tokens before it are the reasoning tokens of the usage.
  std::optional<size_t> content_start() const { return content_start_; }

 private:
  enum class State { Opening, Reasoning, Content, Header, Body };  // Header and Body: Harmony's messages
  void emit(bool reasoning, std::string text, std::vector<ReasoningPiece>& out);
  void feed_think(std::vector<ReasoningPiece>& out);
  void feed_harmony(std::vector<ReasoningPiece>& out);
  // Harmony: a whole header held (up to <|message|>) is read (a function call's goes out in one form); false while
  // it is not.
  bool read_header(std::vector<ReasoningPiece>& out);
  void enter_content(size_t held_at);  // the answer starts at held_[held_at]
  ReasoningParser parser_;
  State state_;
  std::string held_;
  size_t fed_ = 0;  // bytes fed so far
  std::optional<size_t> content_start_;
  bool analysis_ = false;     // Harmony: the current message is on the analysis channel
  bool to_function_ = false;  // Harmony: the current message calls a function (its text is content as it is)
};

// A whole output split: the reasoning (nullopt when there was none) and the content (nullopt when empty after
// reasoning that never ended).
struct SplitReasoning {
  std::optional<std::string> reasoning, content;
  size_t content_start = 0;  // the answer's byte offset in the text; the text's length when it never began
};
SplitReasoning split_reasoning(ReasoningParser parser, std::string_view text);

}  // namespace parley::http

// The OpenAI-compatible API as pure functions over JSON text (no Beast, no CAF): parsing and validating
// /v1/completions and /v1/chat/completions bodies into engine requests, and rendering responses,
// stream chunks and errors in OpenAI's exact shapes with vLLM's messages.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/request_output.hpp"
#include "engine/pooling_params.hpp"
#include "model/llama_config.hpp"
#include "engine/sampling_params.hpp"
#include "http/reasoning.hpp"
#include "http/tool_calls.hpp"
#include "model/tokenizer.hpp"

namespace parley {
class ChatTemplate;  // model/chat_template.hpp: only the chat files need the Jinja engine
}  // namespace parley

namespace parley::http {

// {"error": {"message", "type", "param", "code"}} with its HTTP status.
struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "BadRequestError";  // vLLM's names: BadRequestError, NotFoundError, ...
  std::string param;                     // the offending field, "" for none (rendered as null)
  std::string code;                      // OpenAI's string code ("model_not_found", ...); "" renders as null
};
// The error of an HTTP status with vLLM's type name for it (404 NotFoundError, 503 ServiceUnavailableError, ...).
ApiError api_error(int status, std::string message, std::string code = "");
std::string error_body(const ApiError& e);
// The websocket's error message {"id", "type": "error", "status", "error": {...}}: status stands in for HTTP's.
std::string websocket_error(const ApiError& e, const std::string& id);

// What the parser needs to know about the served model.
struct ServingContext {
  const Tokenizer* tokenizer = nullptr;
  std::string model_name;                             // the only accepted "model" (404 otherwise)
  int max_model_len = 0;                              // prompt + max_tokens must fit
  std::shared_ptr<const ChatTemplate> chat_template;  // the served chat template; nullptr: the plain fallback
  int max_n = 64;                                     // the largest n a request may ask for (--max-n)
  std::string architecture;                           // general.architecture, for /v1/models
  int context_length = 0;                             // the model's own context (max_model_len may be less)
  int vocab_size = 0;
  bool strict_request_fields = false;  // --strict-request-fields: an unknown request field is a 400, not ignored
  std::optional<ReasoningParser> reasoning_parser;  // --reasoning-parser: chat output split into reasoning and content
  bool structured_outputs_in_reasoning = false;     // constraints from the first token, not the reasoning's end
  int64_t parameters = 0, active_parameters = 0;    // weights in all, and those one token runs through
  int n_experts = 0, n_experts_used = 0;            // 0: a dense model
  ToolServing tools;                                // --tool-call-parser, --enable-auto-tool-choice, ...
  PoolingType pooling = PoolingType::None;          // what the engine serves: None generates, else embeddings
  bool matryoshka = false;                          // --matryoshka: /v1/embeddings honours `dimensions`
  int embedding_dim = 0;                            // the model's hidden size: an embedding's length
};

// Messages: Anthropic's /v1/messages, Responses: OpenAI's /v1/responses; each parsed as chat completions and rendered
// in its API's shapes (http/anthropic_protocol.hpp, http/responses_protocol.hpp).
// Embeddings: /v1/embeddings, one pooling request per input (http/embeddings.cpp). Rerank, Score: /v1/rerank and
// /v1/score, one score request per query/document pair (http/rerank.cpp).
enum class Endpoint { Completions, ChatCompletions, Messages, Responses, Embeddings, Rerank, Score };
struct ResponsesRequest;  // http/responses_protocol.hpp

inline constexpr int kMaxChoices = 128;  // OpenAI's upper bound for n (--max-n may not exceed it)

struct GenerateRequest {
  Endpoint endpoint = Endpoint::Completions;
  std::string model;
  std::vector<std::vector<int>> prompts;  // token ids per prompt (chat: exactly one, the rendered template)
  std::vector<std::string> prompt_texts;  // decoded prompt per prompt (for echo)
  SamplingParams params;                  // validated; max_tokens resolved (default: what fits the context)
  bool stream = false;
  bool include_usage = false;                // stream_options.include_usage
  bool echo = false;                         // completions only
  int top_logprobs = -1;                     // -1: no logprobs; else the number of alternatives per token
  int prompt_logprobs = -1;                  // -1: not asked; else the alternatives per prompt token (vLLM's field)
  std::string user;                          // OpenAI's end-user id, logged with the request ("" if none)
  std::optional<ToolCalling> tool_calling;   // chat with tools (tool_choice not none): the output is read for calls
  std::vector<std::string> ignored_fields;   // unknown fields accepted: the server logs and counts them
  std::optional<ReasoningParser> reasoning;  // chat with --reasoning-parser: reasoning_content beside content
  std::optional<PoolingParams> pooling;      // embeddings: every prompt is pooled, nothing generated
  bool base64 = false;                       // embeddings: encoding_format base64 (little-endian float32)
  int top_n = 0;                             // rerank: the best top_n results only (0: every document)
  bool return_documents = true;              // rerank: each result carries its document's text (prompt_texts)
  std::shared_ptr<const ResponsesRequest> responses;  // Endpoint::Responses: what its Response echoes and stores
};

// Parses and validates a request body. Errors: malformed JSON, wrong types, unknown model (404),
// out-of-range values, unknown token ids, empty prompt, prompt + max_tokens over the context.
// Every field not honoured is a 400 naming it ("user" is accepted as metadata); null means not given.
// Defaults as vLLM: completions max_tokens 16 (less if the context is shorter), chat max_tokens what
// the context leaves; a missing "model" is the served one. SamplingParams::validate() runs last.
std::variant<GenerateRequest, ApiError> parse_generate_request(Endpoint endpoint, std::string_view body,
                                                               const ServingContext& ctx);

// POST /v1/embeddings (OpenAI's CreateEmbeddingRequest with vLLM's normalize and truncate_prompt_tokens): `input`
// as completions' prompt, encoding_format float or base64, dimensions only with --matryoshka, normalize (default
// true: L2), truncate_prompt_tokens (the last N tokens; -1: the context). Each input must fit the context.
std::variant<GenerateRequest, ApiError> parse_embedding_request(std::string_view body, const ServingContext& ctx);
// POST /v1/rerank: {model, query, documents, top_n, return_documents}; the query and each document a string or token
// ids; one score request per document (prompt_texts: the documents). 400: no query or documents, a pair over the
// context.
std::variant<GenerateRequest, ApiError> parse_rerank_request(std::string_view body, const ServingContext& ctx);
// POST /v1/score (vLLM's): {model, text_1, text_2}, each a text or a list; one text_1 against every text_2, or N:N.
std::variant<GenerateRequest, ApiError> parse_score_request(std::string_view body, const ServingContext& ctx);

// One finished choice of a non-streamed response.
struct Choice {
  int index = 0;
  std::string text;  // echo prompt (if asked) + generated text
  std::vector<int> token_ids;
  std::vector<TokenLogprobs> logprobs;
  FinishReason finish_reason = FinishReason::None;
  StopReason stop_reason;
  std::vector<TokenLogprobs> prompt_logprobs;  // prompt tokens 1.., when the engine scored the prompt
  std::vector<size_t> token_text_starts;       // per generated token: where its output's text began in `text`
  std::vector<float> embedding;                // embeddings: the input's vector; rerank, score: {its score}
};
struct Usage {
  int prompt_tokens = 0, completion_tokens = 0;
  std::optional<int> reasoning_tokens;  // with a reasoning parser: completion_tokens_details.reasoning_tokens
};

// A finished chat choice's answer as the chat path reads it: the reasoning split off (--reasoning-parser), the rest
// read for tool calls (req.tool_calling). The other APIs' shapes are built from it.
struct ChoiceAnswer {
  std::optional<std::string> reasoning, content;
  std::vector<ToolCall> calls;
};
ChoiceAnswer choice_answer(const GenerateRequest& req, const std::string& text);

// Full JSON responses (non-streamed). `created` is seconds since the epoch.
std::string completion_response(const GenerateRequest& req, const std::string& id, long created,
                                const std::vector<Choice>& choices, const Usage& usage, const Tokenizer& tok);
// Where one streamed choice stands, kept by the caller between chunks: the text already sent (its
// length is the next logprobs text_offset) and the last token (its successor's leading space depends on it).
struct StreamCursor {
  int text_offset = 0;  // characters (code points) of text sent so far, echoed prompt included
  int prev_token = -2;  // -2: none yet, the prompt's last token comes before the first delta
};
// One SSE event "data: {...}\n\n" for a delta of choice `index`; usage chunk and [DONE] separately.
// Chat: with first_chunk the event is preceded by the role event (delta {"role":"assistant","content":""}).
// Completions: with first_chunk and echo the prompt text leads the delta's text. `cursor` (optional)
// is read for logprobs offsets and advanced past this delta.
// A chat choice read for tool calls (req.tool_calling) streams its ToolCallStream's events for the delta
// instead of the delta's text: content chunks and delta.tool_calls chunks, in order.
struct ChatToolDelta {
  std::vector<ToolStreamEvent> events;
  bool tools_called = false;  // the choice has called a tool so far (its finish_reason is then "tool_calls")
};
std::string stream_chunk(const GenerateRequest& req, const std::string& id, long created, int index,
                         const RequestOutput& delta, const Tokenizer& tok, bool first_chunk,
                         StreamCursor* cursor = nullptr, const ChatToolDelta* tools = nullptr);
// The engine request id of choice `index` (tool call ids are derived from it).
std::string choice_request_id(const std::string& id, int index);
std::string stream_usage_chunk(const GenerateRequest& req, const std::string& id, long created, const Usage& usage);
std::string stream_error_event(const ApiError& e);  // "data: {error...}\n\n"
inline constexpr std::string_view kStreamDone = "data: [DONE]\n\n";

// CreateEmbeddingResponse: {object: list, data: [{object: embedding, index, embedding}], model, usage}; each
// choice's vector as numbers or base64 of its little-endian float32 bytes.
std::string embedding_response(const GenerateRequest& req, const std::vector<Choice>& choices, const Usage& usage);
// Rerank: {id, model, usage: {total_tokens}, results: [{index, document: {text}, relevance_score}]}, by score
// descending (ties in input order), top_n of them. Score: {id, object: list, created, model, data: [{index, object:
// score, score}], usage}. A choice's score is its embedding's one value.
std::string rerank_response(const GenerateRequest& req, const std::string& id, const std::vector<Choice>& choices,
                            const Usage& usage);
std::string score_response(const GenerateRequest& req, const std::string& id, long created,
                           const std::vector<Choice>& choices, const Usage& usage);
// The little-endian float32 bytes of v in base64 (RFC 4648, padded).
std::string base64_floats(const std::vector<float>& v);

// The served model's card: /v1/models' entry and the admin console's header.
std::string model_card(const ServingContext& ctx, long created);
// GET /v1/models
std::string models_response(const ServingContext& ctx, long created);
// POST /tokenize and /detokenize (vLLM's shapes).
std::variant<std::string, ApiError> tokenize_response(std::string_view body, const ServingContext& ctx);
std::variant<std::string, ApiError> detokenize_response(std::string_view body, const ServingContext& ctx);
// llama.cpp's /apply-template: {messages, tools, add_generation_prompt (default true), chat_template_kwargs,
// chat_template} -> {"prompt": the rendered text}, exactly what /v1/chat/completions would tokenize.
std::variant<std::string, ApiError> apply_template_response(std::string_view body, const ServingContext& ctx);

}  // namespace parley::http

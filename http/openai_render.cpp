// Responses and stream chunks in OpenAI's shapes as vLLM fills them (serving_completion.py,
// serving_chat.py): text_completion, chat.completion and chat.completion.chunk.
#include <cmath>

#include "http/openai_fields.hpp"

namespace parley::http {
namespace {

using namespace detail;

bool is_chat(const GenerateRequest& req) { return req.endpoint == Endpoint::ChatCompletions; }

ojson finish_reason_json(FinishReason r) {
  return r == FinishReason::None ? ojson(nullptr) : ojson(finish_reason_name(r));
}

// vLLM: "tool_calls" when the output called a tool and ended by itself, except for a named tool_choice,
// where OpenAI answers "stop"; an output cut short keeps "length".
ojson chat_finish_reason_json(const GenerateRequest& req, FinishReason r, bool tools_called) {
  if (tools_called && r == FinishReason::Stop && req.tool_calling && req.tool_calling->choice != ToolChoice::Named)
    return "tool_calls";
  return finish_reason_json(r);
}

ojson tool_call_json(const std::string& id, const ToolCall& call) {
  return {{"id", id}, {"type", "function"}, {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
}

// One delta.tool_calls entry: the call's first carries id, type and name (arguments "", as OpenAI's do).
ojson tool_call_delta_json(const ToolCallDelta& d) {
  if (d.id)
    return {{"index", d.index},
            {"id", *d.id},
            {"type", "function"},
            {"function", {{"name", d.name.value_or("")}, {"arguments", d.arguments}}}};
  return {{"index", d.index}, {"function", {{"arguments", d.arguments}}}};
}

ojson stop_reason_json(const StopReason& r) {
  if (const int* id = std::get_if<int>(&r)) return *id;
  if (const std::string* s = std::get_if<std::string>(&r)) return *s;
  return nullptr;
}

ojson usage_json(const Usage& u) {
  ojson out = {{"prompt_tokens", u.prompt_tokens},
               {"completion_tokens", u.completion_tokens},
               {"total_tokens", u.prompt_tokens + u.completion_tokens}};
  if (u.reasoning_tokens) out["completion_tokens_details"] = {{"reasoning_tokens", *u.reasoning_tokens}};
  return out;
}

double clamp_logprob(float lp) { return std::isnan(lp) ? -9999.0 : std::max<double>(lp, -9999.0); }  // vLLM's floor

// The prompt a choice continues: choices are numbered prompt-major (prompt i, sample j -> i * n + j).
size_t prompt_of(const GenerateRequest& req, int index) {
  const size_t i = static_cast<size_t>(index / std::max(1, req.params.n));
  return std::min(i, req.prompts.empty() ? 0 : req.prompts.size() - 1);
}
int prompt_last_token(const GenerateRequest& req, int index) {
  if (req.prompts.empty()) return -1;
  const auto& p = req.prompts[prompt_of(req, index)];
  return p.empty() ? -1 : p.back();
}

// Completions logprobs: parallel arrays, one entry per token; top_logprobs maps the token and the top alternatives.
struct CompletionLogprobs {
  ojson tokens = ojson::array(), token_logprobs = ojson::array(), top = ojson::array(), offsets = ojson::array();

  // lp null: a token with no logprob (the echoed prompt's first). Advances text_offset past the token.
  void add(const GenerateRequest& req, int prev, int id, const TokenLogprobs* lp, int& text_offset,
           const Tokenizer& tok) {
    const std::string text = tok.token_bytes(prev, id);
    tokens.push_back(text);
    offsets.push_back(text_offset);
    text_offset += utf8_length(text);
    if (!lp) {
      token_logprobs.push_back(nullptr), top.push_back(nullptr);
      return;
    }
    token_logprobs.push_back(clamp_logprob(lp->logprob));
    ojson alternatives = ojson::object();
    alternatives[text] = clamp_logprob(lp->logprob);
    for (size_t k = 0; k < lp->top.size() && int(k) < req.top_logprobs; ++k)
      alternatives[tok.token_bytes(prev, lp->top[k].first)] = clamp_logprob(lp->top[k].second);
    top.push_back(std::move(alternatives));
  }
  ojson json() {
    return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top}, {"text_offset", offsets}};
  }
};

// A completion's echoed prompt, which leads its logprobs: the prompt's tokens and their scores (tokens 1..).
struct EchoedPrompt {
  const std::vector<int>& ids;
  const std::vector<TokenLogprobs>& logprobs;
};

ojson completion_logprobs(const GenerateRequest& req, const std::vector<int>& ids,
                          const std::vector<TokenLogprobs>& lps, int prev, int text_offset, const Tokenizer& tok,
                          const EchoedPrompt* echoed) {
  CompletionLogprobs out;
  if (echoed) {  // offsets from the echoed prompt's start; its first token has no logprob
    int offset = 0;
    for (size_t j = 0; j < echoed->ids.size(); ++j) {
      const TokenLogprobs* lp = j >= 1 && j - 1 < echoed->logprobs.size() ? &echoed->logprobs[j - 1] : nullptr;
      out.add(req, j ? echoed->ids[j - 1] : -1, echoed->ids[j], lp, offset, tok);
    }
  }
  for (size_t i = 0; i < ids.size(); ++i) out.add(req, prev, ids[i], &lps[i], text_offset, tok), prev = ids[i];
  return out.json();
}

// vLLM's prompt_logprobs: null for the first prompt token, then per token {"<id>": {logprob, rank, decoded_token}}
// with the prompt token (ranked in the whole vocabulary) first, then the top alternatives. null until scored.
ojson prompt_logprobs_json(const GenerateRequest& req, const std::vector<int>& prompt,
                           const std::vector<TokenLogprobs>& lps, const Tokenizer& tok) {
  if (prompt.empty() || lps.size() + 1 != prompt.size()) return nullptr;
  ojson out = ojson::array();
  out.push_back(nullptr);
  for (size_t i = 0; i < lps.size(); ++i) {
    auto entry = [&](int token, float logprob, int rank) {
      return ojson{
          {"logprob", clamp_logprob(logprob)}, {"rank", rank}, {"decoded_token", tok.token_bytes(prompt[i], token)}};
    };
    ojson position = ojson::object();
    position[std::to_string(lps[i].token)] = entry(lps[i].token, lps[i].logprob, lps[i].rank);
    for (size_t k = 0; k < lps[i].top.size() && int(k) < req.prompt_logprobs; ++k) {
      const auto& [token, logprob] = lps[i].top[k];
      if (!position.contains(std::to_string(token)))
        position[std::to_string(token)] = entry(token, logprob, int(k) + 1);
    }
    out.push_back(std::move(position));
  }
  return out;
}

ojson chat_logprob(const std::string& text, float logprob) {
  ojson bytes = ojson::array();
  for (unsigned char c : text) bytes.push_back(int(c));  // the raw bytes, so split UTF-8 can be rejoined
  return {{"token", text}, {"logprob", clamp_logprob(logprob)}, {"bytes", bytes}};
}

ojson chat_logprobs(const GenerateRequest& req, const std::vector<int>& ids, const std::vector<TokenLogprobs>& lps,
                    int prev, const Tokenizer& tok) {
  ojson content = ojson::array();
  for (size_t i = 0; i < ids.size(); ++i) {
    ojson entry = chat_logprob(tok.token_bytes(prev, ids[i]), lps[i].logprob);
    ojson top = ojson::array();
    for (size_t k = 0; k < lps[i].top.size() && int(k) < req.top_logprobs; ++k)
      top.push_back(chat_logprob(tok.token_bytes(prev, lps[i].top[k].first), lps[i].top[k].second));
    entry["top_logprobs"] = std::move(top);
    content.push_back(std::move(entry));
    prev = ids[i];
  }
  return {{"content", content}, {"refusal", nullptr}};  // refusal: required beside content, never produced
}

// null unless the request asked for logprobs and there are tokens (an echoed prompt's or new ones), each with its
// entry.
ojson logprobs_json(const GenerateRequest& req, const std::vector<int>& ids, const std::vector<TokenLogprobs>& lps,
                    int prev, int text_offset, const Tokenizer& tok, const EchoedPrompt* echoed = nullptr) {
  if (req.top_logprobs < 0 || (ids.empty() && !echoed) || lps.size() != ids.size()) return nullptr;
  return is_chat(req) ? chat_logprobs(req, ids, lps, prev, tok)
                      : completion_logprobs(req, ids, lps, prev, text_offset, tok, echoed);
}

const std::vector<int>& prompt_ids(const GenerateRequest& req, int index) {
  static const std::vector<int> none;
  return req.prompts.empty() ? none : req.prompts[prompt_of(req, index)];
}

ojson envelope(const GenerateRequest& req, const std::string& id, long created, const char* object) {
  return {{"id", id}, {"object", object}, {"created", created}, {"model", req.model}};
}

const char* chunk_object(const GenerateRequest& req) {
  return is_chat(req) ? "chat.completion.chunk" : "text_completion";
}

}  // namespace

ChoiceAnswer choice_answer(const GenerateRequest& req, const std::string& text) {
  const SplitReasoning split = req.reasoning ? split_reasoning(*req.reasoning, text) : SplitReasoning{{}, text};
  if (!req.tool_calling) return {split.reasoning, split.content, {}};
  ExtractedToolCalls answer =
      extract_tool_calls(req.tool_calling->parser, split.content.value_or(""), req.tool_calling->parallel_tool_calls);
  return {split.reasoning, std::move(answer.content), std::move(answer.calls)};
}

std::string completion_response(const GenerateRequest& req, const std::string& id, long created,
                                const std::vector<Choice>& choices, const Usage& usage, const Tokenizer& tok) {
  ojson out = envelope(req, id, created, is_chat(req) ? "chat.completion" : "text_completion");
  ojson list = ojson::array();
  for (const Choice& c : choices) {
    const size_t p = prompt_of(req, c.index);
    const int offset = req.echo && p < req.prompt_texts.size() ? utf8_length(req.prompt_texts[p]) : 0;
    const EchoedPrompt echoed{prompt_ids(req, c.index), c.prompt_logprobs};
    ojson choice = {{"index", c.index}};
    bool tools_called = false;
    if (is_chat(req)) {
      // The answer is what follows the reasoning (split by the same stream the streamed deltas come from).
      const SplitReasoning split = req.reasoning ? split_reasoning(*req.reasoning, c.text) : SplitReasoning{{}, c.text};
      const std::string answer = split.content.value_or("");
      ojson message = {
          {"role", "assistant"}, {"content", split.content ? ojson(answer) : ojson(nullptr)}, {"refusal", nullptr}};
      if (req.reasoning) {  // vLLM's field, and its newer name
        message["reasoning_content"] = split.reasoning ? ojson(*split.reasoning) : ojson(nullptr);
        message["reasoning"] = message["reasoning_content"];
      }
      if (req.tool_calling) {
        const ExtractedToolCalls parsed =
            extract_tool_calls(req.tool_calling->parser, answer, req.tool_calling->parallel_tool_calls);
        message["content"] = parsed.content ? ojson(*parsed.content) : ojson(nullptr);
        ojson calls = ojson::array();
        for (size_t k = 0; k < parsed.calls.size(); ++k)
          calls.push_back(tool_call_json(tool_call_id(choice_request_id(id, c.index), int(k)), parsed.calls[k]));
        tools_called = !calls.empty();
        if (tools_called) message["tool_calls"] = std::move(calls);
      }
      choice["message"] = std::move(message);
    } else {
      choice["text"] = c.text;
    }
    choice["logprobs"] = logprobs_json(req, c.token_ids, c.logprobs, prompt_last_token(req, c.index), offset, tok,
                                       req.echo ? &echoed : nullptr);
    choice["finish_reason"] = chat_finish_reason_json(req, c.finish_reason, tools_called);
    choice["stop_reason"] = stop_reason_json(c.stop_reason);
    if (req.prompt_logprobs >= 0 && !is_chat(req))
      choice["prompt_logprobs"] = prompt_logprobs_json(req, echoed.ids, c.prompt_logprobs, tok);
    list.push_back(std::move(choice));
  }
  out["choices"] = std::move(list);
  out["usage"] = usage_json(usage);
  // Chat: one prompt, the same for every choice, on the response (vLLM's ChatCompletionResponse).
  if (req.prompt_logprobs >= 0 && is_chat(req))
    out["prompt_logprobs"] = choices.empty()
                                 ? ojson(nullptr)
                                 : prompt_logprobs_json(req, prompt_ids(req, 0), choices[0].prompt_logprobs, tok);
  return dump(out);
}

std::string choice_request_id(const std::string& id, int index) { return id + "-" + std::to_string(index); }

std::string stream_chunk(const GenerateRequest& req, const std::string& id, long created, int index,
                         const RequestOutput& delta, const Tokenizer& tok, bool first_chunk, StreamCursor* cursor,
                         const ChatToolDelta* tools) {
  StreamCursor local;
  StreamCursor& at = cursor ? *cursor : local;
  const int prev = at.prev_token == -2 ? prompt_last_token(req, index) : at.prev_token;
  std::string events;
  auto event = [&](ojson choice) {
    ojson chunk = envelope(req, id, created, chunk_object(req));
    chunk["choices"] = ojson::array({std::move(choice)});
    // Chat: null on every chunk, counts in the last (OpenAI); a completion chunk's usage may not be null: left out.
    if (req.include_usage && is_chat(req)) chunk["usage"] = nullptr;
    events += sse(chunk);
  };
  std::string text = delta.text;
  // The first chunk of each choice carries the prompt's logprobs (delta.prompt_logprobs comes with the first output).
  const bool with_prompt_logprobs = first_chunk && req.prompt_logprobs >= 0;
  const std::vector<int>& prompt = prompt_ids(req, index);
  if (is_chat(req)) {
    if (first_chunk) {  // vLLM opens each choice with the role and empty content
      ojson role = {{"index", index},
                    {"delta", {{"role", "assistant"}, {"content", ""}}},
                    {"logprobs", nullptr},
                    {"finish_reason", nullptr}};
      if (with_prompt_logprobs) role["prompt_logprobs"] = prompt_logprobs_json(req, prompt, delta.prompt_logprobs, tok);
      event(std::move(role));
    }
    // With tools: content and tool-call deltas as the stream decided them; logprobs on the first, the end on the last.
    std::vector<ojson> deltas;
    if (!tools)
      deltas.push_back({{"content", text}});
    else
      for (const ToolStreamEvent& e : tools->events)
        deltas.push_back(e.tool_call   ? ojson{{"tool_calls", ojson::array({tool_call_delta_json(*e.tool_call)})}}
                         : e.reasoning ? ojson{{"reasoning_content", e.content}, {"reasoning", e.content}}
                                       : ojson{{"content", e.content}});
    if (deltas.empty()) deltas.push_back({{"content", ""}});
    const ojson logprobs = logprobs_json(req, delta.token_ids, delta.logprobs, prev, at.text_offset, tok);
    const ojson finish = chat_finish_reason_json(req, delta.finish_reason, tools && tools->tools_called);
    for (size_t i = 0; i < deltas.size(); ++i) {
      const bool last = i + 1 == deltas.size();
      ojson choice = {{"index", index},
                      {"delta", std::move(deltas[i])},
                      {"logprobs", i ? ojson(nullptr) : logprobs},
                      {"finish_reason", last ? finish : ojson(nullptr)}};
      if (last && delta.finished()) choice["stop_reason"] = stop_reason_json(delta.stop_reason);
      event(std::move(choice));
    }
  } else {
    const bool echo = first_chunk && req.echo;
    if (echo) {
      const size_t p = prompt_of(req, index);
      if (p < req.prompt_texts.size()) text = req.prompt_texts[p] + text;
      at.text_offset += utf8_length(text) - utf8_length(delta.text);
    }
    const EchoedPrompt echoed{prompt, delta.prompt_logprobs};
    ojson choice = {{"index", index},
                    {"text", text},
                    {"logprobs", logprobs_json(req, delta.token_ids, delta.logprobs, prev, at.text_offset, tok,
                                               echo ? &echoed : nullptr)},
                    {"finish_reason", finish_reason_json(delta.finish_reason)},
                    {"stop_reason", stop_reason_json(delta.stop_reason)}};
    if (with_prompt_logprobs) choice["prompt_logprobs"] = prompt_logprobs_json(req, prompt, delta.prompt_logprobs, tok);
    event(std::move(choice));
  }
  at.text_offset += utf8_length(delta.text);
  if (!delta.token_ids.empty()) at.prev_token = delta.token_ids.back();
  return events;
}

std::string stream_usage_chunk(const GenerateRequest& req, const std::string& id, long created, const Usage& usage) {
  ojson chunk = envelope(req, id, created, chunk_object(req));
  chunk["choices"] = ojson::array();
  chunk["usage"] = usage_json(usage);
  return sse(chunk);
}

}  // namespace parley::http

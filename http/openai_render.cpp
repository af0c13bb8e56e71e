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

ojson stop_reason_json(const StopReason& r) {
  if (const int* id = std::get_if<int>(&r)) return *id;
  if (const std::string* s = std::get_if<std::string>(&r)) return *s;
  return nullptr;
}

ojson usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens}, {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens}};
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

// Completions logprobs: parallel arrays; top_logprobs maps the sampled token and the top alternatives.
ojson completion_logprobs(const GenerateRequest& req, const std::vector<int>& ids,
                          const std::vector<TokenLogprobs>& lps, int prev, int text_offset, const Tokenizer& tok) {
  ojson tokens = ojson::array(), token_logprobs = ojson::array(), top = ojson::array(), offsets = ojson::array();
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string text = tok.token_bytes(prev, ids[i]);
    tokens.push_back(text);
    token_logprobs.push_back(clamp_logprob(lps[i].logprob));
    ojson alternatives = ojson::object();
    alternatives[text] = clamp_logprob(lps[i].logprob);
    for (size_t k = 0; k < lps[i].top.size() && int(k) < req.top_logprobs; ++k)
      alternatives[tok.token_bytes(prev, lps[i].top[k].first)] = clamp_logprob(lps[i].top[k].second);
    top.push_back(std::move(alternatives));
    offsets.push_back(text_offset);
    text_offset += utf8_length(text);
    prev = ids[i];
  }
  return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top}, {"text_offset", offsets}};
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
  return {{"content", content}};
}

// null unless the request asked for logprobs and there are tokens, each with its entry.
ojson logprobs_json(const GenerateRequest& req, const std::vector<int>& ids, const std::vector<TokenLogprobs>& lps,
                    int prev, int text_offset, const Tokenizer& tok) {
  if (req.top_logprobs < 0 || ids.empty() || lps.size() != ids.size()) return nullptr;
  return is_chat(req) ? chat_logprobs(req, ids, lps, prev, tok) : completion_logprobs(req, ids, lps, prev, text_offset, tok);
}

ojson envelope(const GenerateRequest& req, const std::string& id, long created, const char* object) {
  return {{"id", id}, {"object", object}, {"created", created}, {"model", req.model}};
}

const char* chunk_object(const GenerateRequest& req) { return is_chat(req) ? "chat.completion.chunk" : "text_completion"; }

}  // namespace

std::string completion_response(const GenerateRequest& req, const std::string& id, long created,
                                 const std::vector<Choice>& choices, const Usage& usage, const Tokenizer& tok) {
  ojson out = envelope(req, id, created, is_chat(req) ? "chat.completion" : "text_completion");
  ojson list = ojson::array();
  for (const Choice& c : choices) {
    const size_t p = prompt_of(req, c.index);
    const int offset = req.echo && p < req.prompt_texts.size() ? utf8_length(req.prompt_texts[p]) : 0;
    ojson choice = {{"index", c.index}};
    if (is_chat(req)) choice["message"] = {{"role", "assistant"}, {"content", c.text}};
    else choice["text"] = c.text;
    choice["logprobs"] = logprobs_json(req, c.token_ids, c.logprobs, prompt_last_token(req, c.index), offset, tok);
    choice["finish_reason"] = finish_reason_json(c.finish_reason);
    choice["stop_reason"] = stop_reason_json(c.stop_reason);
    list.push_back(std::move(choice));
  }
  out["choices"] = std::move(list);
  out["usage"] = usage_json(usage);
  return dump(out);
}

std::string stream_chunk(const GenerateRequest& req, const std::string& id, long created, int index,
                         const RequestOutput& delta, const Tokenizer& tok, bool first_chunk, StreamCursor* cursor) {
  StreamCursor local;
  StreamCursor& at = cursor ? *cursor : local;
  const int prev = at.prev_token == -2 ? prompt_last_token(req, index) : at.prev_token;
  std::string events;
  auto event = [&](ojson choice) {
    ojson chunk = envelope(req, id, created, chunk_object(req));
    chunk["choices"] = ojson::array({std::move(choice)});
    if (req.include_usage) chunk["usage"] = nullptr;  // OpenAI: null on every chunk, counts in the last one
    events += sse(chunk);
  };
  std::string text = delta.text;
  if (is_chat(req)) {
    if (first_chunk)  // vLLM opens each choice with the role and empty content
      event({{"index", index}, {"delta", {{"role", "assistant"}, {"content", ""}}}, {"logprobs", nullptr},
             {"finish_reason", nullptr}});
    ojson choice = {{"index", index}, {"delta", {{"content", text}}},
                    {"logprobs", logprobs_json(req, delta.token_ids, delta.logprobs, prev, at.text_offset, tok)},
                    {"finish_reason", finish_reason_json(delta.finish_reason)}};
    if (delta.finished()) choice["stop_reason"] = stop_reason_json(delta.stop_reason);
    event(std::move(choice));
  } else {
    if (first_chunk && req.echo) {
      const size_t p = prompt_of(req, index);
      if (p < req.prompt_texts.size()) text = req.prompt_texts[p] + text;
      at.text_offset += utf8_length(text) - utf8_length(delta.text);
    }
    event({{"index", index}, {"text", text},
           {"logprobs", logprobs_json(req, delta.token_ids, delta.logprobs, prev, at.text_offset, tok)},
           {"finish_reason", finish_reason_json(delta.finish_reason)}, {"stop_reason", stop_reason_json(delta.stop_reason)}});
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

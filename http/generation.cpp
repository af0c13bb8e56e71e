#include "http/generation.hpp"

#include <nlohmann/json.hpp>

#include "http/endpoints.hpp"
#include "http/openai_fields.hpp"

namespace parley::http {
namespace {

nlohmann::json stop_reason_json(const StopReason& r) {
  if (const int* t = std::get_if<int>(&r)) return *t;
  if (const std::string* s = std::get_if<std::string>(&r)) return *s;
  return nullptr;
}

nlohmann::json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

}  // namespace

Generation::Generation(GenerateRequest request, std::string id, long created, const Tokenizer& tokenizer,
                       Transport transport, std::string client_id)
    : request_(std::move(request)),
      id_(std::move(id)),
      client_id_(std::move(client_id)),
      created_(created),
      tokenizer_(&tokenizer),
      transport_(transport) {
  const int n = request_.params.n;
  const int total = int(request_.prompts.size()) * n;
  choices_.resize(size_t(total));
  started_.assign(size_t(total), false);
  cursors_.resize(size_t(total));
  finished_.assign(size_t(total), false);
  for (int k = 0; k < total; ++k) {
    choices_[k].index = k;
    if (request_.echo) choices_[k].text = request_.prompt_texts[size_t(k / n)];
  }
  for (const auto& p : request_.prompts) usage_.prompt_tokens += int(p.size());  // once per prompt, not per sample
  if (request_.reasoning && transport_ == Transport::Sse)
    for (int k = 0; k < total; ++k) reasoning_streams_.emplace_back(*request_.reasoning);
  if (request_.endpoint == Endpoint::Messages && transport_ == Transport::Sse)
    message_stream_.emplace(id_, request_.model, usage_.prompt_tokens);
  if (request_.endpoint == Endpoint::Responses && transport_ == Transport::Sse)
    response_stream_.emplace(request_, id_, created_);
  if (request_.tool_calling && transport_ == Transport::Sse)
    for (int k = 0; k < total; ++k)
      tool_streams_.emplace_back(request_.tool_calling->parser, choice_request_id(id_, k),
                                 request_.tool_calling->parallel_tool_calls);
}

std::vector<EngineRequestSpec> Generation::engine_requests() const {
  std::vector<EngineRequestSpec> specs;
  const int n = request_.params.n;
  // One engine request per prompt; with n > 1 it is prefilled once and split into its n choices.
  for (size_t p = 0; p < request_.prompts.size(); ++p) {
    EngineRequestSpec s;
    s.prompt_token_ids = request_.prompts[p];
    s.params = request_.params;
    s.pooling = request_.pooling;
    for (int i = 0; i < n && n > 1; ++i) s.child_req_ids.push_back(choice_request_id(id_, int(p) * n + i));
    s.req_id = choice_request_id(id_, int(p) * n);
    specs.push_back(std::move(s));
  }
  return specs;
}

int Generation::choice_of(const std::string& req_id) const {
  if (req_id.size() <= id_.size() + 1 || req_id.compare(0, id_.size(), id_) != 0 || req_id[id_.size()] != '-')
    return -1;
  try {
    const int k = std::stoi(req_id.substr(id_.size() + 1));
    return k >= 0 && k < int(choices_.size()) ? k : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

std::string Generation::on_output(const RequestOutput& out) {
  const int k = choice_of(out.req_id);
  if (k < 0 || finished_[size_t(k)]) return "";
  Choice& c = choices_[size_t(k)];
  c.token_text_starts.insert(c.token_text_starts.end(), out.token_ids.size(), c.text.size());
  c.text += out.text;
  c.token_ids.insert(c.token_ids.end(), out.token_ids.begin(), out.token_ids.end());
  c.logprobs.insert(c.logprobs.end(), out.logprobs.begin(), out.logprobs.end());
  if (!out.prompt_logprobs.empty()) c.prompt_logprobs = out.prompt_logprobs;
  if (!out.embedding.empty()) c.embedding = out.embedding;
  if (!out.error.empty() && !failure_) failure_ = api_error(503, out.error);
  if (out.finished()) {
    c.finish_reason = out.finish_reason;
    c.stop_reason = out.stop_reason;
    finished_[size_t(k)] = true;
    ++num_finished_;
    usage_.completion_tokens += out.num_output_tokens;
  }
  if (transport_ == Transport::Json) return "";
  const bool first = !started_[size_t(k)];
  const bool opens = first && (request_.echo || !out.prompt_logprobs.empty());  // the echo or prompt logprobs go now
  std::optional<ChatToolDelta> tools = split_output(k, out);
  if (message_stream_ || response_stream_) {  // the answer's pieces, in the other API's events
    started_[size_t(k)] = true;
    std::vector<ToolStreamEvent> events;
    if (tools) events = std::move(tools->events);
    if (!tools && !out.text.empty()) events.push_back({out.text, std::nullopt});
    if (message_stream_) return message_stream_->feed(events, first, out.finished());
    return response_stream_->feed(events, first, out.finished(), out.finish_reason == FinishReason::Length);
  }
  const bool nothing = tools ? tools->events.empty() : out.text.empty();
  if (nothing && !out.finished() && out.logprobs.empty() && !opens) return "";  // held back
  started_[size_t(k)] = true;
  if (transport_ == Transport::Sse)
    return stream_chunk(request_, id_, created_, k, out, *tokenizer_, first, &cursors_[size_t(k)],
                        tools ? &*tools : nullptr);
  RequestOutput delta = out;
  if (first && request_.echo) delta.text = request_.prompt_texts[size_t(k) / size_t(request_.params.n)] + delta.text;
  nlohmann::json m = {
      {"id", client_id_}, {"type", "delta"}, {"index", k}, {"text", delta.text}, {"token_ids", delta.token_ids}};
  if (delta.finished()) {
    m["finish_reason"] = finish_reason_name(delta.finish_reason);
    m["stop_reason"] = stop_reason_json(delta.stop_reason);
  }
  return m.dump();
}

std::optional<ChatToolDelta> Generation::split_output(int k, const RequestOutput& out) {
  std::optional<ChatToolDelta> tools;
  std::string content = out.text;
  std::vector<ToolStreamEvent> thinking;  // reasoning first: it ends before the answer begins
  if (!reasoning_streams_.empty()) {
    ReasoningStream& rs = reasoning_streams_[size_t(k)];
    std::vector<ReasoningPiece> pieces = rs.feed(out.text);
    if (out.finished())
      for (ReasoningPiece& p : rs.finish()) pieces.push_back(std::move(p));
    content.clear();
    for (ReasoningPiece& p : pieces)
      if (p.reasoning)
        thinking.push_back({std::move(p.text), std::nullopt, true});
      else
        content += p.text;
    tools.emplace();
  }
  if (!tool_streams_.empty()) {  // the answer goes out as the tool-call stream decides it
    ToolCallStream& stream = tool_streams_[size_t(k)];
    tools.emplace();
    tools->events = stream.feed(content);
    if (out.finished())
      for (auto& e : stream.finish()) tools->events.push_back(std::move(e));
    tools->tools_called = stream.tools_called();
  } else if (tools && !content.empty()) {
    tools->events.push_back({std::move(content), std::nullopt});
  }
  if (tools) tools->events.insert(tools->events.begin(), thinking.begin(), thinking.end());
  return tools;
}

Usage Generation::final_usage() const {
  Usage u = usage_;
  if (!request_.reasoning) return u;
  // A token is the reasoning's when its output began before the answer did (the end marker's included).
  u.reasoning_tokens = 0;
  for (const Choice& c : choices_) {
    const size_t answer = split_reasoning(*request_.reasoning, c.text).content_start;
    for (size_t at : c.token_text_starts) *u.reasoning_tokens += at < answer;
  }
  return u;
}

std::string Generation::closing_text() const {
  const Usage usage = final_usage();
  switch (transport_) {
    case Transport::Json:
      return traits_of(request_.endpoint).render({request_, id_, created_, choices_, usage, *tokenizer_});
    case Transport::Sse: {
      if (message_stream_) return message_stream_->close(choices_[0], tools_called(0), usage.completion_tokens);
      if (response_stream_)
        return response_stream_->close(response_object(request_, id_, created_, choices_[0], usage));
      std::string s = request_.include_usage ? stream_usage_chunk(request_, id_, created_, usage) : "";
      return s + std::string(kStreamDone);
    }
    case Transport::WebSocket: {
      nlohmann::json choices = nlohmann::json::array();
      for (const Choice& c : choices_)
        choices.push_back({{"index", c.index},
                           {"finish_reason", finish_reason_name(c.finish_reason)},
                           {"stop_reason", stop_reason_json(c.stop_reason)}});
      return nlohmann::json{{"id", client_id_}, {"type", "final"}, {"choices", choices}, {"usage", usage_json(usage)}}
          .dump();
    }
  }
  return "";
}

std::string Generation::error_text(const ApiError& e) const {
  switch (transport_) {
    case Transport::Json:
      return error_json(e);
    case Transport::Sse:
      if (message_stream_) return anthropic_error_event(e);
      if (response_stream_) return response_stream_->error(e);
      return stream_error_event(e) + std::string(kStreamDone);
    case Transport::WebSocket:
      return websocket_error(e, client_id_);
  }
  return "";
}

std::string Generation::error_json(const ApiError& e) const { return error_json_for(request_.endpoint, e); }

std::optional<StoredResponse> Generation::stored_response() const {
  if (request_.endpoint != Endpoint::Responses || failure_ || !done()) return std::nullopt;
  return response_to_store(request_, response_object(request_, id_, created_, choices_[0], final_usage()));
}

std::vector<std::string> Generation::unfinished_req_ids() const {
  std::vector<std::string> ids;
  for (size_t k = 0; k < choices_.size(); ++k)
    if (!finished_[k]) ids.push_back(id_ + "-" + std::to_string(k));
  return ids;
}

}  // namespace parley::http

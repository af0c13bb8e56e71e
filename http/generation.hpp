// One client request in flight: its engine requests (one per prompt; n > 1 splits into n choices in the
// engine, choice i seeded seed + i) and the text it owes the client as their outputs arrive, for each transport: SSE
// chunks, one JSON body at the end, or websocket messages tagged with the client's own id. Pure logic, no I/O.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "engine/engine_client.hpp"
#include "http/anthropic_protocol.hpp"
#include "http/openai_protocol.hpp"
#include "http/responses_protocol.hpp"

namespace parley::http {

enum class Transport { Sse, Json, WebSocket };

class Generation {
 public:
  // id: "cmpl-...", "chatcmpl-...", "msg_..." or "resp_..."; engine request ids are id + "-" + choice index.
  Generation(GenerateRequest request, std::string id, long created, const Tokenizer& tokenizer, Transport transport,
             std::string client_id = "");

  std::vector<EngineRequestSpec> engine_requests() const;
  // Text owed to the client for this output (SSE events or websocket messages; "" for Json until done).
  std::string on_output(const RequestOutput& output);
  // Everything finished: the closing text (Json: the whole body; Sse: usage chunk if asked, then [DONE];
  // WebSocket: the final message with usage).
  bool done() const { return num_finished_ == int(choices_.size()); }
  std::string closing_text() const;
  // Refused or failed: the error as this transport shows it (Sse: in-band event then [DONE]).
  std::string error_text(const ApiError& e) const;
  // An error as a JSON body in the API's shape (OpenAI's, or Anthropic's for /v1/messages).
  std::string error_json(const ApiError& e) const;
  // A finished /v1/responses generation with store true: what the response store keeps (GET shows it).
  std::optional<StoredResponse> stored_response() const;
  std::vector<std::string> unfinished_req_ids() const;
  // The engine failed a choice (an output with an error): the generation ends with this error instead.
  const std::optional<ApiError>& failure() const { return failure_; }
  const GenerateRequest& request() const { return request_; }
  const std::string& id() const { return id_; }

 private:
  int choice_of(const std::string& req_id) const;  // -1 if not ours
  Usage final_usage() const;                       // with the reasoning tokens counted
  // The pieces this output adds to choice k's answer as the reasoning and tool-call streams decide them (none
  // when neither reads the stream: the text goes out as it comes).
  std::optional<ChatToolDelta> split_output(int k, const RequestOutput& out);
  bool tools_called(int k) const { return !tool_streams_.empty() && tool_streams_[size_t(k)].tools_called(); }

  GenerateRequest request_;
  std::string id_, client_id_;
  long created_;
  const Tokenizer* tokenizer_;
  Transport transport_;
  std::vector<Choice> choices_;
  std::vector<bool> started_, finished_;
  std::vector<StreamCursor> cursors_;               // per streamed choice: text offset and previous token
  std::vector<ToolCallStream> tool_streams_;        // per streamed chat choice read for tool calls
  std::vector<ReasoningStream> reasoning_streams_;  // per choice, streamed chat with --reasoning-parser
  std::optional<MessageStream> message_stream_;     // a streamed /v1/messages: Anthropic's events
  std::optional<ResponseStream> response_stream_;   // a streamed /v1/responses: the Responses' typed events
  int num_finished_ = 0;
  Usage usage_;
  std::optional<ApiError> failure_;
};

}  // namespace parley::http

// Errors, /v1/models, /tokenize and /detokenize. Request parsing is in openai_parse.cpp, response
// rendering in openai_render.cpp, field readers in openai_fields.cpp.
#include "http/openai_protocol.hpp"

#include "http/chat_prompt.hpp"
#include "http/openai_fields.hpp"

namespace parley::http {

using namespace detail;

namespace {

ojson error_json(const ApiError& e) {
  // OpenAI's ErrorResponse: {"error": {"message", "type", "param", "code"}}; code a string or null (the status
  // is the HTTP one; vLLM's numeric code breaks the specification).
  return {{"error",
           {{"message", e.message},
            {"type", e.type},
            {"param", e.param.empty() ? ojson(nullptr) : ojson(e.param)},
            {"code", e.code.empty() ? ojson(nullptr) : ojson(e.code)}}}};
}

constexpr std::string_view kTokenizeFields[] = {"model",
                                                "prompt",
                                                "messages",
                                                "add_special_tokens",
                                                "add_generation_prompt",
                                                "return_token_strs",
                                                "tools",
                                                "chat_template",
                                                "chat_template_kwargs"};
constexpr std::string_view kApplyTemplateFields[] = {"model", "messages",      "add_generation_prompt",
                                                     "tools", "chat_template", "chat_template_kwargs"};
constexpr std::string_view kDetokenizeFields[] = {"model", "tokens"};

}  // namespace

ApiError api_error(int status, std::string message, std::string code) {
  const char* type = "BadRequestError";
  switch (status) {
    case 401:
      type = "AuthenticationError";
      break;
    case 403:
      type = "PermissionDeniedError";
      break;
    case 404:
      type = "NotFoundError";
      break;
    case 405:
      type = "MethodNotAllowed";
      break;
    case 409:
      type = "ConflictError";
      break;
    case 413:
      type = "RequestEntityTooLarge";
      break;
    case 429:
      type = "RateLimitError";
      break;
    case 503:
      type = "ServiceUnavailableError";
      break;
  }
  return {status, std::move(message), type, "", std::move(code)};
}

std::string error_body(const ApiError& e) { return dump(error_json(e)); }

std::string stream_error_event(const ApiError& e) { return sse(error_json(e)); }

std::string websocket_error(const ApiError& e, const std::string& id) {
  ojson m = {{"id", id}, {"type", "error"}, {"status", e.status}};
  m["error"] = std::move(error_json(e)["error"]);
  return dump(m);
}

std::string model_card(const ServingContext& ctx, long created) {
  ojson card = {{"id", ctx.model_name},
                {"object", "model"},
                {"created", created},
                {"owned_by", "parley"},
                {"max_model_len", ctx.max_model_len},
                {"architecture", ctx.architecture},
                {"context_length", ctx.context_length},
                {"vocab_size", ctx.vocab_size},
                {"parameters", ctx.parameters},
                {"active_parameters", ctx.active_parameters}};
  if (ctx.n_experts > 0) card["experts"] = {{"count", ctx.n_experts}, {"used_per_token", ctx.n_experts_used}};
  return dump(card);
}

std::string models_response(const ServingContext& ctx, long created) {
  return dump({{"object", "list"}, {"data", ojson::array({ojson::parse(model_card(ctx, created))})}});
}

// vLLM's TokenizeCompletionRequest ({"prompt"}) or TokenizeChatRequest ({"messages"}). Chat messages
// are rendered and tokenized exactly as /v1/chat/completions does, so the ids match what would run.
std::variant<std::string, ApiError> tokenize_response(std::string_view body, const ServingContext& ctx) {
  try {
    const json j = parse_object(body);
    reject_unknown_fields(j, kTokenizeFields);
    check_model(j, ctx);
    const Tokenizer& tok = *ctx.tokenizer;
    const bool has_prompt = field(j, "prompt") != nullptr, has_messages = field(j, "messages") != nullptr;
    if (has_prompt == has_messages)
      fail("Exactly one of 'prompt' and 'messages' must be given.", has_prompt ? "messages" : "prompt");
    // vLLM's defaults: a prompt gets BOS, chat messages do not (their template writes it).
    const bool add_special = get_bool(j, "add_special_tokens").value_or(has_prompt);
    std::string text;
    if (has_prompt) {
      text = *get_string(j, "prompt");
      for (const char* chat_only : {"add_generation_prompt", "tools", "chat_template", "chat_template_kwargs"})
        if (field(j, chat_only)) fail(std::string("`") + chat_only + "` applies to 'messages' only.", chat_only);
    } else {
      text = render_chat_prompt(read_chat_request(body, j), ctx.chat_template.get(), tok);
    }
    const std::vector<int> ids = tok.encode(text, add_special);
    ojson out = {{"count", ids.size()}, {"max_model_len", ctx.max_model_len}, {"tokens", ids}};
    if (get_bool(j, "return_token_strs").value_or(false)) {
      ojson strs = ojson::array();
      int prev = -1;
      for (int id : ids) strs.push_back(tok.token_bytes(prev, id)), prev = id;
      out["token_strs"] = std::move(strs);
    }
    return dump(out);
  } catch (const RequestError& e) {
    return e.error;
  }
}

std::variant<std::string, ApiError> apply_template_response(std::string_view body, const ServingContext& ctx) {
  try {
    const json j = parse_object(body);
    reject_unknown_fields(j, kApplyTemplateFields);
    check_model(j, ctx);
    const ChatRequest request = read_chat_request(body, j);
    return dump({{"prompt", render_chat_prompt(request, ctx.chat_template.get(), *ctx.tokenizer)}});
  } catch (const RequestError& e) {
    return e.error;
  }
}

std::variant<std::string, ApiError> detokenize_response(std::string_view body, const ServingContext& ctx) {
  try {
    const json j = parse_object(body);
    reject_unknown_fields(j, kDetokenizeFields);
    check_model(j, ctx);
    const json* tokens = field(j, "tokens");
    if (!tokens) fail("Missing required parameter: 'tokens'.", "tokens");
    const std::vector<int> ids = token_ids(*tokens, ctx.tokenizer->vocab().size(), "tokens");
    // vLLM decodes with skip_special_tokens=False: a control token comes back as its own text.
    return dump({{"prompt", ctx.tokenizer->decode(ids, -1, /*special_text=*/true)}});
  } catch (const RequestError& e) {
    return e.error;
  }
}

}  // namespace parley::http

#include "http/endpoints.hpp"

#include "http/anthropic_protocol.hpp"
#include "http/openai_fields.hpp"
#include "http/responses_protocol.hpp"

namespace parley::http {
namespace {

std::string completion(const FinalAnswer& a) {
  return completion_response(a.request, a.id, a.created, a.choices, a.usage, a.tokenizer);
}
std::string message(const FinalAnswer& a) { return message_response(a.request, a.id, a.choices[0], a.usage); }
std::string response(const FinalAnswer& a) {
  return detail::dump(response_object(a.request, a.id, a.created, a.choices[0], a.usage));
}
std::string embedding(const FinalAnswer& a) { return embedding_response(a.request, a.choices, a.usage); }
std::string rerank(const FinalAnswer& a) { return rerank_response(a.request, a.id, a.choices, a.usage); }
std::string score(const FinalAnswer& a) { return score_response(a.request, a.id, a.created, a.choices, a.usage); }

}  // namespace

const EndpointTraits& traits_of(Endpoint endpoint) {
  static const EndpointTraits kCompletions{"cmpl-", ErrorShape::OpenAI, completion};
  static const EndpointTraits kChat{"chatcmpl-", ErrorShape::OpenAI, completion};
  static const EndpointTraits kMessages{"msg_", ErrorShape::Anthropic, message};
  static const EndpointTraits kResponses{"resp_", ErrorShape::OpenAI, response};
  static const EndpointTraits kEmbeddings{"embd-", ErrorShape::OpenAI, embedding};
  static const EndpointTraits kRerank{"rerank-", ErrorShape::OpenAI, rerank};
  static const EndpointTraits kScore{"score-", ErrorShape::OpenAI, score};
  switch (endpoint) {
    case Endpoint::Completions:
      return kCompletions;
    case Endpoint::ChatCompletions:
      return kChat;
    case Endpoint::Messages:
      return kMessages;
    case Endpoint::Responses:
      return kResponses;
    case Endpoint::Embeddings:
      return kEmbeddings;
    case Endpoint::Rerank:
      return kRerank;
    case Endpoint::Score:
      return kScore;
  }
  return kCompletions;
}

std::string error_json_for(Endpoint endpoint, const ApiError& e) {
  return traits_of(endpoint).errors == ErrorShape::Anthropic ? anthropic_error_body(e) : error_body(e);
}

}  // namespace parley::http

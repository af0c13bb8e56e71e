// What the HTTP layer knows of each engine-backed endpoint beyond its parse (the route table in http/router.cpp
// names that): the prefix of its ids, the API its errors are shaped for, and its whole answer when it is not
// streamed. One row per endpoint in http/endpoints.cpp.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "http/openai_protocol.hpp"

namespace parley::http {

// Everything an answer is made of once every choice has finished.
struct FinalAnswer {
  const GenerateRequest& request;
  const std::string& id;
  long created;
  const std::vector<Choice>& choices;
  const Usage& usage;
  const Tokenizer& tokenizer;
};

enum class ErrorShape { OpenAI, Anthropic };

struct EndpointTraits {
  const char* id_prefix;  // "chatcmpl-", "msg_", ...: the client sees ids in its API's style
  ErrorShape errors;
  std::string (*render)(const FinalAnswer&);  // the JSON body of a request that did not stream
};

const EndpointTraits& traits_of(Endpoint endpoint);
// An error as a JSON body in the endpoint's API's shape.
std::string error_json_for(Endpoint endpoint, const ApiError& e);

}  // namespace parley::http

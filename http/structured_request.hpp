// The output constraint of a completions or chat body: OpenAI's response_format (text, json_object,
// json_schema) or vLLM's structured_outputs (json, regex, choice, grammar, json_object), compiled here
// so that a schema or grammar the engine cannot run is a 400 naming what is wrong, before it queues.
#pragma once
#include <string_view>

#include "http/openai_fields.hpp"

namespace parley::http::detail {

// Sets req.params.structured_outputs from `body` (the raw text is parsed again keeping the schema's key
// order: properties come out in the order the client wrote them). Throws RequestError.
void read_structured_outputs(std::string_view raw_body, const json& body, SamplingParams& params);

}  // namespace parley::http::detail

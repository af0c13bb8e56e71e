// POST /v1/embeddings: OpenAI's CreateEmbeddingRequest (with vLLM's normalize and truncate_prompt_tokens) parsed into
// the one request type, each input a pooling request, and CreateEmbeddingResponse rendered from the choices.
#include <algorithm>
#include <bit>
#include <cstring>

#include "http/openai_fields.hpp"

namespace parley::http {
namespace {

using namespace detail;

constexpr std::string_view kEmbeddingFields[] = {"model", "input",     "encoding_format",        "dimensions",
                                                 "user",  "normalize", "truncate_prompt_tokens", "add_special_tokens"};

// vLLM's truncate_prompt_tokens: the last N tokens of each input.
void truncate_prompts(const json& body, const ServingContext& ctx, GenerateRequest& req) {
  const std::optional<size_t> keep = truncation_length(body, ctx);
  if (!keep) return;
  for (auto& p : req.prompts)
    if (p.size() > *keep) p.erase(p.begin(), p.end() - long(*keep));
}

void check_lengths(const ServingContext& ctx, const GenerateRequest& req) {
  for (const auto& p : req.prompts)
    if (long(p.size()) > ctx.max_model_len)
      fail("This model's maximum context length is " + std::to_string(ctx.max_model_len) +
               " tokens. However, you requested " + std::to_string(p.size()) +
               " tokens in the input for embedding generation. Please reduce the length of the input "
               "(or set truncate_prompt_tokens).",
           "input");
}

PoolingParams read_pooling(const json& body, const ServingContext& ctx) {
  PoolingParams p;
  p.normalize = get_bool(body, "normalize").value_or(true);
  if (const std::optional<int> d = get_int32(body, "dimensions")) {
    if (!ctx.matryoshka)
      fail("Model \"" + ctx.model_name +
               "\" does not support matryoshka representation, changing output dimensions will lead to poor "
               "results (start the server with --matryoshka if it was trained for it).",
           "dimensions");
    if (*d < 1 || *d > ctx.embedding_dim)
      fail("dimensions must be in [1, " + std::to_string(ctx.embedding_dim) + "], got " + std::to_string(*d) + ".",
           "dimensions");
    p.dimensions = *d;
  }
  return p;
}

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

}  // namespace

std::string base64_floats(const std::vector<float>& v) {
  std::string bytes(v.size() * 4, '\0');
  for (size_t i = 0; i < v.size(); ++i) {
    const uint32_t u = std::bit_cast<uint32_t>(v[i]);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + size_t(b)] = char((u >> (8 * b)) & 0xff);  // little-endian
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t group = 0;
    for (size_t k = 0; k < 3; ++k) group = group << 8 | (k < n ? uint8_t(bytes[i + k]) : 0u);
    for (size_t k = 0; k < 4; ++k) out += k <= n ? kBase64[(group >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

std::variant<GenerateRequest, ApiError> parse_embedding_request(std::string_view body, const ServingContext& ctx) {
  try {
    const json j = parse_object(body);
    GenerateRequest req;
    for (std::string& key : unknown_fields(j, kEmbeddingFields)) {
      if (ctx.strict_request_fields) fail("Unrecognized request argument supplied: " + key, key);
      req.ignored_fields.push_back(std::move(key));
    }
    check_model(j, ctx);
    req.endpoint = Endpoint::Embeddings;
    req.model = ctx.model_name;
    req.user = get_string(j, "user").value_or("");
    const std::string format = get_string(j, "encoding_format").value_or("float");
    if (format != "float" && format != "base64")
      fail("encoding_format must be \"float\" or \"base64\", got \"" + format + "\".", "encoding_format");
    req.base64 = format == "base64";
    req.pooling = read_pooling(j, ctx);
    read_prompts(j, ctx, req, "input");
    truncate_prompts(j, ctx, req);
    check_lengths(ctx, req);
    return req;
  } catch (const RequestError& e) {
    return e.error;
  }
}

std::string embedding_response(const GenerateRequest& req, const std::vector<Choice>& choices, const Usage& usage) {
  ojson data = ojson::array();
  for (const Choice& c : choices) {
    ojson item = {{"object", "embedding"}, {"index", c.index}};
    if (req.base64)
      item["embedding"] = base64_floats(c.embedding);
    else
      item["embedding"] = c.embedding;
    data.push_back(std::move(item));
  }
  const ojson out = {{"object", "list"},
                     {"data", std::move(data)},
                     {"model", req.model},
                     {"usage", {{"prompt_tokens", usage.prompt_tokens}, {"total_tokens", usage.prompt_tokens}}}};
  return dump(out);
}

}  // namespace parley::http

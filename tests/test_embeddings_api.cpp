// POST /v1/embeddings on the tok512 tokenizer: inputs parsed into pooling requests, every bad one a 400 with its
// exact error, the task routed (embeddings on a generating server and the reverse are 400s), and the response in
// OpenAI's CreateEmbeddingResponse shape with float or base64 vectors.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "http/router.hpp"
#include "tests/openai_test_util.hpp"

using namespace parley;
using namespace parley::http;
using namespace parley::openai_test;
using json = nlohmann::json;

namespace {

ServingContext embedding_context(bool matryoshka = false) {
  ServingContext ctx = context();
  ctx.pooling = PoolingType::Last;
  ctx.embedding_dim = 8;
  ctx.matryoshka = matryoshka;
  return ctx;
}

GenerateRequest embed_ok(const std::string& body, const ServingContext& ctx = embedding_context()) {
  INFO(body);
  auto r = parse_embedding_request(body, ctx);
  if (auto* e = std::get_if<ApiError>(&r)) FAIL(e->message);
  return std::get<GenerateRequest>(r);
}

ApiError embed_error(const std::string& body, const ServingContext& ctx = embedding_context()) {
  INFO(body);
  auto r = parse_embedding_request(body, ctx);
  REQUIRE(std::holds_alternative<ApiError>(r));
  return std::get<ApiError>(r);
}

std::string ids(int n) {
  json a = json::array();
  for (int i = 0; i < n; ++i) a.push_back(i + 1);
  return a.dump();
}

RouteResult route(const std::string& path, const std::string& body, const ServingContext& ctx) {
  HttpRequestView view;
  view.method = "POST";
  view.target = path;
  view.body = body;
  return handle_request(view, RouterConfig{}, ctx);
}

}  // namespace

TEST_CASE("every input shape becomes one pooling request per input", "[embeddings]") {
  const Tokenizer& tok = tok512();
  GenerateRequest one = embed_ok(R"({"input": "Once upon a time", "model": "stories260K"})");
  CHECK(one.endpoint == Endpoint::Embeddings);
  CHECK(one.prompts == std::vector<std::vector<int>>{tok.encode("Once upon a time", true)});
  REQUIRE(one.pooling);
  CHECK(*one.pooling == PoolingParams{0, true});
  CHECK_FALSE(one.base64);

  CHECK(embed_ok(R"({"input": ["a cat", "a dog"]})").prompts ==
        std::vector<std::vector<int>>{tok.encode("a cat", true), tok.encode("a dog", true)});
  CHECK(embed_ok(R"({"input": [5, 6, 7]})").prompts == std::vector<std::vector<int>>{{5, 6, 7}});
  CHECK(embed_ok(R"({"input": [[5], [6, 7]]})").prompts == std::vector<std::vector<int>>{{5}, {6, 7}});
  const GenerateRequest opts = embed_ok(R"({"input": "x", "encoding_format": "base64", "normalize": false,
                                            "user": "u-1"})");
  CHECK(opts.base64);
  CHECK(opts.pooling->normalize == false);
  CHECK(opts.user == "u-1");
}

TEST_CASE("truncate_prompt_tokens keeps an input's last tokens, and without it an input over the context is a 400",
          "[embeddings]") {
  CHECK(embed_ok(R"({"input": )" + ids(70) + R"(, "truncate_prompt_tokens": 3})").prompts ==
        std::vector<std::vector<int>>{{68, 69, 70}});
  CHECK(embed_ok(R"({"input": )" + ids(70) + R"(, "truncate_prompt_tokens": -1})").prompts[0].size() == 64);
  CHECK(embed_ok(R"({"input": )" + ids(64) + "}").prompts[0].size() == 64);  // a pooling prompt may fill it
  check_error(embed_error(R"({"input": )" + ids(65) + "}"), 400, "BadRequestError", "input",
              "This model's maximum context length is 64 tokens. However, you requested 65 tokens in the input for "
              "embedding generation. Please reduce the length of the input (or set truncate_prompt_tokens).");
  check_error(embed_error(R"({"input": "x", "truncate_prompt_tokens": 65})"), 400, "BadRequestError",
              "truncate_prompt_tokens",
              "truncate_prompt_tokens value (65) is greater than max_model_len (64). Please, select a smaller "
              "truncation size.");
}

TEST_CASE("bad embedding inputs are 400s naming the field", "[embeddings]") {
  check_error(embed_error(R"({"input": ""})"), 400, "BadRequestError", "input", "The input cannot be empty.");
  check_error(embed_error(R"({"input": []})"), 400, "BadRequestError", "input", "The input cannot be empty.");
  check_error(embed_error(R"({"input": ["a", ""]})"), 400, "BadRequestError", "input", "The input cannot be empty.");
  check_error(embed_error(R"({"model": "stories260K"})"), 400, "BadRequestError", "input",
              "The input cannot be empty.");
  check_error(embed_error(R"({"input": [1, 512]})"), 400, "BadRequestError", "input",
              "Token id 512 is out of vocabulary");
  check_error(embed_error(R"({"input": "x", "encoding_format": "int8"})"), 400, "BadRequestError", "encoding_format",
              "encoding_format must be \"float\" or \"base64\", got \"int8\".");
  check_error(embed_error(R"({"input": "x", "dimensions": 4})"), 400, "BadRequestError", "dimensions",
              "Model \"stories260K\" does not support matryoshka representation, changing output dimensions will "
              "lead to poor results (start the server with --matryoshka if it was trained for it).");
  check_error(embed_error(R"({"input": "x", "dimensions": 9})", embedding_context(true)), 400, "BadRequestError",
              "dimensions", "dimensions must be in [1, 8], got 9.");
  CHECK(embed_ok(R"({"input": "x", "dimensions": 4})", embedding_context(true)).pooling->dimensions == 4);
  CHECK(embed_error(R"({"input": "x", "model": "gpt-4"})").status == 404);
}

TEST_CASE("the task routes: embeddings on a generating server and generations on an embedding one are 400s",
          "[embeddings][router]") {
  const RouteResult on_generate = route("/v1/embeddings", R"({"input": "x"})", context());
  CHECK(on_generate.status == 400);
  CHECK(json::parse(on_generate.body)["error"]["message"] ==
        "This model generates text: /v1/embeddings needs a server started with --task embed (and a pooling type, "
        "the model file's or --pooling).");
  const RouteResult on_embed = route("/v1/completions", R"({"prompt": "x"})", embedding_context());
  CHECK(on_embed.status == 400);
  CHECK(json::parse(on_embed.body)["error"]["message"] ==
        "This model serves embeddings (--task embed): use /v1/embeddings, or start the server with --task generate.");
  CHECK(route("/v1/chat/completions", R"({"messages": []})", embedding_context()).status == 400);
  const RouteResult ok = route("/v1/embeddings", R"({"input": "x"})", embedding_context());
  CHECK(ok.kind == RouteResult::Kind::Generate);
  REQUIRE(ok.generate);
  CHECK(ok.generate->endpoint == Endpoint::Embeddings);
}

TEST_CASE("the response is OpenAI's list of embeddings, floats or little-endian float32 in base64", "[embeddings]") {
  GenerateRequest req = embed_ok(R"({"input": ["a", "b"]})");
  std::vector<Choice> choices(2);
  choices[0].index = 0, choices[0].embedding = {1.0f, -0.5f};
  choices[1].index = 1, choices[1].embedding = {0.25f, 2.0f};
  const json body = json::parse(embedding_response(req, choices, Usage{7, 0}));
  CHECK(body == json::parse(R"({"object": "list", "model": "stories260K",
                                "data": [{"object": "embedding", "index": 0, "embedding": [1.0, -0.5]},
                                         {"object": "embedding", "index": 1, "embedding": [0.25, 2.0]}],
                                "usage": {"prompt_tokens": 7, "total_tokens": 7}})"));
  // 1.0f is 00 00 80 3f, -0.5f is 00 00 00 bf: their little-endian bytes in base64.
  CHECK(base64_floats({1.0f, -0.5f}) == "AACAPwAAAL8=");
  CHECK(base64_floats({}) == "");
  req.base64 = true;
  CHECK(json::parse(embedding_response(req, choices, Usage{7, 0}))["data"][0]["embedding"] == "AACAPwAAAL8=");
}

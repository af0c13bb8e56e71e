// POST /v1/rerank, /rerank and /v1/score on the tok512 tokenizer (BOS 1, EOS 2, no SEP): each query/document pair one
// score request over [BOS] query [EOS] document [EOS], truncate_prompt_tokens cutting a pair longest first, every bad
// input a 400 naming its field, the task routed both ways, and the responses in the Jina/Cohere (rerank) and vLLM
// (score) shapes.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "http/router.hpp"
#include "tests/openai_test_util.hpp"

using namespace parley;
using namespace parley::http;
using namespace parley::openai_test;
using json = nlohmann::json;

namespace {

ServingContext rerank_context() {
  ServingContext ctx = context();
  ctx.pooling = PoolingType::Rank;
  return ctx;
}

template <auto parse>
GenerateRequest ok(const std::string& body) {
  INFO(body);
  auto r = parse(body, rerank_context());
  if (auto* e = std::get_if<ApiError>(&r)) FAIL(e->message);
  return std::get<GenerateRequest>(r);
}

template <auto parse>
ApiError error(const std::string& body) {
  INFO(body);
  auto r = parse(body, rerank_context());
  REQUIRE(std::holds_alternative<ApiError>(r));
  return std::get<ApiError>(r);
}

constexpr auto rerank_ok = ok<parse_rerank_request>;
constexpr auto rerank_error = error<parse_rerank_request>;
constexpr auto score_ok = ok<parse_score_request>;
constexpr auto score_error = error<parse_score_request>;

RouteResult route(const std::string& path, const std::string& body, const ServingContext& ctx) {
  HttpRequestView view;
  view.method = "POST";
  view.target = path;
  view.body = body;
  return handle_request(view, RouterConfig{}, ctx);
}

std::vector<Choice> scored(const std::vector<float>& scores) {
  std::vector<Choice> choices(scores.size());
  for (size_t i = 0; i < scores.size(); ++i) choices[i].index = int(i), choices[i].embedding = {scores[i]};
  return choices;
}

}  // namespace

TEST_CASE("each document is one score request over BOS query EOS document EOS", "[rerank]") {
  const Tokenizer& tok = tok512();
  const GenerateRequest r = rerank_ok(R"({"model": "stories260K", "query": [7, 8], "documents": [[9], "a cat"]})");
  CHECK(r.endpoint == Endpoint::Rerank);
  REQUIRE(r.pooling);
  CHECK(r.pooling->task == PoolingTask::Score);
  std::vector<int> second = {1, 7, 8, 2};
  for (int t : tok.encode("a cat", false)) second.push_back(t);
  second.push_back(2);
  CHECK(r.prompts == std::vector<std::vector<int>>{{1, 7, 8, 2, 9, 2}, second});
  CHECK(r.prompt_texts[1] == "a cat");
  CHECK(r.top_n == 0);
  CHECK(r.return_documents);
  const GenerateRequest opts =
      rerank_ok(R"({"query": "x", "documents": ["a"], "top_n": 3, "return_documents": false})");
  CHECK(opts.top_n == 3);
  CHECK_FALSE(opts.return_documents);
}

TEST_CASE("score pairs one text_1 with every text_2, or pairwise", "[rerank]") {
  CHECK(score_ok(R"({"text_1": [7], "text_2": [[8], [9]]})").prompts ==
        std::vector<std::vector<int>>{{1, 7, 2, 8, 2}, {1, 7, 2, 9, 2}});
  CHECK(score_ok(R"({"text_1": [[7], [6]], "text_2": [[8], [9]]})").prompts ==
        std::vector<std::vector<int>>{{1, 7, 2, 8, 2}, {1, 6, 2, 9, 2}});
  CHECK(score_ok(R"({"text_1": "a", "text_2": "b"})").prompts.size() == 1);
  CHECK(score_ok(R"({"text_1": "a", "text_2": "b"})").endpoint == Endpoint::Score);
}

TEST_CASE("bad rerank and score inputs are 400s naming the field", "[rerank]") {
  check_error(rerank_error(R"({"query": "x"})"), 400, "BadRequestError", "documents", "Field required: documents.");
  check_error(rerank_error(R"({"query": "x", "documents": []})"), 400, "BadRequestError", "documents",
              "The documents cannot be empty.");
  check_error(rerank_error(R"({"query": "", "documents": ["a"]})"), 400, "BadRequestError", "query",
              "The query cannot be empty.");
  check_error(rerank_error(R"({"documents": ["a"]})"), 400, "BadRequestError", "query", "Field required: query.");
  CHECK(rerank_error(R"({"query": "x", "documents": "a"})").param == "documents");
  CHECK(rerank_error(R"({"query": "x", "documents": [{"text": "a"}]})").param == "documents.0");
  CHECK(rerank_error(R"({"query": "x", "documents": [[1, 512]]})").message == "Token id 512 is out of vocabulary");
  std::string long_doc = "[";
  for (int i = 0; i < 62; ++i) long_doc += (i ? "," : "") + std::to_string(3 + i);
  check_error(rerank_error(R"({"query": [5], "documents": ["a", )" + long_doc + "]]}"), 400, "BadRequestError",
              "documents.1",
              "This model's maximum context length is 64 tokens. However, documents.1 makes a pair of 66 tokens with "
              "the query. Please reduce its length (or set truncate_prompt_tokens).");
  CHECK(rerank_error(R"({"query": "x", "documents": ["a"], "top_n": -1})").param == "top_n");
  CHECK(rerank_error(R"({"query": "x", "documents": ["a"], "model": "gpt-4"})").status == 404);
  CHECK(score_error(R"({"text_1": ["a", "b", "c"], "text_2": ["a", "b"]})").param == "text_1");
  CHECK(score_error(R"({"text_1": "a"})").param == "text_2");
  CHECK(score_error(R"({"text_1": "", "text_2": "b"})").param == "text_1");
}

namespace {
std::string id_range(int from, int count) {  // "[from, from + 1, ...]"
  std::string s = "[";
  for (int i = 0; i < count; ++i) s += (i ? "," : "") + std::to_string(from + i);
  return s + "]";
}
std::vector<int> pair_of(std::vector<int> query, int doc_from, int doc_count) {  // BOS query EOS document EOS
  std::vector<int> p{1};
  p.insert(p.end(), query.begin(), query.end());
  p.push_back(2);
  for (int i = 0; i < doc_count; ++i) p.push_back(doc_from + i);
  p.push_back(2);
  return p;
}
}  // namespace

// Hugging Face tokenizers' longest-first split of the budget (truncate_prompt_tokens less the 3 special tokens),
// each text keeping its last tokens; tests/e2e/rerank.mjs checks it against the library itself.
TEST_CASE("truncate_prompt_tokens cuts each pair longest first, keeping each text's last tokens", "[rerank]") {
  auto cut = [](const std::string& query, const std::string& docs, int keep) {
    return rerank_ok(R"({"query": )" + query + R"(, "documents": )" + docs + R"(, "truncate_prompt_tokens": )" +
                     std::to_string(keep) + "}")
        .prompts;
  };
  // Budget 10: the query's 3 fit, the document keeps 7 of its 20.
  CHECK(cut("[7, 8, 9]", "[" + id_range(3, 20) + "]", 13) == std::vector<std::vector<int>>{pair_of({7, 8, 9}, 16, 7)});
  // Both past half of 10: 5 each.
  CHECK(cut(id_range(100, 10), "[" + id_range(200, 20) + "]", 13) ==
        std::vector<std::vector<int>>{pair_of({105, 106, 107, 108, 109}, 215, 5)});
  // Equal lengths, an odd budget of 7: the odd token goes to the document.
  CHECK(cut(id_range(100, 6), "[" + id_range(200, 6) + "]", 10) ==
        std::vector<std::vector<int>>{pair_of({103, 104, 105}, 202, 4)});
  // The query the longer: it gives way down to the budget's remainder beside the document's 2.
  CHECK(cut(id_range(100, 8), "[" + id_range(200, 2) + "]", 9) ==
        std::vector<std::vector<int>>{pair_of({104, 105, 106, 107}, 200, 2)});
  // Short pairs stay whole, and each document of a request is cut on its own; -1 is the context's 64.
  CHECK(cut("[7]", "[[8, 9], " + id_range(100, 30) + "]", 10) ==
        std::vector<std::vector<int>>{pair_of({7}, 8, 2), pair_of({7}, 124, 6)});
  CHECK(cut("[7]", "[" + id_range(100, 70) + "]", -1)[0].size() == 64);
  CHECK(score_ok(R"({"text_1": [7, 8], "text_2": )" + id_range(100, 9) + R"(, "truncate_prompt_tokens": 7})").prompts ==
        std::vector<std::vector<int>>{pair_of({7, 8}, 107, 2)});
  check_error(rerank_error(R"({"query": [7], "documents": [[8]], "truncate_prompt_tokens": 4})"), 400,
              "BadRequestError", "truncate_prompt_tokens",
              "truncate_prompt_tokens (4) leaves no room for the query and the document beside the model's 3 special "
              "tokens.");
  CHECK(rerank_error(R"({"query": [7], "documents": [[8]], "truncate_prompt_tokens": 0})").param ==
        "truncate_prompt_tokens");
  CHECK(score_error(R"({"text_1": [7], "text_2": [8], "truncate_prompt_tokens": 65})").param ==
        "truncate_prompt_tokens");
}

TEST_CASE("unknown rerank fields are accepted and reported, or a 400 with strict fields", "[rerank]") {
  CHECK(rerank_ok(R"({"query": "x", "documents": ["a"], "extra": 1})").ignored_fields ==
        std::vector<std::string>{"extra"});
  ServingContext strict = rerank_context();
  strict.strict_request_fields = true;
  auto r = parse_rerank_request(R"({"query": "x", "documents": ["a"], "extra": 1})", strict);
  REQUIRE(std::holds_alternative<ApiError>(r));
  CHECK(std::get<ApiError>(r).param == "extra");
}

TEST_CASE("the task routes: rerank and score on another server are 400s, and other routes on a reranker",
          "[rerank][router]") {
  const RouteResult on_generate = route("/v1/rerank", R"({"query": "x", "documents": ["a"]})", context());
  CHECK(on_generate.status == 400);
  CHECK(json::parse(on_generate.body)["error"]["message"] ==
        "This model does not rerank: /v1/rerank and /v1/score need a server started with --task rerank (a model "
        "file whose pooling type is rank).");
  CHECK(route("/v1/score", R"({"text_1": "x", "text_2": "a"})", context()).status == 400);
  const RouteResult completion = route("/v1/completions", R"({"prompt": "x"})", rerank_context());
  CHECK(completion.status == 400);
  CHECK(json::parse(completion.body)["error"]["message"] ==
        "This model reranks (--task rerank): use /v1/rerank or /v1/score, or start the server with --task generate.");
  CHECK(route("/v1/embeddings", R"({"input": "x"})", rerank_context()).status == 400);
  for (const char* path : {"/v1/rerank", "/rerank"}) {
    const RouteResult r = route(path, R"({"query": "x", "documents": ["a"]})", rerank_context());
    CHECK(r.kind == RouteResult::Kind::Generate);
  }
  CHECK(route("/v1/score", R"({"text_1": "x", "text_2": "a"})", rerank_context()).kind == RouteResult::Kind::Generate);
}

TEST_CASE("rerank results are sorted by score, cut to top_n, with or without their documents", "[rerank]") {
  GenerateRequest req = rerank_ok(R"({"query": "x", "documents": ["a", "b", "c"]})");
  const json all = json::parse(rerank_response(req, "rerank-1", scored({0.25f, 0.75f, 0.25f}), Usage{12, 0}));
  CHECK(all == json::parse(R"({"id": "rerank-1", "model": "stories260K", "usage": {"total_tokens": 12},
                               "results": [{"index": 1, "document": {"text": "b"}, "relevance_score": 0.75},
                                           {"index": 0, "document": {"text": "a"}, "relevance_score": 0.25},
                                           {"index": 2, "document": {"text": "c"}, "relevance_score": 0.25}]})"));
  req.top_n = 1, req.return_documents = false;
  CHECK(json::parse(rerank_response(req, "rerank-1", scored({0.25f, 0.75f, 0.25f}), Usage{12, 0}))["results"] ==
        json::parse(R"([{"index": 1, "relevance_score": 0.75}])"));
}

TEST_CASE("score responses are vLLM's list of scores in input order", "[rerank]") {
  const GenerateRequest req = score_ok(R"({"text_1": "x", "text_2": ["a", "b"]})");
  CHECK(json::parse(score_response(req, "score-1", 100, scored({0.5f, 0.125f}), Usage{9, 0})) ==
        json::parse(R"({"id": "score-1", "object": "list", "created": 100, "model": "stories260K",
                        "data": [{"index": 0, "object": "score", "score": 0.5},
                                 {"index": 1, "object": "score", "score": 0.125}],
                        "usage": {"prompt_tokens": 9, "total_tokens": 9, "completion_tokens": 0}})"));
}

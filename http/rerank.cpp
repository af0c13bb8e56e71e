// POST /v1/rerank (Jina's and Cohere's shape, as vLLM and llama.cpp serve it) and POST /v1/score (vLLM's): each
// query/document pair one score request over [BOS] query [EOS] [SEP] document [EOS] (llama.cpp's and
// node-llama-cpp's input for a reranker without a rerank template), each of BOS, EOS and SEP where the vocabulary
// has it.
#include <algorithm>
#include <numeric>

#include "http/openai_fields.hpp"

namespace parley::http {
namespace {

using namespace detail;

constexpr std::string_view kRerankFields[] = {
    "model", "query", "documents", "top_n", "return_documents", "user", "truncate_prompt_tokens"};
constexpr std::string_view kScoreFields[] = {"model", "text_1", "text_2", "user", "truncate_prompt_tokens"};

struct Text {
  std::vector<int> ids;  // tokenized without special tokens
  std::string text;
};

// A string, or token ids (an array of integers).
Text read_text(const json& v, const ServingContext& ctx, const std::string& param) {
  if (v.is_string()) return {ctx.tokenizer->encode(v.get<std::string>(), false), v.get<std::string>()};
  if (!v.is_array() || !std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_number(); }))
    wrong_type(param, "a string or an array of token ids", v);
  Text t{token_ids(v, ctx.tokenizer->vocab().size(), param), ""};
  t.text = ctx.tokenizer->decode(t.ids);
  return t;
}

// One text or a list of them (each a string or token ids); 400 when absent or an empty list.
std::vector<Text> read_texts(const json& body, const ServingContext& ctx, const std::string& param) {
  const json* v = field(body, param);
  if (!v) fail("Field required: " + param + ".", param);
  const bool list =
      v->is_array() && !v->empty() && !std::all_of(v->begin(), v->end(), [](const json& x) { return x.is_number(); });
  if (v->is_array() && v->empty()) fail("The " + param + " cannot be empty.", param);
  std::vector<Text> out;
  if (!list) return {read_text(*v, ctx, param)};
  for (size_t i = 0; i < v->size(); ++i) out.push_back(read_text((*v)[i], ctx, item_path(param, i)));
  return out;
}

std::vector<int> pair_prompt(const Vocab& vocab, const std::vector<int>& query, const std::vector<int>& document) {
  std::vector<int> p;
  if (vocab.bos_id >= 0) p.push_back(vocab.bos_id);
  p.insert(p.end(), query.begin(), query.end());
  if (vocab.eos_id >= 0) p.push_back(vocab.eos_id);
  if (vocab.sep_id >= 0) p.push_back(vocab.sep_id);
  p.insert(p.end(), document.begin(), document.end());
  if (vocab.eos_id >= 0) p.push_back(vocab.eos_id);
  return p;
}

// The request's common half: its fields checked, the model, the pairs as score requests that fit the context.
GenerateRequest pair_request(Endpoint endpoint, const json& body, const ServingContext& ctx,
                             std::span<const std::string_view> fields) {
  GenerateRequest req;
  for (std::string& key : unknown_fields(body, fields)) {
    if (ctx.strict_request_fields) fail("Unrecognized request argument supplied: " + key, key);
    req.ignored_fields.push_back(std::move(key));
  }
  check_model(body, ctx);
  req.endpoint = endpoint;
  req.model = ctx.model_name;
  req.user = get_string(body, "user").value_or("");
  req.pooling.emplace().task = PoolingTask::Score;
  return req;
}

// Hugging Face tokenizers' longest-first truncation of a pair to `budget` tokens (vLLM tokenizes a pair with
// truncation=True, max_length=truncate_prompt_tokens): the longer text is cut down to the shorter's length or the
// budget's remainder, and when both must go, to half the budget each (the odd token to the second). Each keeps its
// last tokens, as vLLM's tokenizers truncate from the left.
void truncate_longest_first(std::vector<int>& first, std::vector<int>& second, size_t budget) {
  if (first.size() + second.size() <= budget) return;
  size_t shorter = std::min(first.size(), second.size());
  size_t longer = shorter > budget ? shorter : std::max(shorter, budget - shorter);
  if (shorter + longer > budget) shorter = budget / 2, longer = shorter + budget % 2;
  const bool first_shorter = first.size() <= second.size();
  const size_t keep_first = first_shorter ? shorter : longer, keep_second = first_shorter ? longer : shorter;
  first.erase(first.begin(), first.end() - long(std::min(keep_first, first.size())));
  second.erase(second.begin(), second.end() - long(std::min(keep_second, second.size())));
}

// The pair's prompt; with a truncation length, its texts cut to fit it beside the special tokens.
void add_pair(GenerateRequest& req, const ServingContext& ctx, const Text& query, const Text& document,
              const std::string& param, std::optional<size_t> truncation) {
  const Vocab& vocab = ctx.tokenizer->vocab();
  if (truncation) {
    const size_t special = pair_prompt(vocab, {}, {}).size();
    if (*truncation < special + 2)
      fail("truncate_prompt_tokens (" + std::to_string(*truncation) + ") leaves no room for the query and the " +
               "document beside the model's " + std::to_string(special) + " special tokens.",
           "truncate_prompt_tokens");
    std::vector<int> q = query.ids, d = document.ids;
    truncate_longest_first(q, d, *truncation - special);
    req.prompts.push_back(pair_prompt(vocab, q, d));
  } else {
    req.prompts.push_back(pair_prompt(vocab, query.ids, document.ids));
  }
  req.prompt_texts.push_back(document.text);
  if (long(req.prompts.back().size()) > ctx.max_model_len)
    fail("This model's maximum context length is " + std::to_string(ctx.max_model_len) + " tokens. However, " + param +
             " makes a pair of " + std::to_string(req.prompts.back().size()) +
             " tokens with the query. Please reduce its length (or set truncate_prompt_tokens).",
         param);
}

}  // namespace

std::variant<GenerateRequest, ApiError> parse_rerank_request(std::string_view body, const ServingContext& ctx) {
  try {
    const json j = parse_object(body);
    GenerateRequest req = pair_request(Endpoint::Rerank, j, ctx, kRerankFields);
    const json* q = field(j, "query");
    if (!q) fail("Field required: query.", "query");
    const Text query = read_text(*q, ctx, "query");
    if (query.ids.empty()) fail("The query cannot be empty.", "query");
    const json* docs = field(j, "documents");
    if (!docs) fail("Field required: documents.", "documents");
    if (!docs->is_array()) wrong_type("documents", "an array", *docs);
    if (docs->empty()) fail("The documents cannot be empty.", "documents");
    const std::optional<size_t> truncation = truncation_length(j, ctx);
    for (size_t i = 0; i < docs->size(); ++i) {
      const std::string param = item_path("documents", i);
      add_pair(req, ctx, query, read_text((*docs)[i], ctx, param), param, truncation);
    }
    const int top_n = get_int32(j, "top_n").value_or(0);
    if (top_n < 0)
      fail("top_n must be a positive integer or 0 (every document), got " + std::to_string(top_n) + ".", "top_n");
    req.top_n = top_n;
    req.return_documents = get_bool(j, "return_documents").value_or(true);
    return req;
  } catch (const RequestError& e) {
    return e.error;
  }
}

std::variant<GenerateRequest, ApiError> parse_score_request(std::string_view body, const ServingContext& ctx) {
  try {
    const json j = parse_object(body);
    GenerateRequest req = pair_request(Endpoint::Score, j, ctx, kScoreFields);
    const std::vector<Text> first = read_texts(j, ctx, "text_1"), second = read_texts(j, ctx, "text_2");
    if (first.size() != 1 && first.size() != second.size())
      fail("text_1 has " + std::to_string(first.size()) + " texts and text_2 " + std::to_string(second.size()) +
               ": one text_1 against every text_2, or as many of each (pairwise).",
           "text_1");
    const std::optional<size_t> truncation = truncation_length(j, ctx);
    for (size_t i = 0; i < second.size(); ++i) {
      const Text& query = first[first.size() == 1 ? 0 : i];
      if (query.ids.empty()) fail("The text_1 cannot be empty.", "text_1");
      add_pair(req, ctx, query, second[i], second.size() == 1 ? "text_2" : item_path("text_2", i), truncation);
    }
    return req;
  } catch (const RequestError& e) {
    return e.error;
  }
}

std::string rerank_response(const GenerateRequest& req, const std::string& id, const std::vector<Choice>& choices,
                            const Usage& usage) {
  std::vector<size_t> order(choices.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return choices[a].embedding.at(0) > choices[b].embedding.at(0); });
  if (req.top_n > 0 && size_t(req.top_n) < order.size()) order.resize(size_t(req.top_n));
  ojson results = ojson::array();
  for (size_t k : order) {
    const Choice& c = choices[k];
    ojson item = {{"index", c.index}};
    if (req.return_documents) item["document"] = {{"text", req.prompt_texts.at(size_t(c.index))}};
    item["relevance_score"] = c.embedding.at(0);
    results.push_back(std::move(item));
  }
  return dump({{"id", id},
               {"model", req.model},
               {"usage", {{"total_tokens", usage.prompt_tokens}}},
               {"results", std::move(results)}});
}

std::string score_response(const GenerateRequest& req, const std::string& id, long created,
                           const std::vector<Choice>& choices, const Usage& usage) {
  ojson data = ojson::array();
  for (const Choice& c : choices)
    data.push_back({{"index", c.index}, {"object", "score"}, {"score", c.embedding.at(0)}});
  return dump(
      {{"id", id},
       {"object", "list"},
       {"created", created},
       {"model", req.model},
       {"data", std::move(data)},
       {"usage",
        {{"prompt_tokens", usage.prompt_tokens}, {"total_tokens", usage.prompt_tokens}, {"completion_tokens", 0}}}});
}

}  // namespace parley::http

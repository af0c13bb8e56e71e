#include "engine/speculative_config.hpp"

#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

namespace parley {

namespace {

[[noreturn]] void bad(const std::string& what) { throw std::invalid_argument("--speculative-config: " + what); }

int positive_int(const nlohmann::json& j, const char* field) {
  const auto& v = j.at(field);
  if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > 1 << 20)
    bad(std::string(field) + " must be a positive integer, got " + v.dump());
  return v.get<int>();
}

}  // namespace

SpeculativeConfig SpeculativeConfig::parse(const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    bad(std::string("not valid JSON (") + e.what() + ")");
  }
  if (!j.is_object()) bad("expected a JSON object, got " + j.dump());
  static const std::set<std::string> known = {"method",
                                              "num_speculative_tokens",
                                              "prompt_lookup_min",
                                              "prompt_lookup_max",
                                              "model",
                                              "draft_layers",
                                              "verify",
                                              "pad_uniform"};
  for (const auto& [key, value] : j.items())
    if (!known.count(key)) bad("unknown field \"" + key + "\"");
  SpeculativeConfig c;
  if (!j.contains("method") || !j["method"].is_string())
    bad("method is required: ngram, draft_model, layer_skip or mtp");
  const std::string method = j["method"];
  if (method == "ngram")
    c.method = SpecMethod::Ngram;
  else if (method == "draft_model")
    c.method = SpecMethod::DraftModel;
  else if (method == "layer_skip")
    c.method = SpecMethod::LayerSkip;
  else if (method == "mtp")
    c.method = SpecMethod::Mtp;
  else
    bad("unknown method \"" + method + "\": ngram, draft_model, layer_skip or mtp");
  if (!j.contains("num_speculative_tokens")) bad("num_speculative_tokens is required");
  c.num_speculative_tokens = positive_int(j, "num_speculative_tokens");
  if (c.num_speculative_tokens > 16) bad("num_speculative_tokens must be at most 16");

  auto only_for = [&](const char* field, SpecMethod m, const char* name) {
    if (j.contains(field) && c.method != m) bad(std::string(field) + " applies only to method " + name);
  };
  only_for("prompt_lookup_min", SpecMethod::Ngram, "ngram");
  only_for("prompt_lookup_max", SpecMethod::Ngram, "ngram");
  only_for("model", SpecMethod::DraftModel, "draft_model");
  only_for("draft_layers", SpecMethod::LayerSkip, "layer_skip");
  if (c.method == SpecMethod::Ngram) {
    const bool has_min = j.contains("prompt_lookup_min"), has_max = j.contains("prompt_lookup_max");
    if (has_min) c.prompt_lookup_min = positive_int(j, "prompt_lookup_min");
    if (has_max) c.prompt_lookup_max = positive_int(j, "prompt_lookup_max");
    if (has_min && !has_max) c.prompt_lookup_max = c.prompt_lookup_min;
    if (has_max && !has_min) c.prompt_lookup_min = c.prompt_lookup_max;
    if (c.prompt_lookup_min > c.prompt_lookup_max)
      bad("prompt_lookup_min (" + std::to_string(c.prompt_lookup_min) + ") must not exceed prompt_lookup_max (" +
          std::to_string(c.prompt_lookup_max) + ")");
  }
  if (c.method == SpecMethod::DraftModel) {
    if (!j.contains("model") || !j["model"].is_string() || j["model"].get<std::string>().empty())
      bad("method draft_model needs \"model\": the path of the draft GGUF");
    c.model = j["model"];
  }
  if (c.method == SpecMethod::LayerSkip) {
    if (!j.contains("draft_layers"))
      bad("method layer_skip needs \"draft_layers\": how many of the target's layers draft");
    c.draft_layers = positive_int(j, "draft_layers");
  }
  if (j.contains("verify")) {
    const auto& v = j["verify"];
    if (v == "exact")
      c.verify = SpecVerify::Exact;
    else if (v == "rejection")
      c.verify = SpecVerify::Rejection;
    else
      bad("verify must be \"exact\" or \"rejection\", got " + v.dump());
  }
  if (j.contains("pad_uniform")) {
    if (!j["pad_uniform"].is_boolean()) bad("pad_uniform must be true or false, got " + j["pad_uniform"].dump());
    c.pad_uniform = j["pad_uniform"];
  }
  return c;
}

std::string SpeculativeConfig::method_name() const {
  switch (method) {
    case SpecMethod::Ngram:
      return "ngram";
    case SpecMethod::DraftModel:
      return "draft_model";
    case SpecMethod::LayerSkip:
      return "layer_skip";
    case SpecMethod::Mtp:
      return "mtp";
  }
  return "?";
}

}  // namespace parley

// Per-request sampling parameters, as vLLM's SamplingParams (vllm/sampling_params.py).
// The struct declares each field and its default; kSamplingFields below says, once per field, how it is
// parsed, checked, carried to a prefill instance and whether the device's sampling kernel can draw with it.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace parley {
namespace structured {
class Grammar;  // engine/structured_output/grammar.hpp
}

inline constexpr int kMaxLogprobs = 20;  // vLLM's default max_logprobs

// vLLM's StructuredOutputsParams: one constraint on the output text, kept as text so it crosses
// processes (PD) and is compiled where it is sampled (engine/structured_output/).
struct StructuredOutputsParams {
  enum class Kind { Json, JsonObject, Regex, Choice, Grammar };
  Kind kind = Kind::JsonObject;
  // Json: a JSON Schema as JSON text; JsonObject: empty (any JSON object); Regex: the pattern;
  // Choice: a JSON array of strings; Grammar: GBNF text (engine/structured_output/grammar.hpp).
  std::string spec;
  // The constraint begins after these tokens first appear in the output (a reasoning's end marker, as vLLM's
  // reasoning-aware structured outputs); the tokens up to them are free. Empty: from the first token.
  std::vector<int> starts_after;
  // The grammar the server parsed when it checked the request, so the worker only binds it to its vocabulary.
  // Null when the request came another way (a decode instance, a test): the worker compiles the spec itself.
  std::shared_ptr<const structured::Grammar> grammar;
  // The constraint, not how far it got: two requests with the same spec are equal whoever compiled them.
  bool operator==(const StructuredOutputsParams& o) const {
    return kind == o.kind && spec == o.spec && starts_after == o.starts_after;
  }
};

struct SamplingParams {
  // The fields the scheduler reads every step first (Request's hot cache lines reach into them).
  int max_tokens = 16;
  int min_tokens = 0;  // stop tokens (EOS and stop_token_ids) are masked until this many are out
  bool ignore_eos = false;
  std::vector<int> stop_token_ids;  // besides EOS; ends the request (the token is kept in the output)
  int n = 1;                        // samples per prompt; sample i uses seed + i
  float temperature = 1.0f;         // below 1e-5 means greedy, as vLLM's _SAMPLING_EPS
  int top_k = -1;                   // -1 (or 0) keeps every token
  float top_p = 1.0f;               // nucleus mass in (0, 1]
  float min_p = 0.0f;               // drop tokens below min_p * the top probability
  float presence_penalty = 0.0f;    // [-2, 2]: subtracted once from each token already generated
  float frequency_penalty = 0.0f;   // [-2, 2]: subtracted per occurrence in the output
  float repetition_penalty = 1.0f;  // (0, 2]: divides positive / multiplies negative logits of prompt+output tokens
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;  // stop strings, matched on the detokenized text
  bool include_stop_str_in_output = false;
  bool skip_special_tokens = true;     // control tokens decode to nothing (false: to their text, e.g. [TOOL_CALLS])
  std::optional<int> logprobs;         // top logprobs per output token (0: only the sampled token's)
  std::optional<int> prompt_logprobs;  // top logprobs per prompt token after the first (0: only the prompt token's)
  std::vector<std::pair<int, float>> logit_bias;              // (token id, bias) sorted by id, added to the raw logits
  std::optional<StructuredOutputsParams> structured_outputs;  // the output must match it (a logits mask)

  bool greedy() const { return temperature < 1e-5f; }
  bool has_penalties() const {
    return presence_penalty != 0.0f || frequency_penalty != 0.0f || repetition_penalty != 1.0f;
  }
  // Throws std::invalid_argument with vLLM's wording for the first invalid field. vocab_size > 0 also
  // checks token ids in logit_bias and stop_token_ids.
  void validate(int vocab_size = 0) const;
  bool operator==(const SamplingParams&) const = default;
};

// The values a number may take, in vLLM's words: "<name> must be <words>, got <value>."
struct ValueRange {
  double low = -std::numeric_limits<double>::infinity();
  double high = std::numeric_limits<double>::infinity();
  bool low_open = false;
  std::string_view words;  // empty: no range to check
  bool contains(double v) const { return (low_open ? v > low : v >= low) && v <= high; }
  std::string message(std::string_view name, const std::string& value) const {
    return std::string(name) + " must be " + std::string(words) + ", got " + value + ".";
  }
};
constexpr ValueRange at_least(double low, std::string_view words) { return {low, ValueRange{}.high, false, words}; }
constexpr ValueRange closed(double low, double high, std::string_view words) { return {low, high, false, words}; }
constexpr ValueRange left_open(double low, double high, std::string_view words) { return {low, high, true, words}; }
inline constexpr ValueRange kAnyValue{};

// How an OpenAI request body carries a field (http/openai_parse.cpp).
enum class FromRequest {
  ByType,    // under its name, read by its type (a number, an integer, a boolean, a seed); defaults when absent
  OwnRules,  // read by the endpoint's own rules (another shape, per-endpoint names, or limits from the model)
  Never,     // set by the server, never by the client
};

// Whether the device's sampling kernel (kernels/cuda/sampling.hpp) draws a row that uses the field.
enum class OnDevice {
  Draws,             // the kernel applies it
  NoEffect,          // it does not change the draw (when to stop, how the text is shown, how many samples)
  HostWhenUsed,      // a row using it is sampled on the host
  HostWhileMasking,  // min_tokens: on the host while it masks stop tokens (Sampler::plain_row checks each step)
};

// How the field travels in a prefill request (engine/kv_transfer.cpp), under its name.
enum class OnWire {
  Always,    // always written, required when read
  WhenUsed,  // written when it differs from its default; absent reads as the default (older senders omit it)
};

template <class T>
struct SamplingField {
  std::string_view name;  // vLLM's: the member, the request's JSON key, the prefill request's key
  T SamplingParams::*member;
  FromRequest from_request;
  ValueRange range;  // checked by validate() and, named by the field, by the HTTP parse
  OnDevice on_device;
  OnWire on_wire;
  bool (*used)(const T&) = nullptr;  // null: the field is used when it differs from its default
  using Type = T;
};
template <class T>
SamplingField(std::string_view, T SamplingParams::*, FromRequest, ValueRange, OnDevice, OnWire,
              bool (*)(const T&) = nullptr) -> SamplingField<T>;

// Every field of SamplingParams, in validate()'s order (the first invalid field is reported). Adding a field to
// the struct fails tests/test_sampling_fields.cpp until it is listed here.
inline constexpr auto kSamplingFields = std::tuple{
    SamplingField{"n", &SamplingParams::n, FromRequest::ByType, at_least(1, "at least 1"), OnDevice::NoEffect,
                  OnWire::Always},
    SamplingField{"presence_penalty", &SamplingParams::presence_penalty, FromRequest::ByType,
                  closed(-2, 2, "in [-2, 2]"), OnDevice::HostWhenUsed, OnWire::Always},
    SamplingField{"frequency_penalty", &SamplingParams::frequency_penalty, FromRequest::ByType,
                  closed(-2, 2, "in [-2, 2]"), OnDevice::HostWhenUsed, OnWire::Always},
    SamplingField{"repetition_penalty", &SamplingParams::repetition_penalty, FromRequest::ByType,
                  left_open(0, 2, "in (0, 2]"), OnDevice::HostWhenUsed, OnWire::Always},
    SamplingField{"temperature", &SamplingParams::temperature, FromRequest::ByType, at_least(0, "non-negative"),
                  OnDevice::Draws, OnWire::Always},
    SamplingField{"top_p", &SamplingParams::top_p, FromRequest::ByType, left_open(0, 1, "in (0, 1]"),
                  OnDevice::HostWhenUsed, OnWire::Always, +[](const float& p) { return p < 1.0f; }},
    SamplingField{"top_k", &SamplingParams::top_k, FromRequest::ByType, at_least(-1, "-1 (disable), or at least 1"),
                  OnDevice::HostWhenUsed, OnWire::Always, +[](const int& k) { return k > 0; }},
    SamplingField{"min_p", &SamplingParams::min_p, FromRequest::ByType, closed(0, 1, "in [0, 1]"), OnDevice::Draws,
                  OnWire::Always, +[](const float& p) { return p > 0.0f; }},
    SamplingField{"max_tokens", &SamplingParams::max_tokens, FromRequest::OwnRules, at_least(1, "at least 1"),
                  OnDevice::NoEffect, OnWire::Always},
    SamplingField{"min_tokens", &SamplingParams::min_tokens, FromRequest::ByType,
                  at_least(0, "greater than or equal to 0"), OnDevice::HostWhileMasking, OnWire::Always},
    SamplingField{"ignore_eos", &SamplingParams::ignore_eos, FromRequest::ByType, kAnyValue, OnDevice::NoEffect,
                  OnWire::Always},
    SamplingField{"stop_token_ids", &SamplingParams::stop_token_ids, FromRequest::OwnRules, kAnyValue,
                  OnDevice::NoEffect, OnWire::Always},
    SamplingField{"seed", &SamplingParams::seed, FromRequest::ByType, kAnyValue, OnDevice::Draws, OnWire::Always},
    SamplingField{"stop", &SamplingParams::stop, FromRequest::OwnRules, kAnyValue, OnDevice::NoEffect, OnWire::Always},
    SamplingField{"include_stop_str_in_output", &SamplingParams::include_stop_str_in_output, FromRequest::ByType,
                  kAnyValue, OnDevice::NoEffect, OnWire::Always},
    SamplingField{"skip_special_tokens", &SamplingParams::skip_special_tokens, FromRequest::Never, kAnyValue,
                  OnDevice::NoEffect, OnWire::WhenUsed},
    SamplingField{"logprobs", &SamplingParams::logprobs, FromRequest::OwnRules, kAnyValue, OnDevice::HostWhenUsed,
                  OnWire::Always},
    SamplingField{"prompt_logprobs", &SamplingParams::prompt_logprobs, FromRequest::OwnRules, kAnyValue,
                  OnDevice::NoEffect, OnWire::Always},
    SamplingField{"logit_bias", &SamplingParams::logit_bias, FromRequest::OwnRules, kAnyValue, OnDevice::HostWhenUsed,
                  OnWire::Always},
    SamplingField{"structured_outputs", &SamplingParams::structured_outputs, FromRequest::OwnRules, kAnyValue,
                  OnDevice::HostWhenUsed, OnWire::WhenUsed},
};
inline constexpr size_t kNumSamplingFields = std::tuple_size_v<std::remove_cvref_t<decltype(kSamplingFields)>>;

// Calls visit(field) for each entry of kSamplingFields, in order.
template <class Visit>
constexpr void for_each_sampling_field(Visit&& visit) {
  std::apply([&](const auto&... field) { (visit(field), ...); }, kSamplingFields);
}

// Whether `params` sets the field (see SamplingField::used).
template <class T>
bool uses(const SamplingParams& params, const SamplingField<T>& field) {
  static const SamplingParams defaults;
  return field.used ? field.used(params.*field.member) : !(params.*field.member == defaults.*field.member);
}

// Whether `params` sets the field that `member` names.
template <class T>
bool uses(const SamplingParams& params, T SamplingParams::*member) {
  bool used = false;
  for_each_sampling_field([&](const auto& field) {
    if constexpr (std::is_same_v<decltype(field.member), T SamplingParams::*>)
      if (field.member == member) used = uses(params, field);
  });
  return used;
}

// Whether the device's sampling kernel can draw for `params`: no field it leaves to the host is used.
inline bool device_can_sample(const SamplingParams& params) {
  bool can = true;
  for_each_sampling_field([&](const auto& field) {
    if (field.on_device == OnDevice::HostWhenUsed && uses(params, field)) can = false;
  });
  return can;
}

// Calls out_of_range(field, value) for each number of `params` outside its field's range, in table order (the
// caller throws at the first it reports). finite: infinities are out of range too.
template <class OutOfRange>
void for_each_out_of_range(const SamplingParams& params, bool finite, OutOfRange&& out_of_range) {
  for_each_sampling_field([&](const auto& field) {
    using T = typename std::remove_cvref_t<decltype(field)>::Type;
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      const T value = params.*field.member;
      const bool infinite = std::is_floating_point_v<T> && finite && !std::isfinite(double(value));
      if (!field.range.words.empty() && (infinite || !field.range.contains(double(value)))) out_of_range(field, value);
    }
  });
}

}  // namespace parley

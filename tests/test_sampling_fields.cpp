// kSamplingFields (engine/sampling_params.hpp) lists every field of SamplingParams once, and each field travels to a
// prefill instance as it is.
#include <catch2/catch.hpp>

#include <set>
#include <string_view>

#include "engine/kv_transfer.hpp"
#include "engine/sampling_params.hpp"

using namespace parley;

namespace {

// Converts to any field's type: an aggregate takes as many of these as it has fields.
struct AnyField {
  template <class T>
  operator T() const;
};

template <class Aggregate, class... Fields>
constexpr size_t num_fields() {
  if constexpr (requires { Aggregate{Fields{}..., AnyField{}}; })
    return num_fields<Aggregate, Fields..., AnyField>();
  else
    return sizeof...(Fields);
}

// A value unlike the field's default (and used, where the field has a use).
int another(int v) { return v + 2; }
float another(float v) { return v + 0.5f; }
bool another(bool v) { return !v; }
std::vector<int> another(const std::vector<int>&) { return {7, 9}; }
std::vector<std::string> another(const std::vector<std::string>&) { return {"\n\n", "The end"}; }
std::optional<uint64_t> another(const std::optional<uint64_t>&) { return 12345678901234ull; }
std::optional<int> another(const std::optional<int>&) { return 3; }
std::vector<std::pair<int, float>> another(const std::vector<std::pair<int, float>>&) { return {{5, -1.5f}}; }
std::optional<StructuredOutputsParams> another(const std::optional<StructuredOutputsParams>&) {
  return StructuredOutputsParams{StructuredOutputsParams::Kind::Regex, "a+", {4, 2}};
}

SamplingParams round_trip(const SamplingParams& params) {
  return decode_prefill_request(encode_prefill_request(Request("r", {1, 2}, params, 9))).sampling_params;
}

}  // namespace

TEST_CASE("sampling fields: the table lists every field of SamplingParams", "[sampling_fields]") {
  STATIC_REQUIRE(num_fields<SamplingParams>() == kNumSamplingFields);
  std::set<std::string_view> names;
  std::set<size_t> offsets;  // two entries naming one member would hide a member the table misses
  const SamplingParams params;
  for_each_sampling_field([&](const auto& field) {
    names.insert(field.name);
    offsets.insert(
        size_t(reinterpret_cast<const char*>(&(params.*field.member)) - reinterpret_cast<const char*>(&params)));
  });
  CHECK(names.size() == kNumSamplingFields);
  CHECK(offsets.size() == kNumSamplingFields);
}

TEST_CASE("sampling fields: each field set alone travels to the prefill instance", "[sampling_fields][pd]") {
  for_each_sampling_field([](const auto& field) {
    SamplingParams params;
    params.*field.member = another(params.*field.member);
    INFO(field.name);
    CHECK(round_trip(params) == params);
  });
}

TEST_CASE("sampling fields: every field set at once travels to the prefill instance", "[sampling_fields][pd]") {
  SamplingParams params;
  for_each_sampling_field([&](const auto& field) { params.*field.member = another(params.*field.member); });
  CHECK(round_trip(params) == params);
}

TEST_CASE("sampling fields: a row the device kernel cannot draw is one using a field it leaves to the host",
          "[sampling_fields]") {
  CHECK(device_can_sample(SamplingParams{}));
  SamplingParams drawable;
  drawable.temperature = 0.7f, drawable.min_p = 0.1f, drawable.seed = 3, drawable.top_k = 0, drawable.n = 2;
  drawable.stop = {"x"}, drawable.max_tokens = 40, drawable.min_tokens = 4, drawable.prompt_logprobs = 2;
  CHECK(device_can_sample(drawable));
  auto host_only = [](auto change) {
    SamplingParams p;
    change(p);
    return !device_can_sample(p);
  };
  CHECK(host_only([](SamplingParams& p) { p.top_k = 40; }));
  CHECK(host_only([](SamplingParams& p) { p.top_p = 0.9f; }));
  CHECK(host_only([](SamplingParams& p) { p.presence_penalty = 0.5f; }));
  CHECK(host_only([](SamplingParams& p) { p.frequency_penalty = -0.5f; }));
  CHECK(host_only([](SamplingParams& p) { p.repetition_penalty = 1.1f; }));
  CHECK(host_only([](SamplingParams& p) { p.logit_bias = {{3, 1.0f}}; }));
  CHECK(host_only([](SamplingParams& p) { p.logprobs = 0; }));
  CHECK(host_only([](SamplingParams& p) { p.structured_outputs = StructuredOutputsParams{}; }));
}

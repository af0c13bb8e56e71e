// Jinja templates: the input is parsed as a template and rendered over a fixed conversation with tools (as
// tests/test_jinja_limits.cpp's mangled templates). A template may only fail with ParseError or RenderError.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "model/jinja/jinja.hpp"

using namespace parley;

namespace {

const nlohmann::ordered_json& conversation() {
  static const nlohmann::ordered_json context = nlohmann::ordered_json::parse(R"j({
    "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"},
                 {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function",
                   "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
                 {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
                 {"role": "user", "content": [{"type": "text", "text": "Thanks \u00e9\u4e16"}]}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
    "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>", "n": 3, "x": 1.5, "none": null})j");
  return context;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  jinja::Options options;
  options.max_steps = 20'000;  // enough for every shared chat template; a runaway loop ends in milliseconds
  options.now = [] {
    std::tm tm{};
    tm.tm_year = 126, tm.tm_mon = 6, tm.tm_mday = 4;
    return tm;
  };
  try {
    const jinja::Template t(std::string_view(reinterpret_cast<const char*>(data), size), options);
    t.render(conversation());
  } catch (const jinja::ParseError&) {
  } catch (const jinja::RenderError&) {}
  return 0;
}

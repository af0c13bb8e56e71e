// Structured-output constraints: the first byte picks GBNF, a JSON Schema or a regex; the rest is the
// constraint up to a NUL, then a text matched against it. A constraint may only fail with GrammarError.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/structured_output/structured_output_manager.hpp"

using namespace parley;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static constexpr StructuredOutputsParams::Kind kKinds[] = {StructuredOutputsParams::Kind::Grammar,
                                                             StructuredOutputsParams::Kind::Json,
                                                             StructuredOutputsParams::Kind::Regex};
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  const size_t split = input.find('\0');
  const StructuredOutputsParams params{kKinds[data[0] % 3], std::string(input.substr(0, split))};
  const std::string_view text = split == std::string_view::npos ? std::string_view() : input.substr(split + 1);
  try {
    structured::compile_grammar(params)->matches(text);
  } catch (const structured::GrammarError&) {}
  return 0;
}

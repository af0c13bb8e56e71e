// A Jinja2 template engine for chat templates, written by hand: Debian 12 packages no C++ Jinja library.
// It renders as Python's Jinja2 3.1 does in Hugging Face transformers' environment (ImmutableSandboxedEnvironment,
// trim_blocks, lstrip_blocks, loop controls, the `generation` tag, a non-escaping tojson, raise_exception and
// strftime_now), byte for byte; model/jinja/README.md lists what is supported.
#pragma once
#include <ctime>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace parley::jinja {

namespace ast {
struct Program;
}

struct Options {
  bool trim_blocks = true, lstrip_blocks = true;  // transformers' environment
  long max_steps = 5'000'000;                     // loop iterations, output appends and calls per render
  std::function<std::tm()> now;                   // for strftime_now; default: local time now
};

// "line 12: unknown tag 'foo'": the message names the construct and the line.
struct ParseError : std::runtime_error {
  ParseError(int line, const std::string& message);
  int line;
};

// raise_exception's message verbatim (raised_by_template, line 0), or "line N: ..." for an undefined value
// misused, a type error, or the step or depth limit.
struct RenderError : std::runtime_error {
  explicit RenderError(const std::string& message, int line = 0, bool raised_by_template = false);
  int line;
  bool raised_by_template;
};

class Template {
 public:
  explicit Template(std::string_view source, Options options = {});  // throws ParseError
  std::string render(const nlohmann::ordered_json& context) const;   // throws RenderError
  const ast::Program& program() const { return *program_; }          // the parsed tree, for inspection

 private:
  std::shared_ptr<const ast::Program> program_;
  Options options_;
};

}  // namespace parley::jinja

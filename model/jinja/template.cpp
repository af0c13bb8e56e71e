#include "model/jinja/ast.hpp"
#include "model/jinja/builtins.hpp"
#include "model/jinja/jinja.hpp"
#include "model/jinja/render.hpp"

namespace parley::jinja {

ParseError::ParseError(int line, const std::string& message)
    : std::runtime_error("line " + std::to_string(line) + ": " + message), line(line) {}

RenderError::RenderError(const std::string& message, int line, bool raised_by_template)
    : std::runtime_error(line > 0 ? "line " + std::to_string(line) + ": " + message : message),
      line(line),
      raised_by_template(raised_by_template) {}

Template::Template(std::string_view source, Options options)
    : program_(ast::parse(source, options)), options_(std::move(options)) {}

std::string Template::render(const nlohmann::ordered_json& context) const {
  if (!context.is_object() && !context.is_null()) throw RenderError("the render context must be a JSON object");
  auto root = std::make_shared<Scope>(make_globals(options_));
  if (context.is_object())
    for (const auto& [name, value] : context.items()) root->set(name, from_json(value));
  return Renderer(options_, std::move(root)).render(program_->body);
}

}  // namespace parley::jinja

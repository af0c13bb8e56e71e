// vLLM's --chat-template-content-format auto: whether a template loops over a message's content.
#pragma once
#include "model/jinja/ast.hpp"

namespace parley::jinja {

// True ("openai" format: content parts pass as they are) when some `for` loops over `m.content` or
// `m['content']` (filtered, tested or sliced) of a loop variable `m` over `messages` or a variable set from it;
// vLLM's _detect_content_format on the same tree, including its refusals (a tuple target gives false).
bool loops_over_message_content(const ast::Program& program);

}  // namespace parley::jinja

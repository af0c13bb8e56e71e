// Statements: output, if, for (loop variable, filter, else, break/continue), set, macros and call blocks,
// filter and generation blocks.
#include "model/jinja/render.hpp"

#include "model/jinja/builtins.hpp"
#include "model/jinja/objects.hpp"

namespace parley::jinja {

namespace {

// Python's own recursion limit stops a runaway Jinja2 template near here too.
constexpr int kMaxRenderDepth = 600;

}  // namespace

Scope::~Scope() {
  for (auto& [name, value] : variables) release_later(value);
  release_later(std::move(parent));
}

const Value* Scope::find(std::string_view name) const {
  for (const Scope* scope = this; scope; scope = scope->parent.get())
    for (const auto& [key, value] : scope->variables)
      if (key == name) return &value;
  return nullptr;
}

void Scope::set(std::string_view name, Value value) {
  for (auto& [key, existing] : variables)
    if (key == name) {
      existing = std::move(value);
      return;
    }
  variables.emplace_back(std::string(name), std::move(value));
}

Renderer::DepthGuard::DepthGuard(Renderer& r) : renderer(r) {
  if (++renderer.depth_ > kMaxRenderDepth) fail("the template nests too deeply (a macro calling itself without end?)");
}

Renderer::~Renderer() {
  for (const auto& made : made_)
    if (const auto object = made.lock()) object->release();
}

Value Renderer::track(std::shared_ptr<Object> object) {
  made_.push_back(object);
  return Value::of_object(std::move(object));
}

void Renderer::count_steps(long steps) {
  steps_ += steps;
  if (steps_ > options_.max_steps)
    fail("the template ran past its step limit of " + std::to_string(options_.max_steps) + " steps");
}

std::string Renderer::render(const ast::Body& body) {
  std::string out;
  out_ = &out;
  exec(body);
  return out;
}

void Renderer::append_output(std::string_view text) {
  count_steps(1);
  charge_for_size(text.size());
  out_->append(text);
}

Renderer::Flow Renderer::exec(const ast::Body& body) {
  for (const auto& stmt : body) {
    const Flow flow = exec(*stmt);
    if (flow != Flow::Normal) return flow;
  }
  return Flow::Normal;
}

Renderer::Flow Renderer::exec(const ast::Stmt& stmt) {
  try {
    return exec_statement(stmt);
  } catch (const RenderError& e) {
    if (e.line != 0 || e.raised_by_template) throw;
    throw RenderError(e.what(), stmt.line);  // the innermost statement names the line
  }
}

Renderer::Flow Renderer::exec_statement(const ast::Stmt& stmt) {
  DepthGuard guard(*this);
  switch (stmt.kind) {
    case ast::StmtKind::Text:
      append_output(stmt.text);
      break;
    case ast::StmtKind::Output:
      append_output(to_str(eval(*stmt.expr)));
      break;
    case ast::StmtKind::If:
      for (const ast::Branch& branch : stmt.branches)
        if (truthy(eval(*branch.test))) return exec(branch.body);
      return exec(stmt.else_body);
    case ast::StmtKind::For:
      return exec_for(stmt);
    case ast::StmtKind::Set:
    case ast::StmtKind::SetBlock:
      exec_set(stmt);
      break;
    case ast::StmtKind::With:
      return exec_with(stmt);
    case ast::StmtKind::Macro:
      scope_->set(stmt.text, track(std::make_shared<Macro>(stmt.text, stmt.signature, stmt.body, scope_)));
      break;
    case ast::StmtKind::CallBlock:
      exec_call_block(stmt);
      break;
    case ast::StmtKind::FilterBlock: {
      const Value body = Value::string(render_scoped(stmt.body));
      block_input_ = &body;
      const Value filtered = eval(*stmt.expr);
      block_input_ = nullptr;
      append_output(to_str(filtered));
      break;
    }
    case ast::StmtKind::Generation:
      append_output(render_scoped(stmt.body));
      break;
    case ast::StmtKind::Break:
      return Flow::Break;
    case ast::StmtKind::Continue:
      return Flow::Continue;
  }
  return Flow::Normal;
}

// A render error ends the whole render, so scopes and buffers are restored on the normal path only.
std::string Renderer::render_scoped(const ast::Body& body) {
  std::string out;
  std::string* saved_out = std::exchange(out_, &out);
  std::shared_ptr<Scope> saved_scope = std::exchange(scope_, std::make_shared<Scope>(scope_));
  exec(body);
  out_ = saved_out;
  scope_ = std::move(saved_scope);
  return out;
}

Renderer::Flow Renderer::exec_for(const ast::Stmt& stmt) {
  std::vector<Value> items = iterate(eval(*stmt.expr));
  const std::shared_ptr<Scope> outer = scope_;
  if (stmt.condition) {  // `for x in xs if cond`: the loop (and loop.length) sees only the items that pass
    std::vector<Value> kept;
    for (Value& item : items) {
      count_steps(1);
      scope_ = std::make_shared<Scope>(outer);
      assign(stmt.target, item);
      if (truthy(eval(*stmt.condition))) kept.push_back(std::move(item));
    }
    scope_ = outer;
    items = std::move(kept);
  }
  const auto loop = std::make_shared<Loop>(std::move(items));
  const Value loop_value = Value::of_object(loop);
  for (std::size_t i = 0; i < loop->items.size(); ++i) {
    count_steps(1);
    scope_ = std::make_shared<Scope>(outer);
    loop->index0 = i;
    assign(stmt.target, loop->items[i]);
    scope_->set("loop", loop_value);
    if (exec(stmt.body) == Flow::Break) break;
  }
  scope_ = outer;
  if (loop->items.empty() && !stmt.else_body.empty()) append_output(render_scoped(stmt.else_body));
  return Flow::Normal;
}

void Renderer::assign(const ast::Target& target, Value value) {
  switch (target.kind) {
    case ast::Target::Kind::Name:
      scope_->set(target.name, std::move(value));
      return;
    case ast::Target::Kind::Attribute: {
      const Value* object = scope_->find(target.name);
      auto* ns = object && object->kind == Kind::Object ? dynamic_cast<Namespace*>(object->object.get()) : nullptr;
      if (!ns) fail("cannot assign attribute on non-namespace object");
      ns->set(target.attribute, std::move(value));
      return;
    }
    case ast::Target::Kind::Tuple: {
      const bool iterable = value.is_list() || value.is_string() || value.is_dict() || value.is_undefined();
      if (!iterable) fail("cannot unpack non-iterable " + type_name(value) + " object");
      const std::vector<Value> items = iterate(value);
      const std::size_t expected = target.items.size();
      if (items.size() > expected) fail("too many values to unpack (expected " + std::to_string(expected) + ")");
      if (items.size() < expected)
        fail("not enough values to unpack (expected " + std::to_string(expected) + ", got " +
             std::to_string(items.size()) + ")");
      for (std::size_t i = 0; i < expected; ++i) assign(target.items[i], items[i]);
      return;
    }
  }
}

void Renderer::exec_set(const ast::Stmt& stmt) {
  if (stmt.kind == ast::StmtKind::Set) {
    assign(stmt.target, eval(*stmt.expr));
    return;
  }
  Value body = Value::string(render_scoped(stmt.body));
  if (stmt.expr) {
    block_input_ = &body;
    Value filtered = eval(*stmt.expr);
    block_input_ = nullptr;
    body = std::move(filtered);
  }
  assign(stmt.target, std::move(body));
}

// {% with a = x %}: the values are evaluated outside, the names bound in a scope of the body's own.
Renderer::Flow Renderer::exec_with(const ast::Stmt& stmt) {
  std::vector<Value> values;
  for (const auto& [target, value] : stmt.assignments) values.push_back(eval(*value));
  std::shared_ptr<Scope> outer = std::exchange(scope_, std::make_shared<Scope>(scope_));
  for (std::size_t i = 0; i < values.size(); ++i) assign(stmt.assignments[i].first, std::move(values[i]));
  const Flow flow = exec(stmt.body);
  scope_ = std::move(outer);
  return flow;
}

void Renderer::exec_call_block(const ast::Stmt& stmt) {
  const ast::Expr& call = *stmt.expr;
  const Value callee = eval(*call.operands[0]);
  CallArgs args = eval_arguments(call.arguments);
  args.keywords.emplace_back("caller", track(std::make_shared<Macro>("caller", stmt.signature, stmt.body, scope_)));
  append_output(to_str(this->call(callee, args)));
}

// Jinja2's Macro.__call__: positional arguments, then keywords and defaults; `caller`, `varargs` and `kwargs`
// only for a body that refers to them.
std::string Renderer::invoke_macro(const Macro& macro, CallArgs& args) {
  const ast::Signature& signature = macro.signature;
  const std::size_t parameter_count = signature.parameters.size();
  auto scope = std::make_shared<Scope>(macro.closure);
  std::vector<std::pair<std::string, Value>> keywords = std::move(args.keywords);
  const auto take_keyword = [&keywords](std::string_view name) -> std::optional<Value> {
    for (auto it = keywords.begin(); it != keywords.end(); ++it)
      if (it->first == name) {
        Value v = std::move(it->second);
        keywords.erase(it);
        return v;
      }
    return std::nullopt;
  };
  std::vector<std::optional<Value>> bound(parameter_count);
  for (std::size_t i = 0; i < parameter_count && i < args.positional.size(); ++i) bound[i] = args.positional[i];
  for (std::size_t i = args.positional.size(); i < parameter_count; ++i)
    bound[i] = take_keyword(signature.parameters[i]);
  if (signature.uses_caller) {
    std::optional<Value> caller = take_keyword("caller");
    scope->set("caller", caller ? std::move(*caller) : Value::undefined("No caller defined"));
  }
  if (signature.uses_kwargs) {
    std::vector<std::pair<Value, Value>> rest;
    for (auto& [key, value] : keywords) rest.emplace_back(Value::string(key), std::move(value));
    scope->set("kwargs", Value::mapping(std::move(rest)));
  } else if (!keywords.empty()) {
    for (const auto& keyword : keywords)
      if (keyword.first == "caller")
        fail("macro '" + macro.name + "' was invoked with two values for the special caller argument");
    fail("macro '" + macro.name + "' takes no keyword argument '" + keywords.front().first + "'");
  }
  if (signature.uses_varargs) {
    std::vector<Value> rest;
    for (std::size_t i = parameter_count; i < args.positional.size(); ++i) rest.push_back(args.positional[i]);
    scope->set("varargs", Value::tuple(std::move(rest)));
  } else if (args.positional.size() > parameter_count) {
    fail("macro '" + macro.name + "' takes not more than " + std::to_string(parameter_count) + " argument(s)");
  }
  std::string out;
  std::string* saved_out = std::exchange(out_, &out);
  std::shared_ptr<Scope> saved_scope = std::exchange(scope_, scope);
  const Value* saved_input = std::exchange(block_input_, nullptr);
  for (std::size_t i = 0; i < parameter_count; ++i) {  // defaults see the parameters before them
    const std::string& name = signature.parameters[i];
    if (bound[i])
      scope->set(name, std::move(*bound[i]));
    else if (signature.defaults[i])
      scope->set(name, eval(*signature.defaults[i]));
    else
      scope->set(name, Value::undefined("parameter '" + name + "' was not provided"));
  }
  exec(macro.body);
  out_ = saved_out;
  scope_ = std::move(saved_scope);
  block_input_ = saved_input;
  return out;
}

Value Macro::call(Renderer& renderer, CallArgs& args) const {
  return Value::string(renderer.invoke_macro(*this, args));
}

}  // namespace parley::jinja

// Expressions, with the sandbox's attribute and item rules: `a.b` tries the attribute and then a['b'],
// `a['b']` the item and then the attribute; a miss is Undefined, but any use of an Undefined's parts raises.
#include "model/jinja/builtins.hpp"
#include "model/jinja/objects.hpp"
#include "model/jinja/render.hpp"
#include "model/jinja/utf8.hpp"

namespace parley::jinja {

namespace {

bool is_dunder(std::string_view name) {
  return name.size() > 4 && name.substr(0, 2) == "__" && name.substr(name.size() - 2) == "__";
}

// Python's attribute of `object`: a method, the sandbox's unsafe marker, or an object's own attribute.
std::optional<Value> python_attribute(const Value& object, std::string_view name) {
  if (is_dunder(name))
    return Value::undefined("access to attribute '" + std::string(name) + "' of '" + type_name(object) +
                            "' object is unsafe.");
  if (object.kind == Kind::Object) return object.object->attribute(name);
  return builtin_attribute(object, name);
}

// Python's object[key]; nullopt where Python raises TypeError or LookupError.
std::optional<Value> python_item(const Value& object, const Value& key) {
  switch (object.kind) {
    case Kind::Dict: {
      if (!is_hashable(key)) return std::nullopt;
      const Value* value = object.dict->find(key);
      return value ? std::optional<Value>(*value) : std::nullopt;
    }
    case Kind::List: {
      const SeqKind seq = object.list->seq_kind;
      if ((seq != SeqKind::List && seq != SeqKind::Tuple) || !key.is_integral()) return std::nullopt;
      const auto size = static_cast<std::int64_t>(object.list->items.size());
      const std::int64_t index = key.integer < 0 ? key.integer + size : key.integer;
      if (index < 0 || index >= size) return std::nullopt;
      return object.list->items[index];
    }
    case Kind::String: {
      if (!key.is_integral()) return std::nullopt;
      const std::u32string chars = utf8::decode(object.text);
      const auto size = static_cast<std::int64_t>(chars.size());
      const std::int64_t index = key.integer < 0 ? key.integer + size : key.integer;
      if (index < 0 || index >= size) return std::nullopt;
      std::string one;
      utf8::append(one, chars[index]);
      return Value::string(std::move(one), object.markup);
    }
    default:
      return std::nullopt;
  }
}

}  // namespace

Value Renderer::getattr(const Value& object, std::string_view name) {
  if (object.is_undefined()) fail_undefined(object);
  if (auto attribute = python_attribute(object, name)) return *attribute;
  if (object.kind == Kind::Dict)
    if (const Value* item = object.dict->find(name)) return *item;
  return Value::undefined(repr_string(object_type_repr(object)) + " has no attribute " +
                          repr_string(std::string(name)));
}

Value Renderer::getitem(const Value& object, const Value& key) {
  if (object.is_undefined()) fail_undefined(object);
  if (auto item = python_item(object, key)) return *item;
  if (key.is_string())
    if (auto attribute = python_attribute(object, key.text)) return *attribute;
  if (key.is_string())
    return Value::undefined(repr_string(object_type_repr(object)) + " has no attribute " + repr(key));
  return Value::undefined(object_type_repr(object) + " has no element " + repr(key));
}

Value Renderer::call(const Value& callee, CallArgs& args) {
  count_steps(1);
  if (callee.is_undefined()) fail_undefined(callee);
  if (callee.kind != Kind::Object || !callee.object->is_callable())
    fail("'" + type_name(callee) + "' object is not callable");
  DepthGuard guard(*this);
  return callee.object->call(*this, args);
}

Value Renderer::apply_filter(std::string_view name, const Value& input, CallArgs& args) {
  const FilterFunction filter = find_filter(name);
  if (!filter) fail("No filter named '" + std::string(name) + "' found.");
  count_steps(1);
  return filter(*this, input, args);
}

bool Renderer::apply_test(std::string_view name, const Value& input, CallArgs& args) {
  const TestFunction test = find_test(name);
  if (!test) fail("No test named '" + std::string(name) + "' found.");
  return test(*this, input, args);
}

Value Renderer::eval(const ast::Expr& expr) {
  DepthGuard guard(*this);
  using ast::ExprKind;
  switch (expr.kind) {
    case ExprKind::Constant:
      return expr.constant;
    case ExprKind::Name:
      return eval_name(expr);
    case ExprKind::List:
    case ExprKind::Tuple:
    case ExprKind::Dict:
      return eval_collection(expr);
    case ExprKind::GetAttr:
      return getattr(eval(*expr.operands[0]), expr.name);
    case ExprKind::GetItem:
      return eval_getitem(expr);
    case ExprKind::Slice:
      fail("a slice is only allowed as a subscript");
    case ExprKind::Call:
      return eval_call(expr);
    case ExprKind::Filter:
      return eval_filter(expr);
    case ExprKind::Test:
      return eval_test(expr);
    case ExprKind::Negate:
      return negate(eval(*expr.operands[0]));
    case ExprKind::Plus:
      return unary_plus(eval(*expr.operands[0]));
    case ExprKind::Not:
      return Value::boolean(!truthy(eval(*expr.operands[0])));
    case ExprKind::Binary: {
      const Value left = eval(*expr.operands[0]);
      return binary_op(*this, expr.op, left, eval(*expr.operands[1]));
    }
    case ExprKind::Compare:
      return eval_compare(expr);
    case ExprKind::And: {
      Value left = eval(*expr.operands[0]);
      return truthy(left) ? eval(*expr.operands[1]) : left;
    }
    case ExprKind::Or: {
      Value left = eval(*expr.operands[0]);
      return truthy(left) ? left : eval(*expr.operands[1]);
    }
    case ExprKind::Condition:
      return eval_condition(expr);
    case ExprKind::Concat:
      return eval_concat(expr);
  }
  return Value();
}

Value Renderer::eval_name(const ast::Expr& expr) {
  if (const Value* value = scope_->find(expr.name)) return *value;
  return Value::undefined(repr_string(expr.name) + " is undefined");
}

Value Renderer::eval_collection(const ast::Expr& expr) {
  if (expr.kind != ast::ExprKind::Dict) {
    std::vector<Value> items;
    items.reserve(expr.operands.size());
    for (const auto& item : expr.operands) items.push_back(eval(*item));
    return Value::sequence(std::move(items), expr.kind == ast::ExprKind::Tuple ? SeqKind::Tuple : SeqKind::List);
  }
  Value dict = Value::mapping({});
  for (std::size_t i = 0; i + 1 < expr.operands.size(); i += 2) {
    Value key = eval(*expr.operands[i]);
    if (!is_hashable(key)) fail("unhashable type: '" + type_name(key) + "'");
    dict.dict->set(std::move(key), eval(*expr.operands[i + 1]));
  }
  return dict;
}

Value Renderer::eval_getitem(const ast::Expr& expr) {
  const Value object = eval(*expr.operands[0]);
  const ast::Expr& index = *expr.operands[1];
  if (index.kind == ast::ExprKind::Slice) return eval_slice(object, index);
  return getitem(object, eval(index));
}

Value Renderer::eval_slice(const Value& object, const ast::Expr& slice_expr) {
  Value parts[3] = {Value::none(), Value::none(), Value::none()};
  for (int i = 0; i < 3; ++i)
    if (slice_expr.operands[i]) parts[i] = eval(*slice_expr.operands[i]);
  // Jinja2 compiles a slice to Python's own obj[a:b:c], without the getitem fallback: failures raise.
  if (object.is_undefined()) fail_undefined(object);
  if (auto sliced = slice(object, parts[0], parts[1], parts[2])) return *sliced;
  if (object.is_dict()) fail("unhashable type: 'slice'");
  if (object.is_string() ||
      (object.is_list() && (object.seq_kind() == SeqKind::List || object.seq_kind() == SeqKind::Tuple)))
    fail("slice indices must be integers or None or have an __index__ method");
  fail("'" + type_name(object) + "' object is not subscriptable");
}

CallArgs Renderer::eval_arguments(const ast::Arguments& arguments) {
  CallArgs args;
  for (const auto& arg : arguments.positional) args.positional.push_back(eval(*arg));
  for (const auto& [name, arg] : arguments.keywords) args.keywords.emplace_back(name, eval(*arg));
  if (arguments.star_args)
    for (Value& v : iterate(eval(*arguments.star_args))) args.positional.push_back(std::move(v));
  if (arguments.star_kwargs) {
    const Value mapping = eval(*arguments.star_kwargs);
    if (!mapping.is_dict()) fail("argument after ** must be a mapping, not " + type_name(mapping));
    for (const auto& [key, value] : mapping.dict->items) {
      if (!key.is_string()) fail("keywords must be strings");
      args.keywords.emplace_back(key.text, value);
    }
  }
  return args;
}

Value Renderer::eval_call(const ast::Expr& expr) {
  const Value callee = eval(*expr.operands[0]);
  CallArgs args = eval_arguments(expr.arguments);
  return call(callee, args);
}

Value Renderer::eval_filter(const ast::Expr& expr) {
  Value input;
  if (!expr.operands.empty())
    input = eval(*expr.operands[0]);
  else if (block_input_)
    input = *block_input_;
  CallArgs args = eval_arguments(expr.arguments);
  if (!expr.filter) fail("No filter named '" + expr.name + "' found.");
  count_steps(1);
  return expr.filter(*this, input, args);
}

Value Renderer::eval_test(const ast::Expr& expr) {
  const Value input = eval(*expr.operands[0]);
  CallArgs args = eval_arguments(expr.arguments);
  if (!expr.test) fail("No test named '" + expr.name + "' found.");
  return Value::boolean(expr.test(*this, input, args));
}

// a < b < c: each comparison in turn, stopping at the first false one, as Python chains them.
Value Renderer::eval_compare(const ast::Expr& expr) {
  Value left = eval(*expr.operands[0]);
  for (std::size_t i = 0; i < expr.compare_ops.size(); ++i) {
    Value right = eval(*expr.operands[i + 1]);
    const std::string& op = expr.compare_ops[i];
    bool result;
    if (op == "==")
      result = equals(left, right);
    else if (op == "!=")
      result = !equals(left, right);
    else if (op == "in")
      result = contains(right, left);
    else if (op == "notin")
      result = !contains(right, left);
    else
      result = compare(left, right, op);
    if (!result) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

Value Renderer::eval_condition(const ast::Expr& expr) {
  if (truthy(eval(*expr.operands[0]))) return eval(*expr.operands[1]);
  if (expr.operands[2]) return eval(*expr.operands[2]);
  return Value::undefined("the inline if-expression on line " + std::to_string(expr.line) +
                          " evaluated to false and no else section was defined.");
}

Value Renderer::eval_concat(const ast::Expr& expr) {
  std::string out;
  for (const auto& item : expr.operands) out += to_str(eval(*item));
  charge_for_size(out.size());
  return Value::string(std::move(out));
}

}  // namespace parley::jinja

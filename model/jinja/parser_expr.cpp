// Expressions, as Jinja2's parser reads them: inline if < or < and < not < comparisons < + - < ~ < * / // %
// < ** (left-associative, as in Jinja2) < unary - + < postfix . [] () < filters and tests.
#include "model/jinja/builtins.hpp"
#include "model/jinja/jinja.hpp"
#include "model/jinja/parser.hpp"

namespace parley::jinja::ast {

namespace {

bool is_compare_operator(const Token& t) {
  if (t.type != TokenType::Operator) return false;
  return t.value == "==" || t.value == "!=" || t.value == "<" || t.value == "<=" || t.value == ">" || t.value == ">=";
}

}  // namespace

ExprPtr Parser::parse_expression(bool with_condition) {
  NestingGuard guard(*this);
  return with_condition ? parse_condition() : parse_or();
}

ExprPtr Parser::parse_condition() {
  int line = current().line;
  ExprPtr expr = parse_or();
  while (skip_name("if")) {
    ExprPtr test = parse_or();
    ExprPtr otherwise = skip_name("else") ? parse_condition() : nullptr;
    expr = make(ExprKind::Condition, line, {test, expr, otherwise});
    line = current().line;
  }
  return expr;
}

ExprPtr Parser::parse_or() {
  ExprPtr left = parse_and();
  while (at_name("or")) {
    const int line = next().line;
    left = make(ExprKind::Or, line, {left, parse_and()});
  }
  return left;
}

ExprPtr Parser::parse_and() {
  ExprPtr left = parse_not();
  while (at_name("and")) {
    const int line = next().line;
    left = make(ExprKind::And, line, {left, parse_not()});
  }
  return left;
}

ExprPtr Parser::parse_not() {
  NestingGuard guard(*this);
  if (!at_name("not")) return parse_compare();
  const int line = next().line;
  return make(ExprKind::Not, line, {parse_not()});
}

ExprPtr Parser::parse_compare() {
  const int line = current().line;
  ExprPtr first = parse_math1();
  ExprPtr node = nullptr;
  while (true) {
    std::string op;
    if (is_compare_operator(current())) {
      op = next().value;
    } else if (skip_name("in")) {
      op = "in";
    } else if (at_name("not") && peek().type == TokenType::Name && peek().value == "in") {
      next();
      next();
      op = "notin";
    } else {
      break;
    }
    if (!node) {
      node = new_node(ExprKind::Compare, line);
      node->operands.push_back(first);
    }
    node->compare_ops.push_back(std::move(op));
    node->operands.push_back(parse_math1());
  }
  return node ? finish(node) : first;
}

ExprPtr Parser::parse_math1() {
  ExprPtr left = parse_concat();
  while (at_operator("+") || at_operator("-")) {
    const Token& op = next();
    auto node = new_node(ExprKind::Binary, op.line);
    node->op = op.value == "+" ? BinaryOp::Add : BinaryOp::Sub;
    node->operands.push_back(left);
    node->operands.push_back(parse_concat());
    left = finish(node);
  }
  return left;
}

ExprPtr Parser::parse_concat() {
  const int line = current().line;
  std::vector<ExprPtr> items;
  items.push_back(parse_math2());
  while (skip_operator("~")) items.push_back(parse_math2());
  if (items.size() == 1) return items[0];
  return make(ExprKind::Concat, line, items);
}

ExprPtr Parser::parse_math2() {
  ExprPtr left = parse_pow();
  while (at_operator("*") || at_operator("/") || at_operator("//") || at_operator("%")) {
    const Token& op = next();
    auto node = new_node(ExprKind::Binary, op.line);
    node->op = op.value == "*"    ? BinaryOp::Mul
               : op.value == "/"  ? BinaryOp::Div
               : op.value == "//" ? BinaryOp::FloorDiv
                                  : BinaryOp::Mod;
    node->operands.push_back(left);
    node->operands.push_back(parse_pow());
    left = finish(node);
  }
  return left;
}

ExprPtr Parser::parse_pow() {
  ExprPtr left = parse_unary();
  while (at_operator("**")) {
    auto node = new_node(ExprKind::Binary, next().line);
    node->op = BinaryOp::Pow;
    node->operands.push_back(left);
    node->operands.push_back(parse_unary());
    left = finish(node);
  }
  return left;
}

ExprPtr Parser::parse_unary(bool with_filter) {
  NestingGuard guard(*this);
  ExprPtr node = nullptr;
  if (at_operator("-") || at_operator("+")) {
    const Token& op = next();
    node = make(op.value == "-" ? ExprKind::Negate : ExprKind::Plus, op.line, {parse_unary(false)});
  } else {
    node = parse_primary();
  }
  node = parse_postfix(node);
  if (with_filter) node = parse_filter_expr(node);
  return node;
}

ExprPtr Parser::parse_primary() {
  const Token& token = current();
  ExprPtr node = new_node(ExprKind::Constant, token.line);
  switch (token.type) {
    case TokenType::Name:
      if (token.value == "true" || token.value == "True")
        node->constant = Value::boolean(true);
      else if (token.value == "false" || token.value == "False")
        node->constant = Value::boolean(false);
      else if (token.value == "none" || token.value == "None")
        node->constant = Value::none();
      else
        node->kind = ExprKind::Name, node->name = token.value;
      next();
      return finish(node);
    case TokenType::String: {
      std::string text;
      while (current().type == TokenType::String) text += next().value;  // adjacent literals join, as in Python
      node->constant = Value::string(std::move(text));
      return finish(node);
    }
    case TokenType::Integer:
      node->constant = Value::of_int(next().integer);
      return finish(node);
    case TokenType::Float:
      node->constant = Value::of_float(next().real);
      return finish(node);
    default:
      break;
  }
  if (skip_operator("(")) {
    ExprPtr inner = parse_tuple(false, true, {}, true);
    expect_operator(")");
    return inner;
  }
  if (at_operator("[")) return parse_list();
  if (at_operator("{")) return parse_dict();
  fail("unexpected " + describe(token));
}

bool Parser::is_tuple_end(const std::vector<std::string_view>& extra_end_names) const {
  const Token& t = current();
  if (t.type == TokenType::VariableEnd || t.type == TokenType::BlockEnd || t.type == TokenType::Eof || at_operator(")"))
    return true;
  for (std::string_view name : extra_end_names)
    if (at_name(name)) return true;
  return false;
}

ExprPtr Parser::parse_tuple(bool simplified, bool with_condition, const std::vector<std::string_view>& extra_end_names,
                            bool explicit_parentheses) {
  const int line = current().line;
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) expect_operator(",");
    if (is_tuple_end(extra_end_names)) break;
    items.push_back(simplified ? parse_primary() : parse_expression(with_condition));
    if (!at_operator(",")) break;
    is_tuple = true;
  }
  if (!is_tuple) {
    if (!items.empty()) return items[0];
    if (!explicit_parentheses) fail("expected an expression, got " + describe(current()));
  }
  return make(ExprKind::Tuple, line, items);
}

ExprPtr Parser::parse_list() {
  const int line = current().line;
  expect_operator("[");
  std::vector<ExprPtr> items;
  while (!at_operator("]")) {
    if (!items.empty()) expect_operator(",");
    if (at_operator("]")) break;
    items.push_back(parse_expression());
  }
  expect_operator("]");
  return make(ExprKind::List, line, items);
}

ExprPtr Parser::parse_dict() {
  const int line = current().line;
  expect_operator("{");
  std::vector<ExprPtr> items;
  while (!at_operator("}")) {
    if (!items.empty()) expect_operator(",");
    if (at_operator("}")) break;
    items.push_back(parse_expression());
    expect_operator(":");
    items.push_back(parse_expression());
  }
  expect_operator("}");
  return make(ExprKind::Dict, line, items);
}

ExprPtr Parser::parse_postfix(ExprPtr node) {
  while (true) {
    if (at_operator(".") || at_operator("[")) {
      node = parse_subscript(node);
    } else if (at_operator("(")) {
      ExprPtr call = new_node(ExprKind::Call, current().line);
      call->operands.push_back(node);
      call->arguments = parse_call_args();
      node = finish(call);
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_filter_expr(ExprPtr node) {
  while (true) {
    if (at_operator("|")) {
      node = parse_filter(node, false);
    } else if (at_name("is")) {
      node = parse_test(node);
    } else if (at_operator("(")) {
      ExprPtr call = new_node(ExprKind::Call, current().line);
      call->operands.push_back(node);
      call->arguments = parse_call_args();
      node = finish(call);
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_subscript(ExprPtr node) {
  const Token& token = next();
  if (token.value == ".") {
    const Token& attribute = next();
    if (attribute.type == TokenType::Name) {
      ExprPtr get = new_node(ExprKind::GetAttr, token.line);
      get->name = attribute.value;
      get->operands.push_back(node);
      return finish(get);
    }
    if (attribute.type != TokenType::Integer) fail("expected name or number after '.'", attribute.line);
    ExprPtr index = new_node(ExprKind::Constant, attribute.line);
    index->constant = Value::of_int(attribute.integer);
    return make(ExprKind::GetItem, token.line, {node, finish(index)});
  }
  std::vector<ExprPtr> indices;
  while (!at_operator("]")) {
    if (!indices.empty()) expect_operator(",");
    indices.push_back(parse_subscribed());
  }
  expect_operator("]");
  ExprPtr index = indices.size() == 1 ? indices[0] : make(ExprKind::Tuple, token.line, indices);
  return make(ExprKind::GetItem, token.line, {node, index});
}

// a[i], or a slice a[start:stop:step] with any part left out.
ExprPtr Parser::parse_subscribed() {
  const int line = current().line;
  std::vector<ExprPtr> parts;
  if (skip_operator(":")) {
    parts.push_back(nullptr);
  } else {
    ExprPtr index = parse_expression();
    if (!skip_operator(":")) return index;
    parts.push_back(index);
  }
  const auto part_ends = [this] { return at_operator("]") || at_operator(","); };
  if (at_operator(":") || part_ends())
    parts.push_back(nullptr);
  else
    parts.push_back(parse_expression());
  if (skip_operator(":"))
    parts.push_back(part_ends() ? nullptr : parse_expression());
  else
    parts.push_back(nullptr);
  return make(ExprKind::Slice, line, parts);
}

Arguments Parser::parse_call_args() {
  const int line = current().line;
  expect_operator("(");
  Arguments args;
  const auto ensure = [&](bool ok) {
    if (!ok) fail("invalid syntax for function call expression", line);
  };
  bool require_comma = false;
  while (!at_operator(")")) {
    if (require_comma) {
      expect_operator(",");
      if (at_operator(")")) break;
    }
    if (skip_operator("*")) {
      ensure(!args.star_args && !args.star_kwargs);
      args.star_args = parse_expression();
    } else if (skip_operator("**")) {
      ensure(!args.star_kwargs);
      args.star_kwargs = parse_expression();
    } else if (current().type == TokenType::Name && peek().type == TokenType::Operator && peek().value == "=") {
      ensure(!args.star_kwargs);
      std::string key = next().value;
      next();
      args.keywords.emplace_back(std::move(key), parse_expression());
    } else {
      ensure(!args.star_args && !args.star_kwargs && args.keywords.empty());
      args.positional.push_back(parse_expression());
    }
    require_comma = true;
  }
  expect_operator(")");
  return args;
}

ExprPtr Parser::parse_filter(ExprPtr node, bool start_inline) {
  while (at_operator("|") || start_inline) {
    if (!start_inline) next();
    start_inline = false;
    ExprPtr filter = new_node(ExprKind::Filter, current().line);
    filter->name = expect_name();
    while (skip_operator(".")) filter->name += "." + expect_name();
    if (at_operator("(")) filter->arguments = parse_call_args();
    if (node) filter->operands.push_back(node);
    filter->filter = find_filter(filter->name);
    node = finish(filter);
  }
  return node;
}

ExprPtr Parser::parse_test(ExprPtr node) {
  const int line = next().line;  // "is"
  const bool negated = skip_name("not");
  ExprPtr test = new_node(ExprKind::Test, line);
  test->name = expect_name();
  while (skip_operator(".")) test->name += "." + expect_name();
  const Token& t = current();
  const bool argument_follows = t.type == TokenType::Name || t.type == TokenType::String ||
                                t.type == TokenType::Integer || t.type == TokenType::Float || at_operator("[") ||
                                at_operator("{");
  if (at_operator("(")) {
    test->arguments = parse_call_args();
  } else if (argument_follows && !at_name("else") && !at_name("or") && !at_name("and")) {
    if (at_name("is")) fail("you cannot chain multiple tests with 'is'");
    test->arguments.positional.push_back(parse_postfix(parse_primary()));
  }
  test->operands.push_back(node);
  test->test = find_test(test->name);
  ExprPtr result = finish(test);
  return negated ? make(ExprKind::Not, line, {result}) : result;
}

}  // namespace parley::jinja::ast

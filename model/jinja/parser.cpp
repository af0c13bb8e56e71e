// The parser's token stream and node construction; the grammar is in parser_expr.cpp and parser_stmt.cpp.
#include <algorithm>

#include "model/jinja/jinja.hpp"
#include "model/jinja/parser.hpp"

namespace parley::jinja::ast {

namespace {

int height_of(const Expr* e) { return e ? e->height : 0; }

}  // namespace

Parser::NestingGuard::NestingGuard(Parser& p) : parser(p) {
  if (++parser.nesting_ > kMaxNesting)
    parser.fail("nested too deeply (more than " + std::to_string(kMaxNesting) + " levels)");
}

const Token& Parser::next() {
  const Token& token = tokens_[pos_];
  if (pos_ + 1 < tokens_.size()) ++pos_;
  return token;
}

bool Parser::at_operator(std::string_view op) const {
  return current().type == TokenType::Operator && current().value == op;
}
bool Parser::at_name(std::string_view name) const {
  return current().type == TokenType::Name && current().value == name;
}
bool Parser::skip_operator(std::string_view op) {
  if (!at_operator(op)) return false;
  next();
  return true;
}
bool Parser::skip_name(std::string_view name) {
  if (!at_name(name)) return false;
  next();
  return true;
}
void Parser::expect_operator(std::string_view op) {
  if (!skip_operator(op)) fail("expected '" + std::string(op) + "', got " + describe(current()));
}
void Parser::expect(TokenType type) {
  if (current().type != type) fail("expected " + describe(Token{type, ""}) + ", got " + describe(current()));
  next();
}
std::string Parser::expect_name() {
  if (current().type != TokenType::Name) fail("expected a name, got " + describe(current()));
  return next().value;
}
void Parser::fail(const std::string& message, int line) const {
  throw ParseError(line ? line : current().line, message);
}

ExprPtr Parser::finish(ExprPtr node) {
  int height = 0;
  for (const auto& operand : node->operands) height = std::max(height, height_of(operand));
  for (const auto& arg : node->arguments.positional) height = std::max(height, height_of(arg));
  for (const auto& [name, arg] : node->arguments.keywords) height = std::max(height, height_of(arg));
  height = std::max({height, height_of(node->arguments.star_args), height_of(node->arguments.star_kwargs)});
  node->height = height + 1;
  if (node->height > kMaxExprHeight) fail("expression nested too deeply", node->line);
  return node;
}

ExprPtr Parser::new_node(ExprKind kind, int line) {
  Expr* node = program_.exprs.make();
  node->kind = kind;
  node->line = line;
  return node;
}

ExprPtr Parser::make(ExprKind kind, int line, std::initializer_list<ExprPtr> operands) {
  ExprPtr node = new_node(kind, line);
  for (ExprPtr operand : operands) node->operands.push_back(operand);
  return finish(node);
}

ExprPtr Parser::make(ExprKind kind, int line, const std::vector<ExprPtr>& operands) {
  ExprPtr node = new_node(kind, line);
  for (ExprPtr operand : operands) node->operands.push_back(operand);
  return finish(node);
}

}  // namespace parley::jinja::ast

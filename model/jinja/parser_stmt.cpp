// Statements: if/elif/else, for (with else and a filter), set (and block set, ns.attribute), with, macro, call,
// filter, print, break/continue (the loopcontrols extension) and transformers' generation block.
#include "model/jinja/jinja.hpp"
#include "model/jinja/parser.hpp"

namespace parley::jinja::ast {

namespace {

std::string quoted_list(const std::vector<std::string_view>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) out += (i ? " or '" : "'") + std::string(names[i]) + "'";
  return out;
}

// Tags Jinja2 knows that this engine does not: templates load nothing, so these have nothing to work on.
bool is_unsupported_jinja_tag(std::string_view tag) {
  return tag == "block" || tag == "extends" || tag == "include" || tag == "import" || tag == "from" ||
         tag == "autoescape";
}

}  // namespace

Stmt* Parser::new_stmt(StmtKind kind, int line) {
  Stmt* stmt = program_.stmts.make();
  stmt->kind = kind;
  stmt->line = line;
  return stmt;
}

Body Parser::parse_template() {
  Body body = subparse({});
  return body;
}

void Parser::fail_unclosed(const std::string& found) const {
  const OpenBlock& open = open_blocks_.back();
  fail(found + ", expected " + quoted_list(open.end_tags) + " to close the '" + open.tag + "' from line " +
       std::to_string(open.line));
}

Body Parser::subparse(const std::vector<std::string_view>& end_tags) {
  Body body;
  while (true) {
    const Token& token = current();
    if (token.type == TokenType::Data) {
      Stmt* text = new_stmt(StmtKind::Text, token.line);
      text->text = next().value;
      body.push_back(text);
    } else if (token.type == TokenType::VariableBegin) {
      Stmt* output = new_stmt(StmtKind::Output, next().line);
      output->expr = parse_tuple(false, true, {}, false);
      expect(TokenType::VariableEnd);
      body.push_back(output);
    } else if (token.type == TokenType::BlockBegin) {
      next();
      for (std::string_view end : end_tags)
        if (at_name(end)) return body;
      body.push_back(parse_statement());
      expect(TokenType::BlockEnd);
    } else {  // end of template
      if (!end_tags.empty()) fail_unclosed("unexpected end of template");
      return body;
    }
  }
}

Body Parser::parse_statements(std::vector<std::string_view> end_tags, bool drop_end_tag) {
  skip_operator(":");
  expect(TokenType::BlockEnd);
  open_blocks_.back().end_tags = end_tags;
  Body body = subparse(end_tags);
  if (drop_end_tag) next();
  return body;
}

Stmt* Parser::parse_statement() {
  NestingGuard guard(*this);
  const Token& token = current();
  if (token.type != TokenType::Name) fail("expected a tag name, got " + describe(token));
  const std::string tag = token.value;
  open_blocks_.push_back({tag, token.line, {}});
  Stmt* stmt = nullptr;
  if (tag == "for")
    stmt = parse_for();
  else if (tag == "if")
    stmt = parse_if();
  else if (tag == "set")
    stmt = parse_set();
  else if (tag == "with")
    stmt = parse_with();
  else if (tag == "macro")
    stmt = parse_macro();
  else if (tag == "call")
    stmt = parse_call_block();
  else if (tag == "filter")
    stmt = parse_block_body(StmtKind::FilterBlock, "endfilter");
  else if (tag == "generation")
    stmt = parse_block_body(StmtKind::Generation, "endgeneration");
  else if (tag == "break" || tag == "continue")
    stmt = new_stmt(tag == "break" ? StmtKind::Break : StmtKind::Continue, next().line);
  else if (tag == "print") {
    stmt = new_stmt(StmtKind::Output, next().line);
    stmt->expr = parse_tuple(false, true, {}, false);
  }
  open_blocks_.pop_back();
  if (stmt) return stmt;
  if (is_unsupported_jinja_tag(tag)) fail("the '" + tag + "' tag is not supported");
  const bool ends_a_block = tag.rfind("end", 0) == 0 || tag == "elif" || tag == "else";
  const std::string found = ends_a_block ? "unexpected '" + tag + "'" : "unknown tag '" + tag + "'";
  if (!open_blocks_.empty()) fail_unclosed(found);
  fail(found);
}

Stmt* Parser::parse_for() {
  Stmt* stmt = new_stmt(StmtKind::For, next().line);
  stmt->target = parse_assign_target(false, {"in"}, false);
  if (!skip_name("in")) fail("expected 'in' in the for loop, got " + describe(current()));
  stmt->expr = parse_tuple(false, false, {"recursive"}, false);
  if (skip_name("if")) stmt->condition = parse_expression();
  if (at_name("recursive")) fail("recursive for loops are not supported");
  stmt->body = parse_statements({"endfor", "else"}, false);
  if (next().value == "else") stmt->else_body = parse_statements({"endfor"}, true);
  return stmt;
}

Stmt* Parser::parse_if() {
  Stmt* stmt = new_stmt(StmtKind::If, next().line);
  while (true) {
    Branch branch;
    branch.test = parse_tuple(false, false, {}, false);
    branch.body = parse_statements({"elif", "else", "endif"}, false);
    stmt->branches.push_back(std::move(branch));
    const std::string tag = next().value;
    if (tag == "elif") continue;
    if (tag == "else") stmt->else_body = parse_statements({"endif"}, true);
    return stmt;
  }
}

Stmt* Parser::parse_set() {
  const int line = next().line;
  Target target = parse_assign_target(false, {}, true);
  if (skip_operator("=")) {
    Stmt* stmt = new_stmt(StmtKind::Set, line);
    stmt->target = std::move(target);
    stmt->expr = parse_tuple(false, true, {}, false);
    return stmt;
  }
  Stmt* stmt = new_stmt(StmtKind::SetBlock, line);
  stmt->target = std::move(target);
  stmt->expr = parse_filter(nullptr, false);
  stmt->body = parse_statements({"endset"}, true);
  return stmt;
}

Stmt* Parser::parse_with() {
  Stmt* stmt = new_stmt(StmtKind::With, next().line);
  while (current().type != TokenType::BlockEnd) {
    if (!stmt->assignments.empty()) expect_operator(",");
    Target target = parse_assign_target(false, {}, false);
    expect_operator("=");
    stmt->assignments.emplace_back(std::move(target), parse_expression());
  }
  stmt->body = parse_statements({"endwith"}, true);
  return stmt;
}

Stmt* Parser::parse_macro() {
  Stmt* stmt = new_stmt(StmtKind::Macro, next().line);
  stmt->text = parse_assign_target(true, {}, false).name;
  stmt->signature = parse_signature();
  stmt->body = parse_statements({"endmacro"}, true);
  stmt->signature.uses_caller = refers_to(stmt->body, "caller");
  stmt->signature.uses_varargs = refers_to(stmt->body, "varargs");
  stmt->signature.uses_kwargs = refers_to(stmt->body, "kwargs");
  return stmt;
}

Stmt* Parser::parse_call_block() {
  Stmt* stmt = new_stmt(StmtKind::CallBlock, next().line);
  if (at_operator("(")) stmt->signature = parse_signature();
  stmt->expr = parse_expression();
  if (stmt->expr->kind != ExprKind::Call) fail("expected a call after 'call'", stmt->line);
  stmt->body = parse_statements({"endcall"}, true);
  stmt->signature.uses_caller = refers_to(stmt->body, "caller");
  stmt->signature.uses_varargs = refers_to(stmt->body, "varargs");
  stmt->signature.uses_kwargs = refers_to(stmt->body, "kwargs");
  return stmt;
}

Stmt* Parser::parse_block_body(StmtKind kind, std::string_view end_tag) {
  Stmt* stmt = new_stmt(kind, next().line);
  if (kind == StmtKind::FilterBlock) stmt->expr = parse_filter(nullptr, true);
  stmt->body = parse_statements({end_tag}, true);
  return stmt;
}

Signature Parser::parse_signature() {
  Signature signature;
  expect_operator("(");
  while (!at_operator(")")) {
    if (!signature.parameters.empty()) expect_operator(",");
    signature.parameters.push_back(parse_assign_target(true, {}, false).name);
    if (skip_operator("="))
      signature.defaults.push_back(parse_expression());
    else if (!signature.defaults.empty() && signature.defaults.back())
      fail("non-default argument follows default argument");
    else
      signature.defaults.push_back(nullptr);
  }
  expect_operator(")");
  return signature;
}

Target Parser::parse_assign_target(bool name_only, std::vector<std::string_view> extra_end_names, bool with_namespace) {
  Target target;
  target.line = current().line;
  if (with_namespace && current().type == TokenType::Name && peek().type == TokenType::Operator &&
      peek().value == ".") {
    target.kind = Target::Kind::Attribute;
    target.name = next().value;
    next();
    target.attribute = expect_name();
    return target;
  }
  if (name_only) {
    target.name = expect_name();
    for (std::string_view constant : {"true", "false", "none", "True", "False", "None"})
      if (target.name == constant) fail("can't assign to '" + target.name + "'", target.line);
    return target;
  }
  return to_target(*parse_tuple(true, true, extra_end_names, false));
}

Target Parser::to_target(const Expr& expr) const {
  Target target;
  target.line = expr.line;
  if (expr.kind == ExprKind::Name) {
    target.name = expr.name;
    return target;
  }
  if (expr.kind != ExprKind::Tuple) fail("can't assign to this expression", expr.line);
  target.kind = Target::Kind::Tuple;
  for (const auto& item : expr.operands) target.items.push_back(to_target(*item));
  return target;
}

std::unique_ptr<Program> parse(std::string_view source, const Options& options) {
  auto program = std::make_unique<Program>();
  program->body = Parser(tokenize(source, options), *program).parse_template();
  check_program(*program);
  return program;
}

}  // namespace parley::jinja::ast

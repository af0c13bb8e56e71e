// What Jinja2 refuses when it compiles a template, checked on the tree. A filter or test this engine does not
// know fails here, as in Jinja2, except inside an `if` (its test and branches) or an inline if, where Jinja2
// defers the error to the moment it is evaluated.
#include "model/jinja/jinja.hpp"
#include "model/jinja/parser.hpp"

namespace parley::jinja::ast {

namespace {

struct Frame {
  bool soft;     // inside an if: unknown filters and tests fail only when evaluated
  bool in_loop;  // break and continue are allowed
};

void check_expr(const Expr* expr, bool soft);

void check_arguments(const Arguments& args, bool soft) {
  for (const auto& arg : args.positional) check_expr(arg, soft);
  for (const auto& [name, arg] : args.keywords) check_expr(arg, soft);
  check_expr(args.star_args, soft);
  check_expr(args.star_kwargs, soft);
}

void check_expr(const Expr* expr, bool soft) {
  if (!expr) return;
  if (expr->kind == ExprKind::Condition) soft = true;
  if (expr->kind == ExprKind::Filter && !expr->filter && !soft)
    throw ParseError(expr->line, "no filter named '" + expr->name + "'");
  if (expr->kind == ExprKind::Test && !expr->test && !soft)
    throw ParseError(expr->line, "no test named '" + expr->name + "'");
  for (const auto& operand : expr->operands) check_expr(operand, soft);
  check_arguments(expr->arguments, soft);
}

void check_loop_target(const Target& target) {
  if (target.kind == Target::Kind::Name && target.name == "loop")
    throw ParseError(target.line, "can't assign to the special loop variable in a for-loop target");
  for (const Target& item : target.items) check_loop_target(item);
}

void check_defaults(const Signature& signature) {
  for (const auto& expr : signature.defaults) check_expr(expr, false);
}

void check_body(const Body& body, Frame frame) {
  for (const auto& stmt : body) {
    switch (stmt->kind) {
      case StmtKind::Text:
        break;
      case StmtKind::Output:
      case StmtKind::Set:
        check_expr(stmt->expr, frame.soft);
        break;
      case StmtKind::If:
        for (const Branch& branch : stmt->branches) {
          check_expr(branch.test, true);
          check_body(branch.body, {true, frame.in_loop});
        }
        check_body(stmt->else_body, {true, frame.in_loop});
        break;
      case StmtKind::For:
        check_expr(stmt->expr, frame.soft);
        check_loop_target(stmt->target);
        check_expr(stmt->condition, false);
        check_body(stmt->body, {false, true});
        check_body(stmt->else_body, {false, frame.in_loop});
        break;
      case StmtKind::With:
        for (const auto& [target, value] : stmt->assignments) check_expr(value, frame.soft);
        check_body(stmt->body, {false, frame.in_loop});
        break;
      case StmtKind::SetBlock:
      case StmtKind::FilterBlock:
        check_expr(stmt->expr, false);
        check_body(stmt->body, {false, frame.in_loop});
        break;
      case StmtKind::Macro:
        check_defaults(stmt->signature);
        check_body(stmt->body, {false, false});
        break;
      case StmtKind::CallBlock:
        check_expr(stmt->expr, frame.soft);
        check_defaults(stmt->signature);
        check_body(stmt->body, {false, false});
        break;
      case StmtKind::Generation:
        check_body(stmt->body, {false, false});
        break;
      case StmtKind::Break:
      case StmtKind::Continue:
        if (!frame.in_loop)
          throw ParseError(stmt->line, std::string("'") + (stmt->kind == StmtKind::Break ? "break" : "continue") +
                                           "' outside a loop");
        break;
    }
  }
}

bool expr_refers_to(const Expr* expr, std::string_view name) {
  if (!expr) return false;
  if (expr->kind == ExprKind::Name && expr->name == name) return true;
  for (const auto& operand : expr->operands)
    if (expr_refers_to(operand, name)) return true;
  const Arguments& args = expr->arguments;
  for (const auto& arg : args.positional)
    if (expr_refers_to(arg, name)) return true;
  for (const auto& [key, arg] : args.keywords)
    if (expr_refers_to(arg, name)) return true;
  return expr_refers_to(args.star_args, name) || expr_refers_to(args.star_kwargs, name);
}

}  // namespace

void check_program(const Program& program) { check_body(program.body, {false, false}); }

bool refers_to(const Body& body, std::string_view name) {
  for (const auto& stmt : body) {
    if (expr_refers_to(stmt->expr, name) || expr_refers_to(stmt->condition, name)) return true;
    for (const Branch& branch : stmt->branches)
      if (expr_refers_to(branch.test, name) || refers_to(branch.body, name)) return true;
    for (const auto& [target, value] : stmt->assignments)
      if (expr_refers_to(value, name)) return true;
    for (const auto& expr : stmt->signature.defaults)
      if (expr_refers_to(expr, name)) return true;
    if (refers_to(stmt->body, name) || refers_to(stmt->else_body, name)) return true;
  }
  return false;
}

}  // namespace parley::jinja::ast

#include "model/jinja/content_format.hpp"

#include <algorithm>
#include <deque>
#include <functional>

namespace parley::jinja {

namespace {

using ast::Expr;
using ast::ExprKind;
using ast::Stmt;
using ast::StmtKind;

void for_each_stmt(const ast::Body& body, const std::function<void(const Stmt&)>& visit) {
  for (const auto& stmt : body) {
    visit(*stmt);
    for (const ast::Branch& branch : stmt->branches) for_each_stmt(branch.body, visit);
    for_each_stmt(stmt->body, visit);
    for_each_stmt(stmt->else_body, visit);
  }
}

bool is_name(const Expr& e, const std::string& name) { return e.kind == ExprKind::Name && e.name == name; }

// `name.key` or `name['key']`.
bool is_key_of(const Expr& e, const std::string& name, const std::string& key) {
  if (e.kind == ExprKind::GetAttr) return is_name(*e.operands[0], name) && e.name == key;
  if (e.kind == ExprKind::GetItem) {
    const Expr& index = *e.operands[1];
    return is_name(*e.operands[0], name) && index.kind == ExprKind::Constant && index.constant.is_string() &&
           index.constant.text == key;
  }
  return false;
}

// The variable (or its `key`), possibly through filters, tests and slices.
bool accesses(const Expr& e, const std::string& name, const std::string* key = nullptr) {
  if (e.kind == ExprKind::Filter) return !e.operands.empty() && accesses(*e.operands[0], name, key);
  if (e.kind == ExprKind::Test) return accesses(*e.operands[0], name, key);
  if (e.kind == ExprKind::GetItem && e.operands[1]->kind == ExprKind::Slice) return accesses(*e.operands[0], name, key);
  return key ? is_key_of(e, name, *key) : is_name(e, name);
}

struct NotAName {};  // vLLM asserts a plain name as the target; a failed assertion means "string"

const std::string& target_name(const Stmt& stmt) {
  if (stmt.target.kind != ast::Target::Kind::Name) throw NotAName{};
  return stmt.target.name;
}

std::vector<std::string> names_set_from_messages(const ast::Program& program) {
  std::vector<std::string> names{"messages"};
  std::deque<std::string> pending{"messages"};
  while (!pending.empty()) {
    const std::string name = pending.front();
    pending.pop_front();
    for_each_stmt(program.body, [&](const Stmt& stmt) {
      if (stmt.kind != StmtKind::Set || !accesses(*stmt.expr, name)) return;
      const std::string& assigned = target_name(stmt);
      if (std::find(names.begin(), names.end(), assigned) != names.end()) return;  // vLLM would loop forever
      names.push_back(assigned);
      pending.push_back(assigned);
    });
  }
  return names;
}

}  // namespace

bool loops_over_message_content(const ast::Program& program) {
  try {
    const std::vector<std::string> message_lists = names_set_from_messages(program);
    std::vector<std::string> message_names;
    for_each_stmt(program.body, [&](const Stmt& stmt) {
      if (stmt.kind != StmtKind::For) return;
      if (std::any_of(message_lists.begin(), message_lists.end(),
                      [&](const std::string& n) { return accesses(*stmt.expr, n); }))
        message_names.push_back(target_name(stmt));
    });
    const std::string content = "content";
    bool found = false;
    for_each_stmt(program.body, [&](const Stmt& stmt) {
      if (found || stmt.kind != StmtKind::For) return;
      for (const std::string& message : message_names)
        if (accesses(*stmt.expr, message, &content)) {
          target_name(stmt);
          found = true;
          return;
        }
    });
    return found;
  } catch (const NotAName&) {
    return false;
  }
}

}  // namespace parley::jinja

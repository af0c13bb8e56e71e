// Tokens to the tree: Jinja2's recursive descent parser (parser.py), its precedence and its statement forms.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "model/jinja/ast.hpp"
#include "model/jinja/lexer.hpp"

namespace parley::jinja::ast {

// Nesting past these fails with a ParseError rather than exhausting the stack when parsing or rendering.
inline constexpr int kMaxNesting = 100;     // brackets, unary operators and blocks inside one another
inline constexpr int kMaxExprHeight = 256;  // an expression tree's height (long `a + b + c ...` chains included)

class Parser {
 public:
  Parser(std::vector<Token> tokens, Program& program) : tokens_(std::move(tokens)), program_(program) {}
  Body parse_template();

 private:
  struct OpenBlock {
    std::string tag;
    int line;
    std::vector<std::string_view> end_tags;
  };
  // Counts nesting on entry, so that "((((..." fails before it is deep.
  struct NestingGuard {
    NestingGuard(Parser& parser);
    ~NestingGuard() { --parser.nesting_; }
    Parser& parser;
  };

  // Tokens.
  const Token& current() const { return tokens_[pos_]; }
  const Token& peek() const { return tokens_[pos_ + 1 < tokens_.size() ? pos_ + 1 : pos_]; }
  const Token& next();
  bool at_operator(std::string_view op) const;
  bool at_name(std::string_view name) const;
  bool skip_operator(std::string_view op);
  bool skip_name(std::string_view name);
  void expect_operator(std::string_view op);
  void expect(TokenType type);
  std::string expect_name();
  [[noreturn]] void fail(const std::string& message, int line = 0) const;

  // Expressions, lowest precedence first.
  ExprPtr new_node(ExprKind kind, int line);
  ExprPtr make(ExprKind kind, int line, std::initializer_list<ExprPtr> operands);
  ExprPtr make(ExprKind kind, int line, const std::vector<ExprPtr>& operands);
  ExprPtr finish(ExprPtr node);  // sets the height, refusing deep trees
  ExprPtr parse_expression(bool with_condition = true);
  ExprPtr parse_condition();
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter = true);
  ExprPtr parse_primary();
  ExprPtr parse_tuple(bool simplified, bool with_condition, const std::vector<std::string_view>& extra_end_names,
                      bool explicit_parentheses);
  ExprPtr parse_list();
  ExprPtr parse_dict();
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_filter_expr(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node);
  ExprPtr parse_subscribed();
  Arguments parse_call_args();
  ExprPtr parse_filter(ExprPtr node, bool start_inline);
  ExprPtr parse_test(ExprPtr node);
  bool is_tuple_end(const std::vector<std::string_view>& extra_end_names) const;

  // Statements.
  Body subparse(const std::vector<std::string_view>& end_tags);
  Body parse_statements(std::vector<std::string_view> end_tags, bool drop_end_tag);
  Stmt* new_stmt(StmtKind kind, int line);
  Stmt* parse_statement();
  Stmt* parse_for();
  Stmt* parse_if();
  Stmt* parse_set();
  Stmt* parse_with();
  Stmt* parse_macro();
  Stmt* parse_call_block();
  Stmt* parse_block_body(StmtKind kind, std::string_view end_tag);  // filter, generation
  Target parse_assign_target(bool name_only, std::vector<std::string_view> extra_end_names, bool with_namespace);
  Target to_target(const Expr& expr) const;
  Signature parse_signature();
  [[noreturn]] void fail_unclosed(const std::string& found) const;

  std::vector<Token> tokens_;
  Program& program_;
  std::size_t pos_ = 0;
  int nesting_ = 0;
  std::vector<OpenBlock> open_blocks_;
};

// Jinja2's compile-time checks on a parsed body (check.cpp).
void check_program(const Program& program);
// Whether the body refers to `name` (Jinja2's find_undeclared): a macro takes caller, varargs, kwargs if it does.
bool refers_to(const Body& body, std::string_view name);

}  // namespace parley::jinja::ast

// The interpreter: executes the tree against scopes of variables, as Jinja2's compiled code would run.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/jinja/ast.hpp"
#include "model/jinja/jinja.hpp"
#include "model/jinja/value.hpp"

namespace parley::jinja {

// Variables visible at one point. Jinja2's scoping: a for loop's body gets a fresh scope each iteration, a
// macro call one whose parent is where the macro was defined; `if` bodies share their enclosing scope.
struct Scope {
  explicit Scope(std::shared_ptr<Scope> parent_scope = nullptr) : parent(std::move(parent_scope)) {}
  ~Scope();
  const Value* find(std::string_view name) const;  // here or in a parent
  void set(std::string_view name, Value value);    // here
  std::shared_ptr<Scope> parent;
  std::vector<std::pair<std::string, Value>> variables;
};

class Macro;

class Renderer {
 public:
  Renderer(const Options& options, std::shared_ptr<Scope> root) : options_(options), scope_(std::move(root)) {}
  ~Renderer();  // releases the namespaces and macros it made
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  std::string render(const ast::Body& body);
  const Options& options() const { return options_; }

  Value eval(const ast::Expr& expr);
  Value call(const Value& callee, CallArgs& args);
  Value getattr(const Value& object, std::string_view name);  // a.b: the attribute, else a['b']
  Value getitem(const Value& object, const Value& key);       // a[b]: the item, else the attribute b
  Value apply_filter(std::string_view name, const Value& input, CallArgs& args);
  bool apply_test(std::string_view name, const Value& input, CallArgs& args);
  std::string invoke_macro(const Macro& macro, CallArgs& args);
  // A namespace or macro made in this render, released when it ends (Object::release).
  Value track(std::shared_ptr<Object> object);

  // The step limit: loop iterations, output appends and calls count one each; building long strings counts
  // their length / 64, so that doubling a string in a loop stops too.
  void count_steps(long steps = 1);
  void charge_for_size(std::size_t bytes) { count_steps(static_cast<long>(bytes / 64)); }

 private:
  enum class Flow { Normal, Break, Continue };
  struct DepthGuard {
    explicit DepthGuard(Renderer& renderer);
    ~DepthGuard() { --renderer.depth_; }
    Renderer& renderer;
  };

  Flow exec(const ast::Body& body);
  Flow exec(const ast::Stmt& stmt);
  Flow exec_statement(const ast::Stmt& stmt);
  Flow exec_for(const ast::Stmt& stmt);
  void exec_set(const ast::Stmt& stmt);
  Flow exec_with(const ast::Stmt& stmt);
  void exec_call_block(const ast::Stmt& stmt);
  std::string render_scoped(const ast::Body& body);  // the body's output, rendered in a child scope
  void assign(const ast::Target& target, Value value);
  void append_output(std::string_view text);

  Value eval_name(const ast::Expr& expr);
  Value eval_getitem(const ast::Expr& expr);
  Value eval_slice(const Value& object, const ast::Expr& slice);
  Value eval_call(const ast::Expr& expr);
  Value eval_filter(const ast::Expr& expr);
  Value eval_test(const ast::Expr& expr);
  Value eval_compare(const ast::Expr& expr);
  Value eval_condition(const ast::Expr& expr);
  Value eval_concat(const ast::Expr& expr);
  Value eval_collection(const ast::Expr& expr);
  CallArgs eval_arguments(const ast::Arguments& arguments);

  const Options& options_;
  std::shared_ptr<Scope> scope_;
  std::string* out_ = nullptr;
  const Value* block_input_ = nullptr;  // a filter block's or block set's body, for its innermost filter
  long steps_ = 0;
  int depth_ = 0;
  std::vector<std::weak_ptr<Object>> made_;
};

}  // namespace parley::jinja

// The objects templates meet besides plain data: namespace(), macros and callers, the loop variable,
// global functions and bound methods.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/jinja/ast.hpp"
#include "model/jinja/value.hpp"

namespace parley::jinja {

struct Scope;

class Namespace : public Object {
 public:
  std::string type_name() const override { return "Namespace"; }
  std::string repr() const override;
  std::optional<Value> attribute(std::string_view name) const override;
  void set(std::string_view name, Value value) { attributes_.set(Value::string(std::string(name)), std::move(value)); }
  void release() override { attributes_.items.clear(); }

 private:
  DictData attributes_;
};

// A macro, or a call block's body as `caller`; it renders in a scope whose parent is where it was defined.
class Macro : public Object {
 public:
  Macro(std::string name, const ast::Signature& signature, const ast::Body& body, std::shared_ptr<Scope> closure)
      : name(std::move(name)), signature(signature), body(body), closure(std::move(closure)) {}
  ~Macro() override { release_later(std::move(closure)); }
  std::string type_name() const override { return "Macro"; }
  std::string repr() const override { return "<Macro " + repr_string(name) + ">"; }
  bool is_callable() const override { return true; }
  Value call(Renderer& renderer, CallArgs& args) const override;
  void release() override { closure.reset(); }

  std::string name;
  const ast::Signature& signature;
  const ast::Body& body;
  std::shared_ptr<Scope> closure;
};

// Jinja2's LoopContext: one per for loop, advanced as the loop runs.
class Loop : public Object, public std::enable_shared_from_this<Loop> {
 public:
  explicit Loop(std::vector<Value> items) : items(std::move(items)) {}
  ~Loop() override {
    for (Value& item : items) release_later(item);
  }
  std::string type_name() const override { return "LoopContext"; }
  std::string repr() const override;
  std::optional<Value> attribute(std::string_view name) const override;
  std::optional<std::int64_t> size() const override { return static_cast<std::int64_t>(items.size()); }

  std::vector<Value> items;
  std::size_t index0 = 0;
  mutable std::optional<std::vector<Value>> last_changed;  // loop.changed()'s memory
};

class Function : public Object {
 public:
  using Body = std::function<Value(Renderer&, CallArgs&)>;
  Function(std::string name, Body body) : name_(std::move(name)), body_(std::move(body)) {}
  std::string type_name() const override { return "function"; }
  std::string repr() const override { return "<function " + name_ + ">"; }
  bool is_callable() const override { return true; }
  Value call(Renderer& renderer, CallArgs& args) const override { return body_(renderer, args); }

 private:
  std::string name_;
  Body body_;
};

// `"a b".split`, `d.items`: a method with its object (methods.cpp runs it).
class BoundMethod : public Object {
 public:
  BoundMethod(Value self, std::string name) : self_(std::move(self)), name_(std::move(name)) {}
  ~BoundMethod() override { release_later(self_); }
  std::string type_name() const override { return "builtin_function_or_method"; }
  std::string repr() const override;
  bool is_callable() const override { return true; }
  Value call(Renderer& renderer, CallArgs& args) const override;

 private:
  Value self_;
  std::string name_;
};

}  // namespace parley::jinja

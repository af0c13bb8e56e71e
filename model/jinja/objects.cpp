#include "model/jinja/objects.hpp"

#include <algorithm>

#include "model/jinja/builtins.hpp"
#include "model/jinja/render.hpp"

namespace parley::jinja {

std::string Namespace::repr() const { return "<Namespace " + jinja::repr(Value::mapping(attributes_.items)) + ">"; }

std::optional<Value> Namespace::attribute(std::string_view name) const {
  if (const Value* value = attributes_.find(name)) return *value;
  return std::nullopt;
}

std::string Loop::repr() const {
  return "<LoopContext " + std::to_string(index0 + 1) + "/" + std::to_string(items.size()) + ">";
}

std::optional<Value> Loop::attribute(std::string_view name) const {
  const auto length = static_cast<std::int64_t>(items.size());
  const auto index = static_cast<std::int64_t>(index0);
  if (name == "index0") return Value::of_int(index);
  if (name == "index") return Value::of_int(index + 1);
  if (name == "revindex") return Value::of_int(length - index);
  if (name == "revindex0") return Value::of_int(length - index - 1);
  if (name == "first") return Value::boolean(index == 0);
  if (name == "last") return Value::boolean(index + 1 == length);
  if (name == "length") return Value::of_int(length);
  if (name == "depth") return Value::of_int(1);
  if (name == "depth0") return Value::of_int(0);
  if (name == "previtem") return index > 0 ? items[index0 - 1] : Value::undefined("there is no previous item");
  if (name == "nextitem") return index + 1 < length ? items[index0 + 1] : Value::undefined("there is no next item");
  const std::shared_ptr<const Loop> self = shared_from_this();
  if (name == "cycle")
    return Value::of_object(std::make_shared<Function>("cycle", [self](Renderer&, CallArgs& args) {
      if (args.positional.empty()) fail("no items for cycling given");
      return args.positional[self->index0 % args.positional.size()];
    }));
  if (name == "changed")
    return Value::of_object(std::make_shared<Function>("changed", [self](Renderer&, CallArgs& args) {
      const bool changed = !self->last_changed || self->last_changed->size() != args.positional.size() ||
                           !std::equal(args.positional.begin(), args.positional.end(), self->last_changed->begin(),
                                       [](const Value& a, const Value& b) { return equals(a, b); });
      if (changed) self->last_changed = args.positional;
      return Value::boolean(changed);
    }));
  return std::nullopt;
}

}  // namespace parley::jinja

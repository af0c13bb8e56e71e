#include "model/jinja/builtins.hpp"

namespace parley::jinja {

BoundArgs::BoundArgs(std::string_view function, const CallArgs& args,
                     std::initializer_list<std::string_view> parameters)
    : values_(parameters.size()) {
  const std::string name(function);
  if (args.positional.size() > parameters.size())
    fail(name + "() takes at most " + std::to_string(parameters.size()) + " argument(s) (" +
         std::to_string(args.positional.size()) + " given)");
  for (std::size_t i = 0; i < args.positional.size(); ++i) values_[i] = args.positional[i];
  for (const auto& [key, value] : args.keywords) {
    std::size_t i = 0;
    for (std::string_view parameter : parameters) {
      if (parameter == key) break;
      ++i;
    }
    if (i == parameters.size()) fail(name + "() got an unexpected keyword argument '" + key + "'");
    if (values_[i]) fail(name + "() got multiple values for argument '" + key + "'");
    values_[i] = value;
  }
}

const Value& BoundArgs::get(std::size_t i) const {
  static const Value kNotGiven = Value::undefined("argument not given");
  return values_[i] ? *values_[i] : kNotGiven;
}

}  // namespace parley::jinja

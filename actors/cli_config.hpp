// Configuration files for `parley serve` and `parley generate`: a TOML file whose keys are the flags' long names
// (CLI11's own config support), --print-config, and secrets read from files. See config/README.md.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "engine/flag_choices.hpp"

namespace parley {

// Gives `command` (a subcommand of `app`) --config FILE and --print-config. Call once per command, before parsing.
void add_config_flags(CLI::App& app, CLI::App* command, bool& print_config);

// app.parse; a parse error is printed (with the file and line of the key it names when the value came from
// --config) and its exit code returned. Returns -1 when parsing succeeded.
int parse_command_line(CLI::App& app, int argc, char** argv);

// The configuration `command` runs with (file, flags and defaults) as TOML that --config reads back.
std::string effective_config(const CLI::App& command);

// effective_config with the values of api-key and admin-token hidden (for GET /admin/config).
std::string redacted_config(const CLI::App& command);

// Range checks for numeric flags, with plain messages ("must be at least 1, got 0"); a non-number is refused too.
CLI::Validator at_least(double min);
CLI::Validator in_range(double low, double high, bool low_open = false);  // [low, high], or (low, high] when low_open

// A CLI11 check: the value passes when parse accepts it, else parse's message says why.
template <class Parse>
auto accepted_by(Parse parse) {
  return [parse](const std::string& value) -> std::string {
    try {
      parse(value);
      return "";
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
  };
}

// A flag choosing one of an enum's names (engine/flag_choices.hpp), parsed into `target` once; add_choice and
// add_listed_choice give it its check.
template <class E>
CLI::Option* add_choice_option(CLI::App* command, E& target, const std::string& description) {
  return command
      ->add_option_function<std::string>(
          std::string(Choices<E>::flag), [&target](const std::string& word) { target = parse_choice<E>(word); },
          description)
      ->default_str(name_of(target));
}

// A wrong word refused with every choice named (parse_choice's message).
template <class E>
CLI::Option* add_choice(CLI::App* command, E& target, const std::string& description) {
  const std::string flag(Choices<E>::flag);
  return add_choice_option(command, target, description)
      ->check(CLI::Validator(
          [flag](std::string& word) {
            const std::string why = accepted_by(parse_choice<E>)(word);
            return why.empty() ? why : why.substr(flag.size() + 1);  // CLI11 names the flag itself
          },
          "", flag));
}

// A wrong word refused by CLI11's IsMember ("x not in {a,b}"), which --help shows as the list of choices.
template <class E>
CLI::Option* add_listed_choice(CLI::App* command, E& target, const std::string& description) {
  return add_choice_option(command, target, description)
      ->check(CLI::IsMember(std::vector<std::string>(Choices<E>::names.begin(), Choices<E>::names.end())));
}

// The secret in `path` for `flag` (--api-key-file, --admin-token-file): one line, its trailing newline stripped.
// Throws CLI::ValidationError when the file cannot be read, is empty or holds more than one line.
std::string read_secret_file(const std::string& flag, const std::string& path);

}  // namespace parley

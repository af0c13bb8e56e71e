#include "actors/cli_config.hpp"

#include <cctype>
#include <cstdio>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <utility>
#include <vector>

namespace parley {
namespace {

// A key of the file and the line (from 1) it is on, or a [section] line.
struct KeyLine {
  std::string key;
  int line = 0;
};

std::string trimmed(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t\r") - begin + 1);
}

// Where each key is set: the text before `=` of each line, or a line in brackets. Locates errors, parses nothing.
std::vector<KeyLine> key_lines(std::istream& in) {
  std::vector<KeyLine> out;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string text = trimmed(line);
    if (text.empty() || text.front() == '#') continue;
    if (text.front() == '[' && text.back() == ']') {
      out.push_back({text, number});
      continue;
    }
    if (text.find('=') == std::string::npos) continue;  // a list's continuation line
    std::string key = trimmed(text.substr(0, text.find('=')));
    if (key.size() >= 2 && (key.front() == '"' || key.front() == '\'') && key.back() == key.front())
      key = key.substr(1, key.size() - 2);
    out.push_back({key, number});
  }
  return out;
}

// CLI11 reads the file on the top-level app only; this formatter files each top-level key under the command given
// (serve or generate), so a file holds plain flag names. Sections and repeated keys are refused, not merged.
class CommandScopedToml : public CLI::ConfigTOML {
 public:
  explicit CommandScopedToml(const CLI::App& app) : app_(app) {}

  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override {
    const std::vector<CLI::App*> commands = app_.get_subcommands();
    if (commands.empty() || !commands.front()->get_option_no_throw("--print-config"))
      throw CLI::ConfigError("--config applies to `parley serve` and `parley generate` only",
                             CLI::ExitCodes::ConfigError);
    std::ostringstream text;
    text << input.rdbuf();
    // CLI11 joins a key's repeated lines into one list; TOML refuses a key set twice, and so do we.
    std::istringstream lines(text.str());
    std::map<std::string, int> first_line;
    for (const KeyLine& k : key_lines(lines))
      if (auto [at, fresh] = first_line.emplace(k.key, k.line); !fresh && k.key.front() != '[')
        throw CLI::ConfigError("--" + k.key + " is set twice (lines " + std::to_string(at->second) + " and " +
                                   std::to_string(k.line) + ")",
                               CLI::ExitCodes::ConfigError);
    std::istringstream toml(text.str());
    std::vector<CLI::ConfigItem> items = CLI::ConfigTOML::from_config(toml);
    for (CLI::ConfigItem& item : items) {
      if (!item.parents.empty())
        throw CLI::ConfigError("[" + item.parents.front() +
                                   "]: sections and dotted keys are not used; write each flag " +
                                   "by its long name at the top level",
                               CLI::ExitCodes::ConfigError);
      // CLI11 would read 3 or "yes" as a flag's value; TOML has true and false.
      const CLI::Option* flag = commands.front()->get_option_no_throw("--" + item.name);
      if (flag != nullptr && flag->get_expected_min() == 0 &&
          (item.inputs.size() != 1 || (item.inputs[0] != "true" && item.inputs[0] != "false")))
        throw CLI::ConversionError("--" + item.name + ": expected true or false, got " + CLI::detail::join(item.inputs),
                                   CLI::ExitCodes::ConversionError);
      item.parents = {commands.front()->get_name()};
    }
    return items;
  }

 private:
  const CLI::App& app_;
};

// Whether `message` names `name` whole (not as the start of a longer flag name).
bool names(const std::string& message, const std::string& name) {
  for (size_t at = message.find(name); at != std::string::npos; at = message.find(name, at + 1)) {
    const size_t end = at + name.size();
    if (end == message.size() ||
        !(std::isalnum(static_cast<unsigned char>(message[end])) || message[end] == '-' || message[end] == '_'))
      return true;
  }
  return false;
}

bool on_command_line(const std::string& key, int argc, char** argv) {
  const std::string flag = "--" + key;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == flag || arg.rfind(flag + "=", 0) == 0) return true;
  }
  return false;
}

// "FILE:LINE: key: message" when the error names a key the file set (and the command line did not).
std::string located(const CLI::App& app, const CLI::ParseError& error, int argc, char** argv) {
  const CLI::Option* config = app.get_config_ptr();
  std::string message = error.what();
  if (config == nullptr || config->count() == 0) return message;
  const std::string path = config->results().back();
  const std::string command = app.get_subcommands().empty() ? "" : app.get_subcommands().front()->get_name();
  // These name a key that only the file can hold; the others may be about a flag on the command line.
  const std::string unknown = "INI was not able to parse ";
  const bool unknown_key = message.rfind(unknown, 0) == 0;
  const bool file_only = unknown_key || message.find("not allowed in a configuration file") != std::string::npos;
  std::string unknown_name;
  if (unknown_key) {
    unknown_name = message.substr(unknown.size());
    if (unknown_name.rfind(command + ".", 0) == 0) unknown_name = unknown_name.substr(command.size() + 1);
    message = "unknown key: not a flag of parley " + command;
  }
  std::ifstream file(path);
  for (const KeyLine& k : key_lines(file)) {
    const bool section = k.key.front() == '[';
    const bool named = section ? message.find(k.key) != std::string::npos
                               : names(error.what(), "--" + k.key) || names(error.what(), command + "." + k.key);
    if (named && (section || file_only || !on_command_line(k.key, argc, argv)))
      return path + ":" + std::to_string(k.line) + ": " + (section ? "" : k.key + ": ") + message;
  }
  return unknown_key ? path + ": " + unknown_name + ": " + message : message;
}

// A number from an option's text, or why it is not one.
std::string as_number(const std::string& text, double& value) {
  try {
    size_t used = 0;
    value = std::stod(text, &used);
    if (used == text.size()) return "";
  } catch (const std::exception&) {}
  return "expected a number, got " + text;
}

std::string number_text(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

}  // namespace

CLI::Validator at_least(double min) {
  return CLI::Validator(
      [min](std::string& text) {
        double value = 0;
        std::string why = as_number(text, value);
        if (why.empty() && value < min) why = "must be at least " + number_text(min) + ", got " + text;
        return why;
      },
      ">=" + number_text(min));
}

CLI::Validator in_range(double low, double high, bool low_open) {
  return CLI::Validator(
      [=](std::string& text) {
        double value = 0;
        std::string why = as_number(text, value);
        if (why.empty() && (value < low || (low_open && value == low) || value > high))
          why = "must be in " + std::string(low_open ? "(" : "[") + number_text(low) + ", " + number_text(high) +
                "], got " + text;
        return why;
      },
      std::string(low_open ? "(" : "[") + number_text(low) + ", " + number_text(high) + "]");
}

void add_config_flags(CLI::App& app, CLI::App* command, bool& print_config) {
  CLI::Option* file = app.get_config_ptr();
  if (file == nullptr) {
    // The top-level option holds the file; each command's --config hands its value there as it is parsed.
    file = app.set_config("--config", "", "TOML file of flag values")->group("");
    app.config_formatter(std::make_shared<CommandScopedToml>(app));
    app.allow_config_extras(CLI::config_extras_mode::error);
  }
  command
      ->add_option_function<std::string>(
          "--config",
          [file](const std::string& path) {
            if (file->count() > 0) throw CLI::ValidationError("--config", "give one file (" + path + " is the second)");
            file->add_result(path);
          },
          "A TOML file setting flags by their long names (port = 8080); the command line overrides it (config/)")
      ->trigger_on_parse()
      ->configurable(false);
  command->add_flag("--print-config", print_config, "Print the effective configuration as TOML (for --config) and exit")
      ->configurable(false);
  // An unset option without a default stays out of the printed configuration: "" would not read back as unset.
  for (CLI::Option* option : command->get_options())
    if (option->get_default_str().empty() && option->get_expected_min() != 0) option->run_callback_for_default(false);
}

int parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return -1;
  } catch (const CLI::Success& done) {
    return app.exit(done);
  } catch (const CLI::FileError& missing) {
    std::fprintf(stderr, "parley: error: config file %s: not found or not readable\n",
                 app.get_config_ptr()->results().back().c_str());
    return missing.get_exit_code();
  } catch (const CLI::ParseError& error) {
    std::fprintf(stderr, "parley: error: %s\n", located(app, error, argc, argv).c_str());
    return error.get_exit_code();
  }
}

std::string effective_config(const CLI::App& command) {
  return "# parley " + command.get_name() +
         ": the effective configuration (file, flags, defaults); read back with --config\n" +
         command.config_to_str(true, true);
}

std::string redacted_config(const CLI::App& command) {
  std::istringstream in(effective_config(command));
  std::string out, line;
  while (std::getline(in, line)) {
    const size_t equals = line.find('=');
    const std::string key = trimmed(line.substr(0, equals));
    const bool secret = equals != std::string::npos &&
                        (key == "api-key" || key == "admin-token" || key == "admin-read-token") &&
                        trimmed(line.substr(equals + 1)) != "\"\"";
    out += (secret ? key + "=\"(hidden)\"" : line) + "\n";
  }
  return out;
}

std::string read_secret_file(const std::string& flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CLI::ValidationError(flag, "cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  std::string secret = text.str();
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  if (secret.empty()) throw CLI::ValidationError(flag, path + " is empty");
  if (secret.find('\n') != std::string::npos) throw CLI::ValidationError(flag, path + " holds more than one line");
  return secret;
}

}  // namespace parley

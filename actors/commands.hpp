// The `parley` subcommands, each registered on the CLI11 app and run after parsing.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace parley {

using Command = std::function<int()>;
Command add_generate_command(CLI::App& app);
Command add_convert_command(CLI::App& app);
Command add_gen_model_command(CLI::App& app);

}  // namespace parley

// parley: the command line. Each subcommand lives in its own file; this only dispatches.
#include <cstdio>
#include <exception>

#include "actors/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Parley: an LLM inference engine"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "parley 0.1.0");
  const parley::Command generate = parley::add_generate_command(app);
  const parley::Command convert = parley::add_convert_command(app);
  const parley::Command gen_model = parley::add_gen_model_command(app);
  CLI11_PARSE(app, argc, argv);
  try {
    if (app.got_subcommand("generate")) return generate();
    if (app.got_subcommand("convert")) return convert();
    if (app.got_subcommand("gen-model")) return gen_model();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "parley: error: %s\n", e.what());
    return 1;
  }
  return 2;
}

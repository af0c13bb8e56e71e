// The flags of one engine (`parley serve` and `parley generate`): parsed into EngineConfig, every choice an enum.
#pragma once
#include <CLI/CLI.hpp>

#include "engine/engine_config.hpp"

namespace parley {

void add_engine_flags(CLI::App* cmd, EngineConfig& e);

}  // namespace parley

// The AMX tile configuration (palette 1) as LDTILECFG reads it: per tile register its rows and bytes per row.
// Shared by the AMX matmul and the benchmarks' tile probe.
#pragma once
#include <cstdint>

namespace parley::cpu {

struct alignas(64) AmxTileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

}  // namespace parley::cpu

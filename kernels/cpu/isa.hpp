// The instruction sets the CPU kernels are built for (--isa), apart from the op set: the engine's flags hold one.
#pragma once
#include <string>

namespace parley::cpu {

// Amx: the AVX-512 kernels, with the quantized matmul on AMX tiles where the kernel has a tile path (Avx512
// leaves the tiles off: the same bits, another speed).
enum class Isa { Auto, Generic, Avx2, Avx512, Amx };
std::string isa_name(Isa isa);
Isa parse_isa(const std::string& name);  // "auto", "generic", "avx2", "avx512", "amx"; throws otherwise
bool isa_supported(Isa isa);             // whether this CPU can run it
bool amx_tiles_usable();                 // AMX-INT8 tiles, with Linux's grant of their state to this process
Isa best_isa();
Isa checked_isa(Isa isa);  // Auto as best_isa(); throws std::invalid_argument for one this CPU lacks

}  // namespace parley::cpu

// The instruction sets the CPU kernels are built for, and which of them this CPU runs.
#include <cpuid.h>

#include <stdexcept>
#include <string>

#include "kernels/cpu/ops.hpp"

namespace parley::cpu {

std::string isa_name(Isa isa) {
  switch (isa) {
    case Isa::Auto:
      return "auto";
    case Isa::Generic:
      return "generic";
    case Isa::Avx2:
      return "avx2";
    case Isa::Avx512:
      return "avx512";
  }
  return "?";
}

Isa parse_isa(const std::string& name) {
  for (Isa isa : {Isa::Auto, Isa::Generic, Isa::Avx2, Isa::Avx512})
    if (isa_name(isa) == name) return isa;
  throw std::invalid_argument("unknown ISA '" + name + "' (expected auto, generic, avx2 or avx512)");
}

namespace {
// CPUID leaf 1, ECX bit 29: clang 14's __builtin_cpu_supports knows no "f16c".
bool cpu_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C);
}
}  // namespace

bool isa_supported(Isa isa) {
  switch (isa) {
    case Isa::Auto:
    case Isa::Generic:
      return true;
    case Isa::Avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
    case Isa::Avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
  }
  return false;
}

Isa best_isa() {
  if (isa_supported(Isa::Avx512)) return Isa::Avx512;
  if (isa_supported(Isa::Avx2)) return Isa::Avx2;
  return Isa::Generic;
}

Isa checked_isa(Isa isa) {
  if (isa == Isa::Auto) isa = best_isa();
  if (!isa_supported(isa)) throw std::invalid_argument("this CPU does not support ISA " + isa_name(isa));
  return isa;
}

}  // namespace parley::cpu

// The instruction sets the CPU kernels are built for, and which of them this CPU runs.
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

#include "kernels/cpu/isa.hpp"

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
    case Isa::Amx:
      return "amx";
  }
  return "?";
}

Isa parse_isa(const std::string& name) {
  for (Isa isa : {Isa::Auto, Isa::Generic, Isa::Avx2, Isa::Avx512, Isa::Amx})
    if (isa_name(isa) == name) return isa;
  throw std::invalid_argument("unknown ISA '" + name + "' (expected auto, generic, avx2, avx512 or amx)");
}

namespace {
// CPUID leaf 1, ECX bit 29: clang 14's __builtin_cpu_supports knows no "f16c".
bool cpu_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C);
}
}  // namespace

// Asked once: the kernel grants the tile state per process (arch_prctl), and a CPU may have AMX that Linux withholds.
bool amx_tiles_usable() {
  static const bool usable = [] {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    const bool tile = d & (1u << 24), int8 = d & (1u << 25);
    constexpr long kReqXcompPerm = 0x1023, kXtileData = 18;  // arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)
    return tile && int8 && syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) == 0;
  }();
  return usable;
}

bool isa_supported(Isa isa) {
  switch (isa) {
    case Isa::Auto:
    case Isa::Generic:
      return true;
    case Isa::Avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
    case Isa::Avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
    case Isa::Amx:  // the tiles, and Linux's grant of their state to this process
      return isa_supported(Isa::Avx512) && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni") &&
             amx_tiles_usable();
  }
  return false;
}

Isa best_isa() {
  if (isa_supported(Isa::Amx)) return Isa::Amx;
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

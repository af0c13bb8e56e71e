// AVX-512 VNNI kernels of the quantized matmul (built with -mavx512vnni; called only where the CPU has it).
#include "kernels/cpu/qmatmul_avx512.hpp"

namespace parley::cpu::qmm {

void panels_avx512vnni(const QuantizedRows& x, const QuantMatrix& w, float* out, int m_begin, int m_end, int p_begin,
                       int p_end) {
  panels<Avx512<true>>(x, w, out, m_begin, m_end, p_begin, p_end);
}

}  // namespace parley::cpu::qmm

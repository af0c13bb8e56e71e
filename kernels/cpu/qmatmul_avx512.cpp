// AVX-512BW kernels of the quantized matmul (built without VNNI, for CPUs that lack it).
#include "kernels/cpu/qmatmul_avx512.hpp"

namespace parley::cpu::qmm {

void panels_avx512(const QuantizedRows& x, const QuantMatrix& w, float* out, int m_begin, int m_end, int p_begin,
                   int p_end) {
  panels<Avx512<false>>(x, w, out, m_begin, m_end, p_begin, p_end);
}

}  // namespace parley::cpu::qmm

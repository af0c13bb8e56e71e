// The CUDA backend on a GPU: decode tokens/s at 1, 32 and 256 sequences on the 110M shape (random weights) with
// CUDA graphs on and off, and each kernel's bandwidth against the device's measured peak (a device-to-device
// copy). Prints two tables. Needs a CUDA device.
// Usage: bench_cuda [--seqs 1,32,256] [--prompt-tokens 32] [--gen-tokens 64] [--dtype bfloat16] [--model M.gguf]
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "engine/sampler.hpp"
#include "model/cuda/cuda_model.hpp"
#include "kernels/cuda/ops.hpp"
#include "model/model_file.hpp"
#include "model/random_model.hpp"

using namespace parley;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// S sequences prefilled with P tokens, then G decode steps of one token each (greedy on the host, as the
// worker samples): decode tokens per second.
double decode_tokens_per_s(const ModelFile& file, const std::string& dtype, int S, int P, int G, bool graphs) {
  const int bs = 16, blocks_per_seq = (P + G + bs - 1) / bs;
  cuda::CudaModelOptions o;
  o.dtype = dtype;
  o.model.num_blocks = S * blocks_per_seq;
  o.model.block_size = bs;
  o.model.max_num_tokens = std::max(S, P);
  o.model.max_num_seqs = S;
  o.model.max_model_len = P + G;
  o.model.graph_batch_sizes = cuda::graph_batch_sizes(graphs ? S : 0);
  auto model = cuda::make_model(file.config, file.weights, o);
  std::vector<int> last(size_t(S), 1);
  std::vector<float> logits;
  for (int s = 0; s < S; ++s) {  // prefill each sequence alone
    ForwardBatch b;
    b.max_blocks_per_seq = blocks_per_seq;
    for (int i = 0; i < blocks_per_seq; ++i) b.block_tables.push_back(s * blocks_per_seq + i);
    for (int p = 0; p < P; ++p) {
      b.token_ids.push_back(1 + (s * 31 + p * 7) % (file.config.vocab_size - 1));
      b.positions.push_back(p), b.token_seq.push_back(0);
      b.slot_mapping.push_back(int64_t(s * blocks_per_seq + p / bs) * bs + p % bs);
    }
    b.logits_indices = {P - 1};
    model->forward(b, logits);
    last[size_t(s)] = argmax(logits.data(), file.config.vocab_size);
  }
  const auto t0 = Clock::now();
  for (int g = 0; g < G; ++g) {
    ForwardBatch b;
    b.max_blocks_per_seq = blocks_per_seq;
    const int p = P + g;
    for (int s = 0; s < S; ++s) {
      for (int i = 0; i < blocks_per_seq; ++i) b.block_tables.push_back(s * blocks_per_seq + i);
      b.token_ids.push_back(last[size_t(s)]), b.positions.push_back(p), b.token_seq.push_back(s);
      b.slot_mapping.push_back(int64_t(s * blocks_per_seq + p / bs) * bs + p % bs);
      b.logits_indices.push_back(s);
    }
    const bool replayed = model->forward(b, logits);
    if (replayed != graphs)
      throw std::runtime_error("a decode step did not run as asked (graph replay " + std::to_string(replayed) + ")");
    for (int s = 0; s < S; ++s)
      last[size_t(s)] = argmax(logits.data() + size_t(s) * file.config.vocab_size, file.config.vocab_size);
  }
  return double(S) * G / seconds_since(t0);
}

// Seconds per call of fn, after a warm-up, synchronized.
template <class F>
double time_op(const cuda::CudaBackend& be, F fn, int reps = 20) {
  fn();
  be.synchronize();
  const auto t0 = Clock::now();
  for (int i = 0; i < reps; ++i) fn();
  be.synchronize();
  return seconds_since(t0) / reps;
}

void bandwidth_table(const LlamaConfig& c) {
  cuda::CudaBackend be;
  const int64_t n = int64_t(1) << 28;  // 1 GiB of floats
  cuda::DeviceBuffer a(size_t(n) * 4), b(size_t(n) * 4), out(size_t(n) * 4);
  PARLEY_CUDA_CHECK(cudaMemset(a.get(), 0, size_t(n) * 4));
  PARLEY_CUDA_CHECK(cudaMemset(b.get(), 0, size_t(n) * 4));
  PARLEY_CUDA_CHECK(cudaDeviceSynchronize());
  const double peak =
      2.0 * n * 4 / time_op(be, [&] {
        PARLEY_CUDA_CHECK(cudaMemcpyAsync(out.get(), a.get(), size_t(n) * 4, cudaMemcpyDeviceToDevice, be.stream()));
      });
  std::printf("\n| kernel | bytes moved | GB/s | of peak copy (%.0f GB/s) |\n|---|---|---|---|\n", peak / 1e9);
  auto row = [&](const char* name, double bytes, double s) {
    std::printf("| %s | %.0f MB | %.0f | %.0f%% |\n", name, bytes / 1e6, bytes / s / 1e9, 100.0 * bytes / s / peak);
  };
  row("residual add", 3.0 * n * 4, time_op(be, [&] { be.add(out.get<float>(), a.get<float>(), n); }));
  row("swiglu", 3.0 * n * 4, time_op(be, [&] { be.swiglu(a.get<float>(), b.get<float>(), out.get<float>(), n); }));
  const int rows = int(n / c.dim);
  row("rmsnorm", 2.0 * n * 4,
      time_op(be, [&] { be.rmsnorm(a.get<float>(), b.get<float>(), out.get<float>(), rows, c.dim, 1e-5f); }));
  // Decode attention streams each sequence's KV: 256 sequences at position 1023, a and b as the keys and values.
  {
    const int S = 256, P = 1024, bs = 16, kv_dim = c.kv_dim();
    std::vector<int> positions(size_t(S), P - 1), token_seq(size_t(S), 0), tables(size_t(S) * (P / bs), 0);
    for (int s = 0; s < S; ++s) token_seq[size_t(s)] = s;
    for (size_t i = 0; i < tables.size(); ++i) tables[i] = int(i);
    cuda::DeviceBuffer dpos(positions.size() * 4), dseq(token_seq.size() * 4), dtables(tables.size() * 4);
    PARLEY_CUDA_CHECK(cudaMemcpy(dpos.get(), positions.data(), positions.size() * 4, cudaMemcpyHostToDevice));
    PARLEY_CUDA_CHECK(cudaMemcpy(dseq.get(), token_seq.data(), token_seq.size() * 4, cudaMemcpyHostToDevice));
    PARLEY_CUDA_CHECK(cudaMemcpy(dtables.get(), tables.data(), tables.size() * 4, cudaMemcpyHostToDevice));
    PARLEY_CUDA_CHECK(
        cudaDeviceSynchronize());  // the legacy stream's copies land before the backend's stream reads them
    const cpu::KvLayerView kv{a.get<float>(), b.get<float>(), bs, kv_dim};
    const cpu::AttentionMetadata meta{S, dpos.get<int>(), dseq.get<int>(), dtables.get<int>(), P / bs};
    be.reserve_attention(S, c.n_heads, c.head_dim(), P);
    float* q = out.get<float>();
    float* o = q + size_t(S) * c.dim;
    row("paged attention, 256 seqs at 1024 positions", 2.0 * S * P * kv_dim * 4,
        time_op(be, [&] { be.paged_attention(q, kv, meta, c.n_heads, c.n_kv_heads, c.head_dim(), o); }));
  }
  // The decode GEMM streams the weights: the head (vocab x dim) at M = 1 and M = 32.
  std::vector<float> w(size_t(c.vocab_size) * c.dim, 0.01f);
  be.reserve_matmul(256, c.dim, c.vocab_size);
  for (auto dtype : {cuda::DType::F32, cuda::DType::BF16}) {
    const auto dw = be.upload_matrix(w.data(), c.vocab_size, c.dim, dtype);
    const double bytes = double(w.size()) * (dtype == cuda::DType::F32 ? 4 : 2);
    for (int M : {1, 32, 256}) {
      const std::string name = std::string("GEMM head ") + cuda::dtype_name(dtype) + " M=" + std::to_string(M);
      row(name.c_str(), bytes, time_op(be, [&] { be.matmul(a.get<float>(), dw, out.get<float>(), M); }));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("CUDA decode throughput (graphs on/off) and kernel bandwidth");
  std::vector<int> seqs{1, 32, 256};
  int prompt = 32, gen = 64;
  std::string dtype = "bfloat16", model_path;
  app.add_option("--seqs", seqs, "Sequences decoding together")->delimiter(',');
  app.add_option("--prompt-tokens", prompt, "Prompt tokens per sequence");
  app.add_option("--gen-tokens", gen, "Decode steps timed");
  app.add_option("--dtype", dtype, "GEMM weights: float32, bfloat16, float16");
  app.add_option("--model", model_path, "GGUF or llama2.c model (default: random weights of the 110M shape)");
  CLI11_PARSE(app, argc, argv);
  std::string why;
  if (cuda::device_count(&why) == 0) {
    std::fprintf(stderr, "bench_cuda needs a CUDA device: %s\n", why.c_str());
    return 1;
  }
  const ModelFile file = model_path.empty() ? make_random_model(bench_110m_config(), 7) : load_model_file(model_path);
  std::printf("model %s (dim %d, %d layers, vocab %d), %s weights, %d prompt + %d decode tokens per sequence\n\n",
              file.name.c_str(), file.config.dim, file.config.n_layers, file.config.vocab_size, dtype.c_str(), prompt,
              gen);
  std::printf("| sequences | eager tok/s | graphs tok/s | graphs / eager |\n|---|---|---|---|\n");
  for (int S : seqs) {
    const double eager = decode_tokens_per_s(file, dtype, S, prompt, gen, false);
    const double graphs = decode_tokens_per_s(file, dtype, S, prompt, gen, true);
    std::printf("| %d | %.0f | %.0f | %.2fx |\n", S, eager, graphs, graphs / eager);
    std::fflush(stdout);
  }
  bandwidth_table(file.config);
  return 0;
}

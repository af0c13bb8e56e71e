// The Llama forward pass on an accelerator, written once over an Ops type that owns the device memory, the
// kernels and graph capture: CudaOps (model/cuda/cuda_model.cpp) on a GPU, and a host emulation in the
// tests that runs the same kernel bodies on the CPU, so this orchestration (buffers, padding, graphs, the
// KV layout) is checked in CI without a GPU. It includes no CUDA header.
//
// Ops provides: Buffer (get<T>(), bytes()), Matrix, Graph; alloc(bytes), upload(dst, src, bytes), download(dst, src,
// bytes) (synchronous), copy(dst, src, bytes) on the device, upload_matrix(w, N, K), reserve_matmul(rows, k, n),
// reserve_attention(tokens, heads, head_dim, positions),
// zero(dst, bytes), activate() (bind the calling thread), synchronize(), memory() -> DeviceMemory, capture(fn) ->
// Graph, replay(Graph&), name(), and the kernels of CudaBackend (matmul, rmsnorm, rope, swiglu, geglu, add_bias, scale,
// softcap, embedding, kv_write, paged_attention, add, gather_rows, sample).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/ops.hpp"
#include "model/cuda/cuda_model.hpp"
#include "model/cuda/device_batch.hpp"
#include "kernels/cuda/device_moe.hpp"
#include "model/cuda/staging_pool.hpp"
#include "model/architecture.hpp"
#include "model/device_model.hpp"

namespace parley::cuda {

template <class Ops>
class DeviceLlama final : public DeviceModel {
  using Buffer = typename Ops::Buffer;
  using Matrix = typename Ops::Matrix;

 public:
  // Uploads the weights, sizes the activations for the largest pass, allocates the KV blocks (num_blocks 0:
  // as many as fit in the share of the device's memory, see blocks_in_share) and captures the graphs.
  DeviceLlama(std::unique_ptr<Ops> ops, const LlamaConfig& config, const LlamaWeights& w, const DeviceLlamaOptions& o)
      : ops_(std::move(ops)), c_(config), o_(o), layout_(KvCacheLayout::for_model(config)) {
    c_.validate();
    if (o_.num_blocks < 0 || o_.block_size < 1)
      throw std::invalid_argument("the device KV cache needs a positive block size");
    if (o_.max_model_len < 1 || o_.max_num_seqs < 1 || o_.graph_query_len < 1)
      throw std::invalid_argument("DeviceLlama: bad batch limits");
    if (!(o_.gpu_memory_utilization > 0 && o_.gpu_memory_utilization <= 1))
      throw std::invalid_argument("--gpu-memory-utilization must be in (0, 1]");
    if (o_.staging_bytes < 0) throw std::invalid_argument("DeviceLlama: negative staging bytes");
    if (w.mtp) throw std::invalid_argument("the MTP head runs on the CPU only (--device cpu)");
    if (c_.attn_sinks || c_.attn_out_bias || c_.moe.expert_biases || c_.activation == FfnActivation::SwigluOai)
      throw std::invalid_argument(
          "gpt-oss's attention sinks, biased experts and clamped SwiGLU run on the CPU only for now (--device cpu)");
    if (int(w.layers.size()) != c_.n_layers) throw std::invalid_argument("weights have the wrong layer count");
    if (!w.rope_freq_factors.empty() && w.rope_freq_factors.size() != size_t(c_.rotary_dims() / 2))
      throw std::invalid_argument("rope_freq_factors needs rotary_dims / 2 values");
    ops_->activate();
    const int dim = c_.dim, qd = c_.q_dim(), kv = c_.kv_dim(), hidden = c_.hidden_dim;
    embedding_ = upload(w.token_embedding.to_f32());
    output_norm_ = upload(w.output_norm);
    output_ = matrix(w.output_head(), c_.vocab_size, dim);
    rope_freq_factors_ = upload(w.rope_freq_factors);
    for (int l = 0; l < c_.n_layers; ++l) layers_.push_back(upload_layer(w.layers[size_t(l)], c_.is_sliding_layer(l)));
    // A request may hold blocks past its last token (a verification's drafts): room for one more query.
    max_blocks_ = (o.max_model_len + o.graph_query_len + o.block_size - 1) / o.block_size + 1;
    const int max_graph_seqs = o.graph_batch_sizes.empty() ? 0 : o.graph_batch_sizes.back();
    max_tokens_ = std::max(o.max_num_tokens, max_graph_seqs * o.graph_query_len);
    max_seqs_ = std::max(o.max_num_seqs, max_graph_seqs);
    max_logits_ = std::max(o.max_num_seqs, max_graph_seqs) * o.graph_query_len;  // every token of a verifying row
    max_tokens_ = std::max(max_tokens_, max_logits_);
    const size_t T = size_t(max_tokens_);
    for (Buffer* b : {&x_, &xb_}) *b = ops_->alloc(T * dim * 4);
    for (Buffer* b : {&q_, &attn_}) *b = ops_->alloc(T * qd * 4);
    for (Buffer* b : {&k_, &v_}) *b = ops_->alloc(T * kv * 4);
    if (c_.moe.enabled()) {  // experts in place of the dense FFN: their own scratch
      moe_.emplace(*ops_, MoeShape{c_.moe.routing(), dim, c_.moe.expert_hidden, c_.moe.shared_hidden}, max_tokens_);
      for (int l = 0; l < c_.n_layers; ++l)
        layers_[size_t(l)].moe = moe_->upload(host_experts(w.layers[size_t(l)].experts));
      ffn_out_ = ops_->alloc(T * dim * 4);
    } else {
      for (Buffer* b : {&gate_, &up_, &hid_}) *b = ops_->alloc(T * hidden * 4);
    }
    selected_ = ops_->alloc(size_t(max_logits_) * dim * 4);
    logits_ =
        ops_->alloc(size_t(max_logits_) * c_.vocab_size * 4);  // a graph's head covers all its tokens: <= max_logits_
    compact_ = ops_->alloc(size_t(max_logits_) * c_.vocab_size * 4);
    token_ids_ = ops_->alloc(T * 4), positions_ = ops_->alloc(T * 4), token_seq_ = ops_->alloc(T * 4);
    const size_t G = size_t(layout_.num_groups());  // each KV group has its own slots and tables
    slots_ = ops_->alloc(G * T * 8), logits_rows_ = ops_->alloc(size_t(max_logits_) * 4),
    pick_rows_ = ops_->alloc(size_t(max_logits_) * 4);
    sample_params_ = ops_->alloc(size_t(max_logits_) * sizeof(body::SampleParams)),
    sample_tokens_ = ops_->alloc(size_t(max_logits_) * 4);
    block_tables_ = ops_->alloc(G * max_seqs_ * max_blocks_ * 4);
    const int expert_k = std::max(c_.moe.expert_hidden, c_.moe.shared_hidden);  // the experts' own GEMVs need none
    ops_->reserve_matmul(max_tokens_, std::max({dim, qd, hidden, expert_k}),
                         std::max({c_.vocab_size, dim, qd, hidden, kv, c_.moe.n_experts, expert_k}));
    ops_->reserve_attention(max_tokens_, c_.n_heads, c_.head_dim(), max_blocks_ * o.block_size);
    if (o_.num_blocks == 0) o_.num_blocks = blocks_in_share();
    allocate_kv();
    for (int b : o.graph_batch_sizes) capture(b);
  }

  // Binds this device while the members free their memory (the destroying thread may be on another).
  ~DeviceLlama() override {
    try {
      ops_->activate();
    } catch (...) {  // a device that fails now has nothing to free into anyway
    }
  }

  const LlamaConfig& config() const override { return c_; }
  std::string device_name() const override { return ops_->name(); }
  int num_blocks() const override { return o_.num_blocks; }
  int block_size() const override { return o_.block_size; }
  const KvCacheLayout& kv_layout() const override { return layout_; }
  DeviceStats stats() const override { return stats_; }

  bool samples_on_device() const override { return o_.sample_on_device; }

  bool forward(const ForwardBatch& batch, std::vector<float>& logits, DeviceSampling* sampling = nullptr) override {
    ops_->activate();
    check_batch(batch, sampling,
                {max_tokens_, max_logits_, max_seqs_, max_blocks_, o_.num_blocks, o_.block_size, c_.vocab_size,
                 c_.max_seq_len, layout_.num_groups()});
    const int M = batch.num_tokens(), S = int(batch.logits_indices.size()), V = c_.vocab_size;
    const int seqs = batch.num_seqs();
    const int padded = graph_size(batch, seqs, o_.graph_query_len, o_.graph_batch_sizes);
    ops_->upload(logits_rows_.get(), batch.logits_indices.data(), size_t(S) * 4);
    if (padded > 0) {  // the graph's head covers every token: pick the logits rows out of it
      upload_inputs(batch, seqs, padded);
      ops_->replay(graphs_.at(padded));
      ops_->gather_rows(logits_.template get<float>(), logits_rows_.template get<int>(), S, V,
                        compact_.template get<float>());
      deliver(compact_.template get<float>(), logits_.template get<float>(), S, sampling, logits);
      return true;
    }
    upload_inputs(batch, seqs, 0);
    run_layers(M, batch.max_blocks_per_seq, seqs);
    ops_->gather_rows(x_.template get<float>(), logits_rows_.template get<int>(), S, c_.dim,
                      selected_.template get<float>());
    head(selected_.template get<float>(), S);
    deliver(logits_.template get<float>(), compact_.template get<float>(), S, sampling, logits);
    return false;
  }

  void copy_block(int src, int dst) override {
    ops_->activate();
    check_ids(std::vector<int>{src, dst});
    const size_t block = size_t(o_.block_size) * c_.kv_dim() * kv_dtype_bytes(o_.kv_dtype);
    for (size_t l = 0; l < keys_.size(); ++l)
      for (Buffer* part : {&keys_[l], &values_[l]})
        ops_->copy(part->template get<char>() + dst * block, part->template get<char>() + src * block, block);
  }

  // KvCache::export_blocks's layout: per slot, the keys of every block, then the values (through staging).
  std::vector<uint8_t> export_blocks(std::span<const int> ids) const override {
    std::unique_ptr<KvStaging> staged = stage_blocks(ids);
    std::vector<uint8_t> out(size_t(staged->size()) * 4);
    ops_->download(out.data(), staged->data(), out.size());
    return out;
  }

  void import_blocks(std::span<const int> ids, std::span<const uint8_t> data) override {
    if (int64_t(data.size()) != bytes_per_block() * int64_t(ids.size()))
      throw std::invalid_argument("KV data of " + std::to_string(data.size()) + " bytes for " +
                                  std::to_string(ids.size()) + " blocks of " + std::to_string(bytes_per_block()) +
                                  " (" + kv_dtype_name(o_.kv_dtype) + ")");
    std::unique_ptr<KvStaging> staged = new_staging(int64_t(data.size()) / 4);
    ops_->upload(staged->data(), data.data(), data.size());
    unstage_blocks(*staged, ids);
  }

  // Link transfers (NCCL) read and write device staging in export_blocks's layout; the copies are on the
  // pass stream, and staging is complete (synchronized) before a link's own stream touches it.
  std::unique_ptr<KvStaging> stage_blocks(std::span<const int> ids) const override {
    ops_->activate();
    check_ids(ids);
    std::unique_ptr<KvStaging> staged = new_staging(bytes_per_block() / 4 * int64_t(ids.size()));
    move_blocks(ids, staged->data(), true);
    ops_->synchronize();
    return staged;
  }
  std::unique_ptr<KvStaging> new_staging(int64_t words) const override {
    ops_->activate();
    return staging_.take(words, [this](size_t bytes) { return ops_->alloc_staging(bytes); });
  }
  void unstage_blocks(KvStaging& staged, std::span<const int> ids) override {
    ops_->activate();
    check_ids(ids);
    if (staged.size() * 4 != bytes_per_block() * int64_t(ids.size()))
      throw std::invalid_argument("KV data of " + std::to_string(staged.size() * 4) + " bytes for " +
                                  std::to_string(ids.size()) + " blocks of " + std::to_string(bytes_per_block()));
    move_blocks(ids, staged.data(), false);
    ops_->synchronize();  // the caller frees the staging next
  }

  // The device pointers of one layer's KV: its slot of the blocks.
  cpu::KvLayerView layer(int l) const {
    const size_t slot = size_t(layout_.slot_of_layer[size_t(l)]);
    return {keys_[slot].get(), values_[slot].get(), o_.block_size, c_.kv_dim(), o_.kv_dtype};
  }
  KvDtype kv_dtype() const override { return o_.kv_dtype; }
  int64_t bytes_per_block() const {
    return int64_t(2) * layout_.slots_per_block * o_.block_size * c_.kv_dim() * kv_dtype_bytes(o_.kv_dtype);
  }

 private:
  struct Layer {
    Buffer attn_norm, ffn_norm;
    Matrix wq, wk, wv, wo, w_gate, w_up, w_down;  // w_gate, w_up, w_down: a dense FFN's
    std::optional<typename DeviceMoe<Ops>::Layer> moe;
    Buffer bq, bk, bv;                     // qkv_bias
    Buffer q_norm, k_norm;                 // qk_norm: per head
    Buffer post_attn_norm, post_ffn_norm;  // post_norms
    bool sliding = false;                  // a local layer: its window and its own RoPE
  };

  // The layer's weights on the device; the optional ones as the config asks, checked as the CPU model checks them.
  Layer upload_layer(const LayerWeights& w, bool sliding) {
    const int dim = c_.dim, qd = c_.q_dim(), kv = c_.kv_dim(), hidden = c_.hidden_dim, hd = c_.head_dim();
    auto need = [&](const std::vector<float>& v, int n, const char* what) {
      if (v.size() != size_t(n))
        throw std::invalid_argument(std::string("layer weights: ") + what + " has the wrong size");
      return upload(v);
    };
    Layer L{upload(w.attn_norm),   upload(w.ffn_norm),    matrix(w.wq, qd, dim),
            matrix(w.wk, kv, dim), matrix(w.wv, kv, dim), matrix(w.wo, dim, qd)};
    if (!c_.moe.enabled())
      L.w_gate = matrix(w.w_gate, hidden, dim), L.w_up = matrix(w.w_up, hidden, dim),
      L.w_down = matrix(w.w_down, dim, hidden);
    if (c_.qkv_bias) L.bq = need(w.bq, qd, "bq"), L.bk = need(w.bk, kv, "bk"), L.bv = need(w.bv, kv, "bv");
    if (c_.qk_norm) L.q_norm = need(w.q_norm, hd, "q_norm"), L.k_norm = need(w.k_norm, hd, "k_norm");
    if (c_.post_norms)
      L.post_attn_norm = need(w.post_attn_norm, dim, "post_attn_norm"),
      L.post_ffn_norm = need(w.post_ffn_norm, dim, "post_ffn_norm");
    L.sliding = sliding;
    return L;
  }

  // Device-to-device copies between the KV blocks and staging (to_staging) in export_blocks's layout.
  void move_blocks(std::span<const int> ids, float* staging_words, bool to_staging) const {
    const size_t block = size_t(o_.block_size) * c_.kv_dim() * kv_dtype_bytes(o_.kv_dtype);
    char* staging = reinterpret_cast<char*>(staging_words);
    for (size_t l = 0; l < keys_.size(); ++l)
      for (const Buffer* part : {&keys_[l], &values_[l]})
        for (int b : ids) {
          char* kv = part->template get<char>() + b * block;
          ops_->copy(to_staging ? staging : kv, to_staging ? kv : staging, block);
          staging += block;
        }
  }

  // A layer's experts as host floats, each kind stacked by expert (decoded from the file's types).
  static HostExperts host_experts(const ExpertWeights& w) {
    HostExperts h;
    auto stack = [](const std::vector<WeightMatrix>& parts) {
      std::vector<float> out;
      for (const WeightMatrix& p : parts) {
        const std::vector<float> v = p.to_f32();
        out.insert(out.end(), v.begin(), v.end());
      }
      return out;
    };
    h.router = w.router.to_f32(), h.gate = stack(w.gate), h.up = stack(w.up), h.down = stack(w.down);
    h.shared_gate_inp = w.shared_gate;
    if (!w.shared_w_gate.empty())
      h.shared_gate = w.shared_w_gate.to_f32(), h.shared_up = w.shared_w_up.to_f32(),
      h.shared_down = w.shared_w_down.to_f32();
    return h;
  }

  // Quantized weights are decoded at load, then stored in the device's weight type.
  Matrix matrix(const WeightMatrix& w, int N, int K) {
    if (w.size() != size_t(N) * K) throw std::invalid_argument("a weight matrix has the wrong size");
    return w.is_f32() ? ops_->upload_matrix(w.data(), N, K) : ops_->upload_matrix(w.to_f32().data(), N, K);
  }
  Buffer upload(const std::vector<float>& v) {
    Buffer b = ops_->alloc(v.size() * 4);
    if (!v.empty()) ops_->upload(b.get(), v.data(), v.size() * 4);  // an absent tensor (no rope_freqs) has no memory
    return b;
  }
  Buffer zeros(size_t floats) {
    Buffer b = ops_->alloc(floats * 4);
    ops_->zero(b.get(), floats * 4);
    return b;
  }

  void allocate_kv() {
    const size_t layer_words =
        size_t(o_.num_blocks) * o_.block_size * c_.kv_dim() * kv_dtype_bytes(o_.kv_dtype) / 4 + 1;
    keys_.clear(), values_.clear();  // zero bits are 0.0 in every KV dtype
    for (int s = 0; s < layout_.slots_per_block; ++s)
      keys_.push_back(zeros(layer_words)), values_.push_back(zeros(layer_words));
  }

  // The KV blocks of num_blocks 0: the instance's share of the device's memory, less what is in use after
  // one pass over a one-block cache (lazily loaded kernels, the attention's local memory and library state
  // take theirs then), what the graphs will hold (measured by capturing them once: their memory is
  // allocated at instantiation, after the KV they point into) and the staging kept for KV transfers.
  int blocks_in_share() {
    o_.num_blocks = 1;
    allocate_kv();
    filler_pass(1)();
    int64_t graph_bytes = 0;
    if (!o_.graph_batch_sizes.empty()) {
      for (int b : o_.graph_batch_sizes) capture(b);
      const int64_t with_graphs = in_use();
      graphs_.clear();
      graph_bytes = with_graphs - in_use();
    }
    keys_.clear(), values_.clear();
    const DeviceMemory m = ops_->memory();
    const int64_t per_block = bytes_per_block();
    const double budget = o_.gpu_memory_utilization * double(m.total) - double(m.total - m.free) - double(graph_bytes) -
                          double(o_.staging_bytes);
    if (budget < double(per_block))
      throw std::invalid_argument(
          "--gpu-memory-utilization " + std::to_string(o_.gpu_memory_utilization) +
          " leaves no room for KV blocks on " + ops_->name() + " (" + std::to_string((m.total - m.free) >> 20) +
          " MiB in use, graphs " + std::to_string(graph_bytes >> 20) + " MiB, staging " +
          std::to_string(o_.staging_bytes >> 20) + " MiB, of " + std::to_string(m.total >> 20) + " MiB)");
    return int(std::min<double>(budget / double(per_block), double(1 << 24)));
  }
  int64_t in_use() const {
    const DeviceMemory m = ops_->memory();
    return m.total - m.free;
  }

  void check_ids(std::span<const int> ids) const {
    for (int b : ids)
      if (b < 0 || b >= o_.num_blocks)
        throw std::out_of_range("KV block " + std::to_string(b) + " outside the cache's " +
                                std::to_string(o_.num_blocks));
  }

  // The S logits rows (on the device, in `all`) to the host, except those `sampling` names: sampled here,
  // through `spare` (a buffer as large, free by now), with only their tokens coming back.
  void deliver(const float* all, float* spare, int S, DeviceSampling* sampling, std::vector<float>& logits) {
    const int V = c_.vocab_size;
    logits.resize(size_t(S) * V);
    if (!sampling || sampling->empty()) return ops_->download(logits.data(), all, logits.size() * 4);
    const int n = int(sampling->logits_rows.size());
    ops_->upload(pick_rows_.get(), sampling->logits_rows.data(), size_t(n) * 4);
    ops_->upload(sample_params_.get(), sampling->params.data(), size_t(n) * sizeof(body::SampleParams));
    ops_->gather_rows(all, pick_rows_.template get<int>(), n, V, spare);
    ops_->sample(spare, V, sample_params_.template get<body::SampleParams>(), n, sample_tokens_.template get<int>());
    sampling->tokens.resize(size_t(n));
    ops_->download(sampling->tokens.data(), sample_tokens_.get(), size_t(n) * 4);
    stats_.rows_sampled_on_device += n;
    host_rows_.clear();
    std::vector<bool> on_device(size_t(S), false);
    for (int r : sampling->logits_rows) on_device[size_t(r)] = true;
    for (int r = 0; r < S; ++r)
      if (!on_device[size_t(r)]) host_rows_.push_back(r);
    if (host_rows_.empty()) return;
    const int h = int(host_rows_.size());
    ops_->upload(pick_rows_.get(), host_rows_.data(), size_t(h) * 4);
    ops_->gather_rows(all, pick_rows_.template get<int>(), h, V, spare);
    staged_logits_.resize(size_t(h) * V);
    ops_->download(staged_logits_.data(), spare, staged_logits_.size() * 4);
    for (int j = 0; j < h; ++j)
      std::copy_n(staged_logits_.begin() + int64_t(j) * V, V, logits.begin() + int64_t(host_rows_[size_t(j)]) * V);
  }

  // Eager: the batch as it is. Graph (padded > 0): padded to that graph's shape (device_batch.hpp).
  void upload_inputs(const ForwardBatch& batch, int seqs, int padded) {
    if (padded > 0) pad_for_graph(batch, seqs, padded, o_.graph_query_len, max_blocks_, padded_);
    const ForwardBatch& b = padded > 0 ? padded_ : batch;
    const size_t M = size_t(b.num_tokens());
    ops_->upload(token_ids_.get(), b.token_ids.data(), M * 4);
    ops_->upload(positions_.get(), b.positions.data(), M * 4);
    ops_->upload(token_seq_.get(), b.token_seq.data(), M * 4);
    ops_->upload(slots_.get(), b.slot_mapping.data(), b.slot_mapping.size() * 8);  // [group][token]
    ops_->upload(block_tables_.get(), b.block_tables.data(), b.block_tables.size() * 4);
  }

  // Uploads `seqs` filler sequences of graph_query_len tokens (position 0, writing no KV) as the graph of that
  // size reads them, and returns that graph's pass: everything after the upload, the head over every token.
  std::function<void()> filler_pass(int seqs) {
    const int M = seqs * o_.graph_query_len;
    const int G = layout_.num_groups();
    ForwardBatch filler;
    filler.num_kv_groups = G;
    filler.token_ids.assign(size_t(M), 0), filler.positions.assign(size_t(M), 0),
        filler.slot_mapping.assign(size_t(G) * M, -1);
    for (int i = 0; i < M; ++i) filler.token_seq.push_back(i / o_.graph_query_len);
    filler.max_blocks_per_seq = 1, filler.block_tables.assign(size_t(G) * seqs, 0);
    upload_inputs(filler, seqs, seqs);
    return [this, M, seqs] {
      run_layers(M, max_blocks_, seqs);
      head(x_.template get<float>(), M);
    };
  }

  // Captures the pass of `seqs` padded sequences into a graph, after one eager run (lazy library set-up is no
  // capture's business); replays read the inputs from the same buffers.
  void capture(int seqs) {
    const std::function<void()> pass = filler_pass(seqs);
    pass();
    graphs_.emplace(seqs, ops_->capture(pass));
  }

  // seqs: the block tables' rows per KV group (group g's tables follow the groups before it, as its slots do).
  void run_layers(int M, int max_blocks_per_seq, int seqs) {
    const int dim = c_.dim, hidden = c_.hidden_dim, hd = c_.head_dim();
    float *x = x_.template get<float>(), *xb = xb_.template get<float>(), *q = q_.template get<float>();
    float *k = k_.template get<float>(), *v = v_.template get<float>(), *attn = attn_.template get<float>();
    float *gate = gate_.template get<float>(), *up = up_.template get<float>(), *hid = hid_.template get<float>();
    const int* positions = positions_.template get<int>();
    cpu::AttentionMetadata meta{M, positions, token_seq_.template get<int>(), block_tables_.template get<int>(),
                                max_blocks_per_seq};
    ops_->embedding(embedding_.template get<float>(), token_ids_.template get<int>(), M, dim, x);
    if (c_.scale_embeddings) ops_->scale(x, std::sqrt(float(dim)), int64_t(M) * dim);
    for (int l = 0; l < c_.n_layers; ++l) {
      const Layer& L = layers_[size_t(l)];
      const cpu::KvLayerView kvl = layer(l);
      const int group = layout_.group_of_layer[size_t(l)];
      meta.block_tables = block_tables_.template get<int>() + int64_t(group) * seqs * max_blocks_per_seq;
      ops_->rmsnorm(x, L.attn_norm.template get<float>(), xb, M, dim, c_.norm_eps);
      ops_->matmul(xb, L.wq, q, M);
      ops_->matmul(xb, L.wk, k, M);
      ops_->matmul(xb, L.wv, v, M);
      if (c_.qkv_bias) {
        ops_->add_bias(q, L.bq.template get<float>(), M, c_.q_dim());
        ops_->add_bias(k, L.bk.template get<float>(), M, c_.kv_dim());
        ops_->add_bias(v, L.bv.template get<float>(), M, c_.kv_dim());
      }
      if (c_.qk_norm) {  // per head: rows of head_dim
        ops_->rmsnorm(q, L.q_norm.template get<float>(), q, M * c_.n_heads, hd, c_.norm_eps);
        ops_->rmsnorm(k, L.k_norm.template get<float>(), k, M * c_.n_kv_heads, hd, c_.norm_eps);
      }
      const cpu::RopeSpec rope = rope_spec(L);
      ops_->rope(q, positions, M, c_.n_heads, hd, rope);
      ops_->rope(k, positions, M, c_.n_kv_heads, hd, rope);
      ops_->kv_write(kvl, k, v, slots_.template get<int64_t>() + int64_t(group) * M, M);
      const cpu::AttentionSpec attention{c_.query_scale, c_.attn_softcap, L.sliding ? c_.sliding_window : 0};
      ops_->paged_attention(q, kvl, meta, c_.n_heads, c_.n_kv_heads, hd, attn, attention);
      ops_->matmul(attn, L.wo, xb, M);
      if (c_.post_norms) ops_->rmsnorm(xb, L.post_attn_norm.template get<float>(), xb, M, dim, c_.norm_eps);
      ops_->add(x, xb, int64_t(M) * dim);
      ops_->rmsnorm(x, L.ffn_norm.template get<float>(), xb, M, dim, c_.norm_eps);
      if (L.moe) {
        moe_->run(*L.moe, xb, ffn_out_.template get<float>(), M);
        ops_->add(x, ffn_out_.template get<float>(), int64_t(M) * dim);
        continue;
      }
      ops_->matmul(xb, L.w_gate, gate, M);
      ops_->matmul(xb, L.w_up, up, M);
      if (c_.activation == FfnActivation::GeluTanh)
        ops_->geglu(gate, up, hid, int64_t(M) * hidden);
      else
        ops_->swiglu(gate, up, hid, int64_t(M) * hidden);
      ops_->matmul(hid, L.w_down, xb, M);
      if (c_.post_norms) ops_->rmsnorm(xb, L.post_ffn_norm.template get<float>(), xb, M, dim, c_.norm_eps);
      ops_->add(x, xb, int64_t(M) * dim);
    }
  }

  // The layer's rotation, as the CPU forward picks it: local layers have their own base and scaling.
  cpu::RopeSpec rope_spec(const Layer& L) const {
    const RopeConfig rope = L.sliding ? c_.local_rope : RopeConfig{c_.rope_theta, c_.rope_freq_scale};
    return parley::rope_spec(c_, rope, rope_freq_factors_.bytes() ? rope_freq_factors_.template get<float>() : nullptr);
  }

  // The final norm and the head over `rows` hidden states into logits_.
  void head(const float* rows_in, int rows) {
    float* normed = xb_.template get<float>();  // free once the layers ran
    ops_->rmsnorm(rows_in, output_norm_.template get<float>(), normed, rows, c_.dim, c_.norm_eps);
    ops_->matmul(normed, output_, logits_.template get<float>(), rows);
    if (c_.final_softcap > 0.0f)
      ops_->softcap(logits_.template get<float>(), c_.final_softcap, int64_t(rows) * c_.vocab_size);
  }

  std::unique_ptr<Ops> ops_;  // first: every buffer below is freed before it
  LlamaConfig c_;
  DeviceLlamaOptions o_;
  KvCacheLayout layout_;  // which layers share which block table; a block holds slots_per_block layers
  int max_blocks_ = 0, max_tokens_ = 0, max_seqs_ = 0, max_logits_ = 0;
  Buffer embedding_, output_norm_, rope_freq_factors_;
  Matrix output_;
  std::vector<Layer> layers_;
  std::optional<DeviceMoe<Ops>> moe_;  // the experts' scratch, when the model has them
  Buffer ffn_out_;                     // the experts' output
  std::vector<Buffer> keys_, values_;  // per slot: [num_blocks * block_size][kv_dim]
  // Activations, sized for the largest pass.
  Buffer x_, xb_, q_, k_, v_, attn_, gate_, up_, hid_, selected_, logits_, compact_;
  // Inputs: the graphs read these buffers, so every pass uploads into them.
  Buffer token_ids_, positions_, token_seq_, slots_, block_tables_, logits_rows_;
  Buffer pick_rows_, sample_params_, sample_tokens_;  // device sampling
  std::vector<int> host_rows_;
  std::vector<float> staged_logits_;
  ForwardBatch padded_;                        // a graph's inputs, reused
  std::map<int, typename Ops::Graph> graphs_;  // by padded sequence count
  DeviceStats stats_;
  mutable StagingPool<Buffer> staging_{size_t(o_.staging_bytes)};  // KV transfers' buffers, reused
};

}  // namespace parley::cuda

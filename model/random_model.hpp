// Deterministic random Llama models and a synthetic SentencePiece vocabulary, for tests and benches.
#pragma once
#include <cstdint>
#include <optional>

#include "model/convert.hpp"
#include "model/model_file.hpp"

namespace parley {

// The model `parley generate` runs when no file is given: dim 64, hidden 192, 4 layers, 8 heads,
// 4 KV heads, vocab 512, context 1024, Adjacent RoPE, tied output.
LlamaConfig builtin_model_config();
// The llama2.c "stories110M" shape: dim 768, hidden 2048, 12 layers, 12 heads (no GQA), vocab
// 32000, context 2048, output head tied to the embedding (about 110M parameters).
LlamaConfig bench_110m_config();

// Weights from a hand-written splitmix64 stream (identical on every platform and standard library):
// matrices uniform in +-1/sqrt(in_features) so each matmul roughly keeps the activation scale
// (the embedding uses dim as its in_features, as it doubles as the tied output head); norms 1.0.
// vocab is the one given (its size must be cfg.vocab_size) or make_synthetic_vocab(cfg.vocab_size);
// name is "random-<seed>". with_mtp adds a multi-token-prediction head; the config's optional tensors (biases,
// QK-norms, post-norms) and with_rope_factors' RoPE frequency factors are drawn after every other tensor.
// Throws std::invalid_argument for an invalid config or a vocab_size below 354.
ModelFile make_random_model(const LlamaConfig& cfg, uint64_t seed, bool with_mtp = false,
                            std::optional<Vocab> vocab = std::nullopt, bool with_rope_factors = false);

// A model too large to draw whole: cfg, its vocabulary (as make_random_model's) and empty layers, for
// write_drawn_gguf with random_tensor_draw.
ModelFile random_model_outline(const LlamaConfig& cfg, uint64_t seed, std::optional<Vocab> vocab = std::nullopt);
// Each tensor drawn from its own splitmix64 stream (the seed and the tensor's name), in make_random_model's ranges,
// on every core; the values do not depend on the order tensors are drawn in or on the core count.
TensorDraw random_tensor_draw(const LlamaConfig& cfg, uint64_t seed);

// <unk>, <s>, </s>, the 256 byte tokens <0x00>..<0xFF>, the 95 printable ASCII characters, then
// unique multi-character pieces (" "+letter, common English words and pieces, letter pairs and
// triples, with and without a leading space) with strictly decreasing scores. Every piece's
// prefix one character shorter comes earlier (a higher score), giving BPE a merge path to it. Past the
// generator's ~37,000 pieces come unused placeholders "[PAD<n>]" (never produced by encoding).
// Throws std::invalid_argument if vocab_size < 259 + 95.
Vocab make_synthetic_vocab(int vocab_size);

}  // namespace parley

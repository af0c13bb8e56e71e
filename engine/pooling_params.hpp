// Per-request pooling parameters (vLLM's PoolingParams, vllm/pooling_params.py): a request that carries them
// is prefilled and never decodes; its output is one vector made of its prompt's final-normed hidden states (a
// score request's: one float, a reranker's head over them).
#pragma once

namespace parley {

// What a pooling request wants: an embedding, or a reranker's score (vLLM's "embed" and "score" tasks).
enum class PoolingTask { Embed, Score };

struct PoolingParams {
  int dimensions = 0;     // > 0: the first `dimensions` values only (Matryoshka), cut before normalizing
  bool normalize = true;  // divided by its L2 norm (vLLM's default for embeddings, llama.cpp's embd_normalize 2)
  PoolingTask task = PoolingTask::Embed;  // Score: the output is one float, the head's output[0]
  bool operator==(const PoolingParams&) const = default;
};

}  // namespace parley

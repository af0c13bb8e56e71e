// llama.cpp (node-llama-cpp 3.21.1, CPU) as an oracle for teacher-forced next-token log-probabilities:
// llamaPromptLogprobs(gguf, ids) gives, for each position i >= 1, the distribution of ids[i] given ids[0..i).
//
// What node-llama-cpp returns, read from tests/e2e/node_modules/node-llama-cpp:
// - controlledEvaluate (dist/evaluator/LlamaContext/LlamaContext.js:1239-1310) decodes the ids as given (it adds
//   no BOS) and, for each item with generateNext.probabilities, calls the addon's sampleToken with a sampler
//   configured by _resolveSamplerConfig (LlamaContext.js:1794): with no generateNext.options, temperature = 0,
//   no repeat/DRY penalty, no token bias, no XTC. Its topK = 40 / topP = 0.95 defaults are not used then: at
//   temperature 0 the chain is just the greedy sampler (llama/addon/AddonSampler.cpp:125-131, 294-296), which
//   selects the argmax and leaves the candidates alone.
// - The candidates are the raw logits of the whole vocabulary (AddonSampler.cpp:246-256, setTokenCandidates;
//   no backend sampling is configured), so `probabilities` has n_vocab entries.
// - sampleToken (llama/addon/AddonContext.cpp:236-291) sorts them by logit and takes a float32 softmax at
//   temperature 1 (expf(logit - max) / sum); reviveTokenProbabilities (LlamaContext.js:1957) makes a Map
//   id -> probability in descending order. So logprob = log(p) of a float32 probability: precise for likely
//   tokens, -Infinity where p underflows to 0 (logits more than ~100 below the top one).
// - Context options (dist/evaluator/LlamaContext/types.d.ts): experimentalKvCacheKeyType (line 109) and
//   experimentalKvCacheValueType (line 124) take "F32"; flashAttention (line 55) false disables it
//   (AddonContext.cpp:396-405, LLAMA_FLASH_ATTN_TYPE_DISABLED); batchSize (line 45) sets n_batch = n_ubatch
//   (AddonContext.cpp:380-381), so the whole sequence is one ubatch.
// - With gpu: false the default thread count is max(4, cpuMathCores) (dist/bindings/Llama.js:115-116); on a
//   2-core machine 4 threads made a 256-id decode of stories260K take 2.9 s instead of 0.1 s, so `threads`
//   defaults to cpuMathCores here.
import assert from 'node:assert/strict';

const { getLlama } = await import('node-llama-cpp');

let llamaPromise = null;
const models = new Map();  // gguf path -> Promise<LlamaModel>

function llamaInstance() {
  llamaPromise ??= getLlama({ gpu: false, build: 'never', skipDownload: true, logLevel: 'error' });
  return llamaPromise;
}

function loadModel(ggufPath) {
  if (!models.has(ggufPath)) models.set(ggufPath, llamaInstance().then((llama) => llama.loadModel({ modelPath: ggufPath })));
  return models.get(ggufPath);
}

/**
 * Teacher-forced next-token distributions of `tokenIds` (numbers, exactly the sequence to evaluate: include BOS
 * yourself if the model expects it). Returns one entry per position: null for position 0, then
 * {top: [{id, logprob}] (topK, descending), nextLogprob} where nextLogprob is the logprob of tokenIds[i]
 * (null if it is not in the returned map). contextSize: KV cells (at least tokenIds.length); threads: CPU threads.
 */
export async function llamaPromptLogprobs(ggufPath, tokenIds, { topK = 5, contextSize = tokenIds.length, threads } = {}) {
  assert.ok(tokenIds.length >= 1 && tokenIds.every(Number.isInteger), 'tokenIds must be a non-empty array of integer ids');
  const model = await loadModel(ggufPath);
  const context = await model.createContext({
    threads: threads ?? (await llamaInstance()).cpuMathCores,
    contextSize,
    batchSize: tokenIds.length,
    flashAttention: false,
    experimentalKvCacheKeyType: 'F32',
    experimentalKvCacheValueType: 'F32',
  });
  try {
    const sequence = context.getSequence();
    // Without room for every id, node-llama-cpp would shift the context (drop early tokens) silently.
    assert.ok(tokenIds.length <= sequence.contextSize, `${tokenIds.length} ids exceed the context of ${sequence.contextSize}`);
    const input = tokenIds.map((id, i) => (i + 1 < tokenIds.length ? [id, { generateNext: { probabilities: true } }] : id));
    const out = await sequence.controlledEvaluate(input);
    return tokenIds.map((id, i) => {
      if (i === 0) return null;
      const probs = out[i - 1].next.probabilities;
      const top = [];
      for (const [tok, p] of probs) {
        if (top.length === topK) break;
        top.push({ id: tok, logprob: Math.log(p) });
      }
      return { top, nextLogprob: probs.has(id) ? Math.log(probs.get(id)) : null };
    });
  } finally {
    await context.dispose();
  }
}

/**
 * llama.cpp's pooled embedding of `tokenIds` through node-llama-cpp's embedding context (LlamaEmbeddingContext,
 * dist/evaluator/LlamaEmbeddingContext.js): the pooling is the file's {arch}.pooling_type; the vector is
 * llama_get_embeddings_seq's as it is (llama/addon/AddonContext.cpp GetEmbedding: not normalized). getEmbeddingFor
 * prepends BOS and appends EOS where the vocabulary asks (_prepareInput) unless the ids already start or end with
 * them: `embeddingInput` gives the ids it evaluates. batchSize = contextSize: the whole input is one ubatch.
 */
export async function llamaEmbedding(ggufPath, tokenIds, { contextSize = 512, threads } = {}) {
  const model = await loadModel(ggufPath);
  const context = await model.createEmbeddingContext({
    contextSize, batchSize: contextSize, threads: threads ?? (await llamaInstance()).cpuMathCores,
  });
  try {
    return Array.from((await context.getEmbeddingFor(tokenIds)).vector);
  } finally {
    await context.dispose();
  }
}

/** The ids node-llama-cpp's embedding context evaluates for `tokenIds`: with the model's BOS and EOS where it adds them. */
export async function embeddingInput(ggufPath, tokenIds) {
  const { tokens } = await loadModel(ggufPath);
  const ids = [...tokenIds];
  if (tokens.shouldPrependBosToken && tokens.bos != null && ids[0] !== tokens.bos) ids.unshift(tokens.bos);
  if (tokens.shouldAppendEosToken && tokens.eos != null && ids.at(-1) !== tokens.eos) ids.push(tokens.eos);
  return ids;
}

/** Disposes every loaded model and the llama.cpp instance (the next call loads them again). */
export async function disposeLlamaOracle() {
  const loaded = [...models.values()];
  models.clear();
  for (const m of loaded) await (await m).dispose();
  if (llamaPromise) await (await llamaPromise).dispose();
  llamaPromise = null;
}

/**
 * llama.cpp's reranking score of a query and a document (token ids) through node-llama-cpp's ranking context
 * (dist/evaluator/LlamaRankingContext.js): without a tokenizer.chat_template.rerank it evaluates
 * [BOS] query [EOS] [SEP] document [EOS] (each where the vocabulary has it; `rankingInput` gives those ids) and returns
 * the RANK pooling's output[0], as is for qwen3 (softmaxed by llama.cpp) and through a sigmoid otherwise.
 */
export async function llamaRank(ggufPath, queryIds, documentIds, { contextSize = 512, threads } = {}) {
  const model = await loadModel(ggufPath);
  const context = await model.createRankingContext({
    contextSize, batchSize: contextSize, threads: threads ?? (await llamaInstance()).cpuMathCores,
  });
  try {
    return await context.rank(queryIds, documentIds);
  } finally {
    await context.dispose();
  }
}

/** The ids node-llama-cpp's ranking context evaluates for a query and a document. */
export async function rankingInput(ggufPath, queryIds, documentIds) {
  const { tokens } = await loadModel(ggufPath);
  const some = (t) => (t == null ? [] : [t]);
  return [...some(tokens.bos), ...queryIds, ...some(tokens.eos), ...some(tokens.sep), ...documentIds, ...some(tokens.eos)];
}

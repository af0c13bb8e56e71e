#!/usr/bin/env node
// Embedding throughput, Parley against llama.cpp on the same GGUF in the same run.
//
// Usage: node bench/peer/embed_peer.mjs --parley build/parley --model PATH.gguf --threads T
//          [--inputs 512] [--tokens 128] [--requests 64]
//
// Method (token ids only: tokenization is never measured). Input i = ids 100 + ((i * 7 + k) % 1000), k < tokens;
// node-llama-cpp's embedding context adds BOS/EOS where the vocabulary asks, and Parley is sent the same ids.
//  * Parley: `parley serve` with --threads T; the inputs go to POST /v1/embeddings in requests of --requests
//    inputs each, all sent at once (the scheduler batches them); timed from the first send to the last answer,
//    after one untimed warm-up request. One warm-up, one timed run.
//  * llama.cpp (node-llama-cpp 3.21.1, prebuilt CPU binaries): one embedding context (contextSize = batchSize =
//    the input's length rounded up), getEmbeddingFor per input, one after the other (the context evaluates one
//    sequence at a time); one untimed warm-up input.
// Prints a table (embeddings/s, tokens/s, the ratio) and a JSON line; the first input's two vectors must agree
// (cosine distance printed) or the numbers mean nothing.
import { spawn } from "node:child_process";
import { parseArgs } from "node:util";
import { getLlama, LlamaLogLevel } from "node-llama-cpp";

const { values } = parseArgs({
  options: {
    parley: { type: "string" }, model: { type: "string" }, threads: { type: "string" },
    inputs: { type: "string", default: "512" }, tokens: { type: "string", default: "128" },
    requests: { type: "string", default: "64" },
  },
});
if (!values.parley || !values.model || !values.threads) {
  console.error("usage: node bench/peer/embed_peer.mjs --parley build/parley --model PATH.gguf --threads T " +
                "[--inputs 512] [--tokens 128] [--requests 64]");
  process.exit(2);
}
const threads = Number(values.threads), N = Number(values.inputs), L = Number(values.tokens);
const perRequest = Number(values.requests);
const now = () => Number(process.hrtime.bigint()) / 1e9;
const inputOf = (i) => Array.from({ length: L }, (_, k) => 100 + ((i * 7 + k) % 1000));
const inputs = Array.from({ length: N }, (_, i) => inputOf(i));

function cosineDistance(a, b) {
  let dot = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; ++i) dot += a[i] * b[i], na += a[i] * a[i], nb += b[i] * b[i];
  return 1 - dot / Math.sqrt(na * nb);
}

// llama.cpp first (its evaluated ids, with BOS/EOS, are what Parley is sent).
const llama = await getLlama({ gpu: false, build: "never", maxThreads: threads, logLevel: LlamaLogLevel.error,
                               progressLogs: false });
const model = await llama.loadModel({ modelPath: values.model, gpuLayers: 0 });
const ctxSize = Math.ceil((L + 2) / 64) * 64;
const context = await model.createEmbeddingContext({ contextSize: ctxSize, batchSize: ctxSize,
                                                      threads: { ideal: threads, min: threads } });
await context.getEmbeddingFor(inputOf(N));  // warm-up
let t0 = now();
const theirs = [];
for (const [i, ids] of inputs.entries()) {
  const v = await context.getEmbeddingFor(ids);
  if (i === 0) theirs.push(Array.from(v.vector));
  if ((i + 1) % 64 === 0) process.stderr.write(`\rllama.cpp: ${i + 1}/${N} inputs`);
}
const llamaSeconds = now() - t0;
process.stderr.write("\n");
const { bos, eos, shouldPrependBosToken, shouldAppendEosToken } = model.tokens;
const evaluated = (ids) => {  // as node-llama-cpp's _prepareInput
  const out = [...ids];
  if (shouldPrependBosToken && bos != null && out[0] !== bos) out.unshift(bos);
  if (shouldAppendEosToken && eos != null && out.at(-1) !== eos) out.push(eos);
  return out;
};
await context.dispose();
await model.dispose();

// Parley.
const server = spawn(values.parley, ["serve", "--model", values.model, "--port", "0", "--threads", String(threads),
                                     "--log-level", "info", "--max-num-seqs", "256"], { stdio: ["ignore", "pipe", "pipe"] });
let log = "";
const base = await new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error("parley did not start:\n" + log)), 120000);
  const watch = (d) => {
    log += d;
    const m = log.match(/on (http:\/\/127\.0\.0\.1:\d+)/);
    if (m) clearTimeout(timer), resolve(m[1]);
  };
  server.stdout.on("data", watch), server.stderr.on("data", watch);
});
async function embed(batch) {
  const r = await fetch(`${base}/v1/embeddings`, { method: "POST", headers: { "content-type": "application/json" },
                                                   body: JSON.stringify({ input: batch, normalize: false }) });
  if (r.status !== 200) throw new Error(`parley: ${r.status} ${await r.text()}`);
  return (await r.json()).data.map((d) => d.embedding);
}
await embed([evaluated(inputOf(N))]);  // warm-up
t0 = now();
const batches = [];
for (let i = 0; i < N; i += perRequest) batches.push(inputs.slice(i, i + perRequest).map(evaluated));
const answers = await Promise.all(batches.map(embed));
const parleySeconds = now() - t0;
server.kill("SIGTERM");
const distance = cosineDistance(answers[0][0], theirs[0]);

const row = (name, s) => `| ${name} | ${(N / s).toFixed(1)} | ${(N * L / s).toFixed(0)} | ${s.toFixed(2)} |`;
console.log(`\n${N} inputs of ${L} tokens (+ BOS/EOS as the vocabulary adds), ${threads} threads, ${values.model}`);
console.log("| engine | embeddings/s | tokens/s | seconds |\n|---|---|---|---|");
console.log(row("Parley", parleySeconds));
console.log(row("llama.cpp (node-llama-cpp 3.21.1)", llamaSeconds));
console.log(`\nParley / llama.cpp: ${(llamaSeconds / parleySeconds).toFixed(2)}x; input 0's vectors: cosine distance ${distance.toExponential(2)}`);
console.log(JSON.stringify({ inputs: N, tokens: L, threads, parley_s: parleySeconds, llama_s: llamaSeconds,
                             ratio: llamaSeconds / parleySeconds, cosine_distance: distance }));

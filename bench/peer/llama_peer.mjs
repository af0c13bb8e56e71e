#!/usr/bin/env node
// Peer benchmark: llama.cpp through node-llama-cpp 3.21.1 prebuilt CPU binaries.
//
// Usage: node bench/peer/llama_peer.mjs --model PATH.gguf --threads T \
//          --seqs 1,8,32 --prompt-tokens P --gen-tokens G [--prefill-tokens N] [--reps R]
//
// Prints one JSON object on stdout; llama.cpp logs are silenced.
//
// Method (token ids only, tokenization is never measured):
//  * prompt = token ids 100 + (i % 50), i = 0..P-1.
//  * prefill: one sequence, N prompt tokens (default P) through
//    LlamaContextSequence.evaluateWithoutGeneratingNewTokens(); median of R runs
//    (history cleared between runs) after one warm-up run. tokens/s = N / time.
//  * decode at S sequences: one context with S sequences. Each sequence runs its own
//    LlamaContextSequence.evaluate() generator (greedy, temperature 0,
//    yieldEogToken: true so EOS never stops it). The first next() evaluates the prompt
//    and samples token #1 (untimed prefill), one more step is an untimed warm-up, then
//    G lock-stepped steps are timed: every step calls next() on all S generators at
//    once, which node-llama-cpp batches into one llama_decode of S tokens, and each
//    returns one greedily sampled token. tokens/s = S * G / wall time of the G steps.
import { getLlama, LlamaLogLevel } from "node-llama-cpp";
import { parseArgs } from "node:util";

const ENGINE = "llama.cpp (node-llama-cpp 3.21.1)";
const WARMUP_DECODE_STEPS = 1;

function usage(msg) {
    if (msg) console.error(`llama_peer: ${msg}`);
    console.error("usage: node bench/peer/llama_peer.mjs --model PATH.gguf --threads T " +
        "--seqs 1,8,32 --prompt-tokens P --gen-tokens G [--prefill-tokens N] [--reps R]");
    process.exit(2);
}

function positiveInt(name, s) {
    const n = Number(s);
    if (!Number.isInteger(n) || n < 1) usage(`--${name} must be a positive integer, got ${JSON.stringify(s)}`);
    return n;
}

let values;
try {
    ({ values } = parseArgs({
        options: {
            model: { type: "string" },
            threads: { type: "string" },
            seqs: { type: "string", default: "1,8,32" },
            "prompt-tokens": { type: "string" },
            "gen-tokens": { type: "string" },
            "prefill-tokens": { type: "string" },
            reps: { type: "string", default: "5" },
        },
    }));
} catch (e) {
    usage(e.message);
}
if (!values.model) usage("--model is required");
const threads = positiveInt("threads", values.threads);
const P = positiveInt("prompt-tokens", values["prompt-tokens"]);
const G = positiveInt("gen-tokens", values["gen-tokens"]);
const reps = positiveInt("reps", values.reps);
const N = values["prefill-tokens"] === undefined ? P : positiveInt("prefill-tokens", values["prefill-tokens"]);
const seqsList = values.seqs.split(",").map((s) => positiveInt("seqs", s.trim()));

const now = () => Number(process.hrtime.bigint()) / 1e9;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const llama = await getLlama({
    gpu: false,
    build: "never",      // prebuilt binaries only; fail rather than compile
    maxThreads: threads, // the thread pool cap; contexts below ask for exactly T
    logLevel: LlamaLogLevel.error,
    progressLogs: false,
});
const model = await llama.loadModel({ modelPath: values.model, gpuLayers: 0 });
const promptOf = (n) => Array.from({ length: n }, (_, i) => 100 + (i % 50)); // needs vocab >= 150
const prompt = promptOf(P);

// contextSize in node-llama-cpp is per sequence; the KV cache holds S times that.
async function makeContext(S, tokens = P) {
    return model.createContext({
        sequences: S,
        contextSize: tokens + G + WARMUP_DECODE_STEPS + 8,
        batchSize: Math.max(512, S, tokens),
        threads: { ideal: threads, min: threads },
    });
}

async function measurePrefill() {
    const ctx = await makeContext(1, N);
    const seq = ctx.getSequence();
    const tokens = promptOf(N);
    const times = [];
    for (let r = 0; r <= reps; r++) {
        await seq.clearHistory();
        const t0 = now();
        await seq.evaluateWithoutGeneratingNewTokens(tokens);
        if (r > 0) times.push(now() - t0); // run 0 is the warm-up
    }
    await ctx.dispose();
    return N / median(times);
}

async function measureDecode(S) {
    const ctx = await makeContext(S);
    const gens = Array.from({ length: S }, () =>
        ctx.getSequence().evaluate(prompt, { temperature: 0, yieldEogToken: true }));
    const stepAll = async () => {
        const res = await Promise.all(gens.map((g) => g.next()));
        if (res.some((r) => r.done)) throw new Error("a sequence stopped early");
    };
    await stepAll(); // prefill of all S prompts + first sampled token (untimed)
    for (let i = 0; i < WARMUP_DECODE_STEPS; i++) await stepAll();
    const t0 = now();
    for (let i = 0; i < G; i++) await stepAll();
    const dt = now() - t0;
    await Promise.all(gens.map((g) => g.return()));
    await ctx.dispose();
    return (S * G) / dt;
}

const round = (x) => Math.round(x * 10) / 10;
const prefill = await measurePrefill();
const decode = [];
for (const S of seqsList) decode.push({ seqs: S, tokens_per_s: round(await measureDecode(S)) });
await model.dispose();
await llama.dispose();

console.log(JSON.stringify({ engine: ENGINE, threads, prefill_tokens_per_s: round(prefill), decode }));

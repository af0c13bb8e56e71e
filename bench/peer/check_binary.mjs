// Loads the node-llama-cpp prebuilt CPU binary (never builds); used by install.sh.
// Must be a file: node-llama-cpp forks a test process that inherits `node -e` flags.
import { getLlama, LlamaLogLevel } from "node-llama-cpp";

const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error, progressLogs: false });
console.log(`node-llama-cpp prebuilt CPU binary OK (llama.cpp ${llama.llamaCppRelease.release}, ` +
    `cpuMathCores ${llama.cpuMathCores})`);
await llama.dispose();

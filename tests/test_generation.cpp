// Exact greedy generation on the real stories260K model against llama2.c run.c's token ids,
// from the llama2.c checkpoint, from the shipped GGUF, and from the GGUF `parley convert` writes.
#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <memory>

#include "model/convert.hpp"
#include "model/gguf.hpp"
#include "model/tokenizer.hpp"
#include "tests/test_support.hpp"

using namespace parley;
using namespace parley::test;

namespace {

void check_greedy_reference(const std::string& model_path, const std::string& tokenizer_path) {
  Loaded m(model_path, tokenizer_path);
  const Tokenizer tok(*m.file.vocab);
  OfflineEngine engine(m.model, m.engine_options());
  for (const Reference& ref : greedy_references()) {
    INFO("model " << model_path << " prompt '" << ref.prompt << "'");
    const auto prompt = tok.encode(ref.prompt, true);
    REQUIRE(prompt == ref.prompt_ids);
    GenerationRequest req{prompt, {}};
    req.params.temperature = 0.0f;
    req.params.max_tokens = 257 - int(prompt.size());  // run.c -n 256 counts prompt positions
    const auto result = engine.generate({req})[0];
    REQUIRE(result.output_token_ids == ref.output_ids);
    const bool stopped_on_bos = ref.output_ids.back() == 1;
    REQUIRE(result.finish == (stopped_on_bos ? FinishReason::Stop : FinishReason::Length));
  }
  REQUIRE(engine.block_pool().num_used() == 0);
}

}  // namespace

TEST_CASE("greedy stories260K from the llama2.c checkpoint equals run.c", "[generation]") {
  check_greedy_reference(shared_model("stories260K.bin"), shared_model("tok512.bin"));
}

TEST_CASE("greedy stories260K from the shipped GGUF equals run.c", "[generation]") {
  check_greedy_reference(shared_model("stories260K.gguf"), "");
}

TEST_CASE("greedy stories260K from the GGUF parley convert writes equals run.c", "[generation]") {
  TempDir dir;
  const std::string out = dir / "converted.gguf";
  convert_llama2c(shared_model("stories260K.bin"), shared_model("tok512.bin"), out, GgmlType::F32);
  check_greedy_reference(out, "");
}

TEST_CASE("parley generate prints the reference token ids", "[generation][cli]") {
  const Reference ref = greedy_references()[0];
  const std::string cmd = parley_binary() + " generate --model " + shared_model("stories260K.bin") + " --tokenizer " +
                          shared_model("tok512.bin") + " --prompt '" + ref.prompt +
                          "' --temperature 0 --max-tokens 40 --show-ids 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  REQUIRE(pipe);
  std::string out;
  std::array<char, 4096> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), pipe.get())) out.append(buf.data(), n);
  std::string ids = "output_token_ids: [";
  for (int i = 0; i < 40; ++i) ids += (i ? ", " : "") + std::to_string(ref.output_ids[i]);
  ids += "]";
  REQUIRE_THAT(out, Catch::Contains(ids));
  // The printed text is the prompt and the decoded continuation, as run.c prints it.
  REQUIRE_THAT(out, Catch::StartsWith(ref.text.substr(0, 40)));
}

TEST_CASE("the built-in model runs out of the box and is deterministic", "[generation]") {
  Loaded a("", ""), b("", "");
  const Tokenizer tok(*a.file.vocab);
  GenerationRequest req{tok.encode("Hello world", true), {}};
  req.params.seed = 7;
  req.params.max_tokens = 20;
  req.params.ignore_eos = true;
  OfflineEngine ea(a.model, a.engine_options()), eb(b.model, b.engine_options());
  const auto ra = ea.generate({req})[0], rb = eb.generate({req})[0];
  REQUIRE(ra.output_token_ids.size() == 20);
  REQUIRE(ra.output_token_ids == rb.output_token_ids);
  REQUIRE(ra.finish == FinishReason::Length);
}

TEST_CASE("parley gen-model writes the built-in model exactly, and convert honours --dtype", "[generation][cli]") {
  TempDir dir;
  // The built-in model is make_random_model(builtin_model_config(), 0x5EED): its GGUF export must generate the same.
  const std::string builtin = dir / "builtin.gguf";
  REQUIRE_THAT(run_cli("gen-model --shape builtin --seed 24301 --out " + builtin), Catch::Contains("wrote"));
  const std::string args = " --prompt 'The quick brown fox' --max-tokens 24 --seed 9 --temperature 0.7 --show-ids";
  const std::string from_memory = run_cli("generate" + args), from_file = run_cli("generate --model " + builtin + args);
  REQUIRE_THAT(from_memory, Catch::Contains("output_token_ids: ["));
  REQUIRE(from_memory == from_file);
  REQUIRE(from_memory != run_cli("generate" + args + " --top-k 1"));  // a sampling flag is honoured

  const std::string f16 = dir / "f16.gguf";
  REQUIRE_THAT(run_cli("convert --checkpoint " + shared_model("stories260K.bin") + " --tokenizer " +
                       shared_model("tok512.bin") + " --out " + f16 + " --dtype f16"),
               Catch::Contains("wrote") && Catch::Contains("blk.0.attn_q.weight") && Catch::Contains("f32 -> f16"));
  const GgufFile g(f16);
  REQUIRE(g.get_int("general.file_type") == 1);
  REQUIRE(g.tensor("blk.0.attn_q.weight").type == GgmlType::F16);
  REQUIRE(g.tensor("blk.0.attn_norm.weight").type == GgmlType::F32);  // norms stay F32, as llama.cpp writes them
  REQUIRE_THAT(run_cli("convert --checkpoint " + shared_model("stories260K.bin") + " --tokenizer " +
                       shared_model("tok512.bin") + " --out " + (dir / "x.gguf") + " --dtype f8"),
               Catch::Contains("--dtype: unknown type 'f8' (expected one of q4_0, q4_1,"));
}

TEST_CASE("parley parses --isa, --dtype and --prefill-routing once: a wrong word is refused, a right one prints back",
          "[generation][cli]") {
  REQUIRE_THAT(run_cli("generate --prompt hi --isa sse"),
               Catch::Contains("--isa: unknown ISA 'sse' (expected auto, generic, avx2, avx512 or amx)"));
  REQUIRE_THAT(run_cli("generate --prompt hi --dtype fp8"),
               Catch::Contains("--dtype: fp8 not in {auto,float32,bfloat16,float16}"));
  REQUIRE_THAT(run_cli("generate --prompt hi --prefill-routing random"),
               Catch::Contains("--prefill-routing: random not in {round_robin,least_loaded}"));
  const std::string printed =
      run_cli("generate --prompt hi --isa avx2 --dtype float32 --prefill-routing least_loaded --print-config");
  REQUIRE_THAT(printed, Catch::Contains("\nisa=\"avx2\"\n") && Catch::Contains("\ndtype=\"float32\"\n") &&
                            Catch::Contains("\nprefill-routing=\"least_loaded\"\n"));
}

TEST_CASE("the offline engine refuses bad options and bad requests with clear errors", "[generation]") {
  Loaded m("", "");
  auto with = [&](auto mutate) {
    EngineOptions o = m.engine_options();
    mutate(o);
    return o;
  };
  REQUIRE_THROWS_WITH(OfflineEngine(m.model, with([](auto& o) { o.block_size = 0; })), Catch::Contains("block_size"));
  REQUIRE_THROWS_WITH(OfflineEngine(m.model, with([](auto& o) { o.max_num_batched_tokens = 0; })),
                      Catch::Contains("max_num_batched_tokens"));
  REQUIRE_THROWS_WITH(OfflineEngine(m.model, with([](auto& o) { o.num_kv_blocks = -1; })),
                      Catch::Contains("num_kv_blocks"));
  OfflineEngine engine(m.model, m.engine_options());
  GenerationRequest ok{{1, 5, 6}, {}};
  ok.params.seed = 3, ok.params.ignore_eos = true;  // exactly max_tokens (16) tokens, every run
  auto bad = [&](auto mutate) {
    GenerationRequest r = ok;
    mutate(r);
    return std::vector<GenerationRequest>{ok, r};
  };
  REQUIRE_THROWS_WITH(engine.generate(bad([](auto& r) { r.prompt_token_ids.clear(); })),
                      Catch::Contains("request 1: empty prompt"));
  REQUIRE_THROWS_WITH(engine.generate(bad([](auto& r) {
    r.prompt_token_ids = {1, 512};
  })),
                      Catch::Contains("request 1: token id 512 outside the vocabulary"));
  REQUIRE_THROWS_WITH(engine.generate(bad([&](auto& r) { r.prompt_token_ids.assign(m.file.config.max_seq_len, 5); })),
                      Catch::Contains("leaves no room in the context"));
  REQUIRE_THROWS_WITH(engine.generate(bad([](auto& r) { r.params.n = 2; })), Catch::Contains("fan out n"));
  // A refused batch runs nothing and leaves the engine usable.
  const auto results = engine.generate({ok});
  REQUIRE(results[0].output_token_ids.size() == 16);
  REQUIRE(engine.block_pool().num_used() == 0);
}

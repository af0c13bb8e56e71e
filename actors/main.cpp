// parley: the command line. Flags map onto each command's option struct (actors/commands.hpp).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "actors/cli_config.hpp"
#include "actors/commands.hpp"
#include "actors/engine_flags.hpp"
#include "http/reasoning.hpp"
#include "http/tool_calls.hpp"
#include "model/model_shapes.hpp"

namespace {

// A file type by llama.cpp's name (f32 ... q4_k_m), parsed once here.
CLI::Option* file_type_option(CLI::App* cmd, const std::string& flag, parley::FileType& type, const std::string& help) {
  return cmd->add_option_function<std::string>(
      flag,
      [&type, flag](const std::string& name) {
        try {
          type = parley::parse_file_type(name);
        } catch (const std::invalid_argument& err) {
          throw CLI::ValidationError(flag, err.what());
        }
      },
      help + ": " + parley::file_type_names() + " (default " + std::string(parley::file_type_name(type)) + ")");
}

void add_generate_flags(CLI::App* cmd, parley::GenerateOptions& o) {
  parley::add_engine_flags(cmd, o.engine);
  cmd->add_option("--prompt", o.prompt, "Prompt text")->required();
  cmd->add_option("--max-tokens", o.params.max_tokens, "Tokens to generate at most")->capture_default_str();
  cmd->add_option("--min-tokens", o.params.min_tokens, "Tokens before EOS or a stop token may end the sample")
      ->capture_default_str();
  cmd->add_option("--temperature", o.params.temperature, "0 is greedy")->capture_default_str();
  cmd->add_option("--top-k", o.params.top_k, "-1 keeps all tokens")->capture_default_str();
  cmd->add_option("--top-p", o.params.top_p, "Nucleus mass in (0, 1]")->capture_default_str();
  cmd->add_option("--min-p", o.params.min_p, "Minimum probability relative to the top token")->capture_default_str();
  cmd->add_option("--presence-penalty", o.params.presence_penalty, "[-2, 2]")->capture_default_str();
  cmd->add_option("--frequency-penalty", o.params.frequency_penalty, "[-2, 2]")->capture_default_str();
  cmd->add_option("--repetition-penalty", o.params.repetition_penalty, "(0, 2]; 1 is off")->capture_default_str();
  cmd->add_option("--stop", o.params.stop, "Stop string (repeatable)");
  cmd->add_option_function<uint64_t>(
      "--seed", [&o](uint64_t s) { o.params.seed = s; }, "Seed (sample i uses seed + i); random when absent");
  cmd->add_option("--n", o.params.n, "Samples of the prompt")->capture_default_str();
  cmd->add_flag("--ignore-eos", o.params.ignore_eos, "Do not stop at EOS/BOS");
  cmd->add_flag("--show-ids", o.show_ids, "Also print prompt and output token ids");
}

// --pooling: one of llama.cpp's pooling types that Parley serves, instead of the file's.
CLI::Option* add_pooling_flag(CLI::App* cmd, std::optional<parley::PoolingType>& target, const std::string& what) {
  return cmd
      ->add_option_function<std::string>(
          "--pooling", [&target](const std::string& v) { target = parley::parse_choice<parley::PoolingType>(v); }, what)
      ->check(CLI::IsMember({"none", "mean", "cls", "last", "rank"}));
}

void add_embed_flags(CLI::App* cmd, parley::EmbedOptions& o) {
  parley::add_engine_flags(cmd, o.engine);
  parley::add_choice(cmd, o.engine.task,
                     "auto: embed when the model file names a pooling type or --pooling is given; embed; generate "
                     "(refused here)");
  add_pooling_flag(cmd, o.engine.pooling,
                   "How an embedding is made of the final hidden states (none, mean, cls, last; rank: a reranker's "
                   "score), instead of the "
                   "model file's {arch}.pooling_type");
  cmd->add_option("--input", o.input, "Text to embed, one input per line (- : standard input)")->capture_default_str();
  cmd->add_option("--output", o.output, "JSON lines {index, tokens, embedding}, in input order (- : standard output)")
      ->capture_default_str();
  cmd->add_flag("--matryoshka", o.matryoshka, "The model was trained for truncated vectors: --dimensions is honoured");
  cmd->add_option("--dimensions", o.dimensions, "Keep the first N values of each vector (before normalizing)");
  cmd->add_flag("!--no-normalize", o.normalize, "Vectors as pooled, not divided by their L2 norm");
  cmd->add_option("--truncate", o.truncate,
                  "Keep each input's last N tokens (-1: the context's length); by default an input over the context "
                  "is an error")
      ->capture_default_str();
  cmd->add_option("--in-flight", o.in_flight, "Inputs submitted at once (the scheduler batches them)")
      ->capture_default_str();
}

void add_serve_flags(CLI::App* cmd, parley::ServeOptions& o) {
  parley::add_engine_flags(cmd, o.engine);
  auto& s = o.server;
  parley::add_choice(
      cmd, o.engine.task,
      "generate text, embed (POST /v1/embeddings) or rerank (POST /v1/rerank, /v1/score); auto: embed when the "
      "model file names a pooling type ({arch}.pooling_type) or --pooling is given, rerank when that is rank");
  add_pooling_flag(cmd, o.engine.pooling,
                   "How an embedding is made of the final hidden states (none, mean, cls, last; rank: a reranker's "
                   "score), instead of the "
                   "model file's {arch}.pooling_type");
  cmd->add_flag("--matryoshka", s.matryoshka,
                "The embedding model was trained for truncated vectors (Matryoshka): /v1/embeddings honours "
                "`dimensions` (off: a 400)");
  cmd->add_option("--host", s.host, "Address to bind")->capture_default_str();
  cmd->add_option("--port", s.port, "Port (0: any free port)")
      ->capture_default_str()
      ->check(parley::in_range(0, 65535));
  CLI::Option* key = cmd->add_option("--api-key", s.router.api_key,
                                     "Require `Authorization: Bearer KEY` or `x-api-key: KEY` on /v1 (default: open)");
  cmd->add_option_function<std::string>(
         "--api-key-file",
         [&s](const std::string& path) { s.router.api_key = parley::read_secret_file("--api-key-file", path); },
         "--api-key read from a file (one line; keeps the key out of the command line and --print-config)")
      ->excludes(key);
  CLI::Option* token =
      cmd->add_option("--admin-token", s.router.admin_token, "Enable /admin/* behind `Authorization: Bearer TOKEN`");
  cmd->add_option_function<std::string>(
         "--admin-token-file",
         [&s](const std::string& path) { s.router.admin_token = parley::read_secret_file("--admin-token-file", path); },
         "--admin-token read from a file (one line)")
      ->excludes(token);
  cmd->add_flag(
      "--admin-show-prompts", s.admin_show_prompts,
      "The admin console shows each live request's prompt text (off: prompts never leave the engine's clients)");
  cmd->add_option("--admin-read-token", s.router.admin_read_token,
                  "A second /admin token that sees every view and may act on nothing (403)");
  cmd->add_option("--max-body-bytes", s.max_body_bytes, "Larger request bodies get 413")
      ->capture_default_str()
      ->check(parley::at_least(1));
  cmd->add_option("--read-timeout", s.read_timeout_s, "Seconds for a request to arrive whole")
      ->capture_default_str()
      ->check(parley::at_least(1));
  cmd->add_option("--write-timeout", s.write_timeout_s,
                  "Seconds a response write may wait on a client that does not read; past it the connection is cut "
                  "and its requests aborted")
      ->capture_default_str()
      ->check(parley::at_least(1));
  cmd->add_option("--idle-timeout", s.idle_timeout_s, "Seconds a keep-alive connection may wait idle")
      ->capture_default_str()
      ->check(parley::at_least(1));
  cmd->add_option("--max-connections", s.max_connections,
                  "Open HTTP and websocket connections at most; a connection past it is answered 503 and closed")
      ->capture_default_str()
      ->check(parley::at_least(1));
  cmd->add_option("--max-ws-requests", s.max_ws_requests,
                  "Requests running at once on one websocket; a request past it gets a 429 error message")
      ->capture_default_str()
      ->check(parley::at_least(1));
  cmd->add_option("--max-output-backlog-bytes", s.max_output_backlog_bytes,
                  "Output bytes a connection may have queued behind the write in flight; past it the connection is "
                  "closed (websocket 1008) or cut, and its requests aborted")
      ->capture_default_str()
      ->check(parley::at_least(1));
  cmd->add_option("--io-threads", s.io_threads, "Threads running HTTP I/O")
      ->capture_default_str()
      ->check(parley::at_least(1));
  cmd->add_option("--chat-template", s.chat_template_file,
                  "A Jinja chat template file rendered instead of the model's tokenizer.chat_template")
      ->check(CLI::ExistingFile);
  cmd->add_option("--tool-call-parser", s.tool_call_parser,
                  "How tool calls are read from the output (" + parley::http::known_tool_call_parsers() +
                      "); default: the format the chat template shows")
      ->check(parley::accepted_by(parley::http::parse_tool_call_parser));
  cmd->add_flag("--enable-auto-tool-choice", s.enable_auto_tool_choice,
                "Allow tool_choice \"auto\" (the default when a request has tools): the model decides whether to call");
  cmd->add_flag("--exclude-tools-when-tool-choice-none", s.exclude_tools_when_tool_choice_none,
                "With tool_choice \"none\", render the chat template without the tools");
  cmd->add_option("--reasoning-parser", s.reasoning_parser,
                  "Split a thinking model's chat output into reasoning_content and content (deepseek_r1, qwen3, "
                  "openai_gptoss; auto: the chat template's format)")
      ->check([](const std::string& v) {
        return v == "auto" ? std::string() : parley::accepted_by(parley::http::parse_reasoning_parser)(v);
      });
  cmd->add_flag(
      "--structured-outputs-in-reasoning", s.structured_outputs_in_reasoning,
      "With --reasoning-parser, apply structured outputs and forced tool calls from the first token, not from "
      "the reasoning's end (vLLM's enable_in_reasoning)");
  cmd->add_flag("--strict-request-fields", s.strict_request_fields,
                "Answer 400 to a request field Parley does not know (default: accept it, log it and count it in "
                "parley:request_fields_ignored_total, as vLLM does)");
  cmd->add_option("--responses-store-max", s.responses_store_max,
                  "/v1/responses kept in memory (store: true) for GET /v1/responses/{id} and previous_response_id; "
                  "past it the oldest is dropped (0: none kept)")
      ->capture_default_str();
  cmd->add_option("--shutdown-grace", s.shutdown_grace_s,
                  "On SIGTERM/SIGINT: seconds live requests may finish before they are aborted")
      ->capture_default_str()
      ->check(parley::at_least(0));
  cmd->add_option("--log-level", o.log_level, "trace, debug, info, warn, error, critical, off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Parley: an LLM inference engine"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "parley 0.1.0");

  parley::GenerateOptions generate;
  CLI::App* gen_cmd = app.add_subcommand("generate", "Generate text in-process (the same engine, no HTTP)");
  add_generate_flags(gen_cmd, generate);
  bool print_config = false;
  parley::add_config_flags(app, gen_cmd, print_config);

  parley::EmbedOptions embed;
  CLI::App* embed_cmd = app.add_subcommand("embed", "Embed a file of lines in-process (the same engine, no HTTP)");
  add_embed_flags(embed_cmd, embed);

  parley::ServeOptions serve;
  CLI::App* serve_cmd = app.add_subcommand("serve", "Serve the OpenAI-compatible HTTP API and the /v1/ws websocket");
  add_serve_flags(serve_cmd, serve);
  parley::add_config_flags(app, serve_cmd, print_config);

  parley::ConvertOptions convert;
  CLI::App* conv =
      app.add_subcommand("convert", "Write a GGUF (llama.cpp layout) from a llama2.c checkpoint and tokenizer.bin");
  conv->add_option("--checkpoint", convert.checkpoint, "llama2.c model .bin")->required()->check(CLI::ExistingFile);
  conv->add_option("--tokenizer", convert.tokenizer, "llama2.c tokenizer.bin")->required()->check(CLI::ExistingFile);
  conv->add_option("--out", convert.out, "Output .gguf path")->required();
  file_type_option(conv, "--dtype", convert.dtype, "Weight types, as llama-quantize names them");

  parley::GenModelOptions gen_model;
  CLI::App* gen = app.add_subcommand("gen-model", "Write a random-weight GGUF of a benchmark shape");
  CLI::Option* gen_arch = gen->add_option("--arch", gen_model.arch,
                                          "A tiny model exercising every feature of: " + parley::known_tiny_archs());
  gen->add_option("--shape", gen_model.shape, "A real shape for benchmarks: " + parley::known_shapes())
      ->excludes(gen_arch)
      ->capture_default_str();
  gen->add_option("--out", gen_model.out, "Output .gguf path")->required();
  gen->add_option("--seed", gen_model.seed, "Weight seed")->capture_default_str();
  gen->add_flag("--mtp", gen_model.with_mtp, "Add a multi-token-prediction head (the GGUF nextn block)");
  add_pooling_flag(gen, gen_model.pooling,
                   "Write {arch}.pooling_type: an embedding model (none, mean, cls, last), or a reranker (rank: qwen3 "
                   "with a two-label head, bert a cross-encoder's dense layer and one label)");
  gen->add_option("--hf-tokenizer", gen_model.hf_tokenizer,
                  "A folder with a Hugging Face tokenizer.json and tokenizer_config.json (or a BERT vocab.txt): its "
                  "byte-level BPE or WordPiece vocabulary and chat template replace the synthetic vocabulary")
      ->check(CLI::ExistingDirectory);
  gen->add_option("--pre", gen_model.pre, "The tokenizer.ggml.pre type of --hf-tokenizer (default: recognised)");
  file_type_option(gen, "--dtype", gen_model.dtype, "Weight types, as llama-quantize names them");

  parley::QuantizeOptions quantize;
  CLI::App* quant = app.add_subcommand("quantize", "Rewrite a model with llama.cpp's per-tensor types for a file type");
  file_type_option(quant, "--type", quantize.type, "Target file type")->required();
  quant->add_option("in", quantize.in, "A GGUF of any supported type, or a llama2.c checkpoint (with --tokenizer)")
      ->required()
      ->check(CLI::ExistingFile);
  quant->add_option("out", quantize.out, "Output .gguf path")->required();
  quant->add_option("--tokenizer", quantize.tokenizer, "The llama2.c checkpoint's tokenizer.bin (or a GGUF vocabulary)")
      ->check(CLI::ExistingFile);

  parley::AdminOptions admin;
  CLI::App* adm = app.add_subcommand("admin",
                                     "The admin console in the terminal (keys: up/down, a abort, d drain, r resume, "
                                     "l log level, s sort, q quit), or one snapshot with --once");
  adm->add_option("--url", admin.url, "The server")->capture_default_str();
  adm->add_option("--token", admin.token, "Its --admin-token (or --admin-read-token: look, do not act)")->required();
  adm->add_flag("--once", admin.once, "Print one snapshot of /admin/events and exit");
  adm->add_flag("--json", admin.json, "With --once: indented JSON")->needs(adm->get_option("--once"));
  adm->add_option("--interval", admin.interval_s, "Seconds between refreshes")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 60.0));

  if (const int exit_code = parley::parse_command_line(app, argc, argv); exit_code >= 0) return exit_code;
  if (print_config) {
    std::fputs(parley::effective_config(app.got_subcommand("serve") ? *serve_cmd : *gen_cmd).c_str(), stdout);
    return 0;
  }
  try {
    if (app.got_subcommand("generate")) return parley::run_generate(generate);
    if (app.got_subcommand("embed")) return parley::run_embed(embed);
    if (app.got_subcommand("serve")) {
      serve.server.router.effective_config = parley::redacted_config(*serve_cmd);
      return parley::run_serve(serve);
    }
    if (app.got_subcommand("convert")) return parley::run_convert(convert);
    if (app.got_subcommand("gen-model")) return parley::run_gen_model(gen_model);
    if (app.got_subcommand("quantize")) return parley::run_quantize(quantize);
    if (app.got_subcommand("admin")) return parley::run_admin(admin);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "parley: error: %s\n", e.what());
    return 1;
  }
  return 2;
}

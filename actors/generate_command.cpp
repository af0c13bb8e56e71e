// `parley generate`: the same actors as `parley serve`, driven in-process with no HTTP.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <future>
#include <map>
#include <mutex>
#include <utility>

#include "actors/commands.hpp"
#include "model/tokenizer.hpp"

namespace parley {
namespace {

std::string ids_to_string(const std::vector<int>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  return s + "]";
}

// Prints a single sample as it streams; collects every sample's text and ids.
struct PrintingSink : RequestSink {
  struct Sample {
    std::string text;
    std::vector<int> ids;
    FinishReason finish = FinishReason::None;
  };
  std::mutex mu;
  std::map<std::string, Sample> samples;
  int remaining = 0;
  bool stream = false;
  std::string echo;                // the prompt, printed with the first streamed text (after the request was accepted)
  std::promise<std::string> done;  // "" on success, else the refusal

  void on_output(const RequestOutput& out) override {
    std::lock_guard lock(mu);
    Sample& s = samples[out.req_id];
    s.text += out.text;
    s.ids.insert(s.ids.end(), out.token_ids.begin(), out.token_ids.end());
    if (stream) {
      std::fputs((std::exchange(echo, "") + out.text).c_str(), stdout);
      std::fflush(stdout);
    }
    if (out.finished()) {
      s.finish = out.finish_reason;
      if (--remaining == 0) done.set_value("");
    }
  }
  void on_rejected(int status, const std::string& message) override { done.set_value(message); }
};

}  // namespace

int run_generate(const GenerateOptions& o) {
  spdlog::set_level(spdlog::level::warn);
  o.params.validate();
  auto engine = EngineClient::start(o.engine);
  const Tokenizer& tokenizer = engine->tokenizer();
  o.params.validate(tokenizer.vocab().size());
  const std::vector<int> prompt = tokenizer.encode(o.prompt, /*add_special=*/true);
  // n samples of one prompt, prefilled once: sample i uses seed + i; unseeded, each draws its own seed.
  std::vector<EngineRequestSpec> specs(1);
  specs[0] = {"gen-0", prompt, o.params, {}};
  for (int i = 0; i < o.params.n && o.params.n > 1; ++i) specs[0].child_req_ids.push_back("gen-" + std::to_string(i));
  auto sink = std::make_shared<PrintingSink>();
  sink->remaining = o.params.n;
  sink->stream = o.params.n == 1;
  sink->echo = o.prompt;
  auto finished = sink->done.get_future();
  engine->submit(std::move(specs), sink);
  const std::string refusal = finished.get();
  engine->shutdown();
  if (!refusal.empty()) throw std::invalid_argument(refusal);
  if (sink->stream) std::printf("\n");
  for (int i = 0; i < o.params.n; ++i) {
    const auto& s = sink->samples["gen-" + std::to_string(i)];
    if (o.params.n > 1) std::printf("--- sample %d ---\n%s%s\n", i, o.prompt.c_str(), s.text.c_str());
    if (o.show_ids) {
      std::printf("prompt_token_ids: %s\n", ids_to_string(prompt).c_str());
      std::printf("output_token_ids: %s\n", ids_to_string(s.ids).c_str());
    }
    std::fprintf(stderr, "[sample %d: %zu tokens, finish_reason %s]\n", i, s.ids.size(), finish_reason_name(s.finish));
  }
  return 0;
}

}  // namespace parley

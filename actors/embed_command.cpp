// `parley embed`: a file of lines embedded by the same actors as `parley serve`, with no HTTP (vLLM's LLM.embed,
// llama.cpp's llama-embedding): one JSON line per input, in input order, and a progress bar on stderr.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "actors/commands.hpp"
#include "model/llama_config.hpp"
#include "model/tokenizer.hpp"

namespace parley {
namespace {

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream file;
  if (path != "-") {
    file.open(path);
    if (!file) throw std::invalid_argument("--input: cannot read " + path);
  }
  std::istream& in = path == "-" ? std::cin : file;
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty())
      throw std::invalid_argument("--input: line " + std::to_string(lines.size() + 1) +
                                  " is empty (an input cannot be; as /v1/embeddings answers 400)");
    lines.push_back(std::move(line));
  }
  return lines;
}

// Each input's token ids, truncated as truncate_prompt_tokens would be; an input over the context is an error.
std::vector<std::vector<int>> tokenize(const std::vector<std::string>& lines, const EngineClient& engine,
                                       int truncate) {
  const int limit = engine.max_model_len();
  const size_t keep = size_t(truncate == -1 ? limit : truncate);
  std::vector<std::vector<int>> prompts;
  for (const std::string& line : lines) {
    std::vector<int> ids = engine.tokenizer().encode(line, /*add_special=*/true);
    if (truncate != 0 && ids.size() > keep) ids.erase(ids.begin(), ids.end() - long(keep));
    if (long(ids.size()) > limit)
      throw std::invalid_argument("--input: line " + std::to_string(prompts.size() + 1) + " has " +
                                  std::to_string(ids.size()) + " tokens, over the model's context of " +
                                  std::to_string(limit) + " (--truncate keeps the last tokens)");
    prompts.push_back(std::move(ids));
  }
  return prompts;
}

void check_pooling(const EmbedOptions& o, const EngineClient& engine) {
  const LlamaConfig& c = engine.model_config();
  if (c.pooling == PoolingType::None)
    throw std::invalid_argument(
        "the model generates text: parley embed needs an embedding model (a file with "
        "{arch}.pooling_type, or --task embed with --pooling)");
  if (c.pooling == PoolingType::Rank)
    throw std::invalid_argument("the model is a reranker: parley embed needs --pooling mean|cls|last to embed with it");
  if (o.dimensions != 0 && !o.matryoshka)
    throw std::invalid_argument("--dimensions needs --matryoshka (a model trained for truncated vectors)");
  if (o.dimensions < 0 || o.dimensions > c.dim)
    throw std::invalid_argument("--dimensions must be in [1, " + std::to_string(c.dim) + "]");
}

// The vectors as they arrive (any order), handed out in input order.
struct EmbedSink {
  std::mutex mu;
  std::condition_variable cv;
  std::map<size_t, std::vector<float>> done;
  std::string refusal;
  size_t in_flight = 0;
};

struct OneInput : RequestSink {
  std::shared_ptr<EmbedSink> all;
  size_t index;
  void on_output(const RequestOutput& out) override {
    if (!out.finished()) return;
    std::lock_guard lock(all->mu);
    if (!out.error.empty()) all->refusal = "input " + std::to_string(index + 1) + ": " + out.error;
    all->done[index] = out.embedding;
    --all->in_flight;
    all->cv.notify_one();
  }
  void on_rejected(int, const std::string& message) override {
    std::lock_guard lock(all->mu);
    all->refusal = "input " + std::to_string(index + 1) + ": " + message;
    --all->in_flight;
    all->cv.notify_one();
  }
};

// One line on stderr: redrawn in place on a terminal, else a line per tenth of the job.
class Progress {
 public:
  explicit Progress(size_t total) : total_(total), tty_(isatty(2)), start_(std::chrono::steady_clock::now()) {}
  void update(size_t done, size_t tokens, bool last = false) {
    const auto now = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(now - start_).count();
    if (!last && (tty_ ? now - drawn_ < std::chrono::milliseconds(100) : done * 10 / total_ == shown_tenth_)) return;
    drawn_ = now, shown_tenth_ = done * 10 / total_;
    constexpr int kWidth = 30;
    const int filled = int(done * kWidth / total_);
    std::fprintf(stderr, "%s[%s%s] %zu/%zu inputs, %zu tokens, %.1f inputs/s%s", tty_ ? "\r" : "",
                 std::string(size_t(filled), '#').c_str(), std::string(size_t(kWidth - filled), ' ').c_str(), done,
                 total_, tokens, s > 0 ? double(done) / s : 0.0, tty_ && !last ? "" : "\n");
  }

 private:
  size_t total_;
  bool tty_;
  std::chrono::steady_clock::time_point start_, drawn_{};
  size_t shown_tenth_ = size_t(-1);
};

}  // namespace

int run_embed(const EmbedOptions& o) {
  spdlog::set_level(spdlog::level::warn);
  if (o.in_flight < 1 || o.in_flight > o.engine.scheduler.max_waiting)  // more would be refused with 503
    throw std::invalid_argument("--in-flight must be in [1, --max-waiting (" +
                                std::to_string(o.engine.scheduler.max_waiting) + ")]");
  if (o.truncate < -1) throw std::invalid_argument("--truncate must be a positive number of tokens, or -1");
  const std::vector<std::string> lines = read_lines(o.input);
  if (lines.empty()) throw std::invalid_argument("--input: no lines to embed");
  std::ofstream file;
  if (o.output != "-") {
    file.open(o.output);
    if (!file) throw std::invalid_argument("--output: cannot write " + o.output);
  }
  std::ostream& out = o.output == "-" ? std::cout : file;
  auto engine = EngineClient::start(o.engine);
  check_pooling(o, *engine);
  const std::vector<std::vector<int>> prompts = tokenize(lines, *engine, o.truncate);
  auto sink = std::make_shared<EmbedSink>();
  Progress progress(prompts.size());
  size_t next = 0, written = 0, tokens = 0;
  std::unique_lock lock(sink->mu);
  while (written < prompts.size() && sink->refusal.empty()) {
    for (; next < prompts.size() && sink->in_flight < size_t(o.in_flight); ++next) {
      auto one = std::make_shared<OneInput>();
      one->all = sink, one->index = next;
      EngineRequestSpec spec{"embed-" + std::to_string(next), prompts[next], {}, {}, PoolingParams{}};
      spec.pooling->dimensions = o.dimensions, spec.pooling->normalize = o.normalize;
      ++sink->in_flight;
      lock.unlock();
      engine->submit({std::move(spec)}, one);
      lock.lock();
    }
    sink->cv.wait(lock, [&] { return !sink->refusal.empty() || sink->done.count(written); });
    for (auto it = sink->done.find(written); it != sink->done.end() && sink->refusal.empty();
         it = sink->done.find(written)) {
      out << nlohmann::ordered_json{{"index", written}, {"tokens", prompts[written].size()}, {"embedding", it->second}}
                 .dump()
          << '\n';
      tokens += prompts[written].size();
      sink->done.erase(it);
      progress.update(++written, tokens, written == prompts.size());
    }
  }
  const std::string refusal = sink->refusal;
  lock.unlock();
  engine->shutdown();
  if (!refusal.empty()) throw std::invalid_argument(refusal);
  out.flush();
  return 0;
}

}  // namespace parley

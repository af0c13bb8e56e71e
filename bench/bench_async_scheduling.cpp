// Async scheduling: the actor engine with the scheduler planning step N+1 while the worker
// runs step N, against one step at a time, at 1, 16 and 64 concurrent requests. Prints steps/s and output
// tokens/s for both and their ratio, and checks that both give every request the same token ids. A third
// row runs the same loop in one thread with no actors (EngineCore): the floor the actor engine pays
// messages on top of. A second table splits each engine's step into its phases (engine/step_profile.hpp), and
// two last lines time an idle engine (its threads asleep 50 ms, then 1 ms) from a request's submission to its first
// step computing.
//   bench_async_scheduling [--model M] [--tokenizer T] [--prompt-tokens 32] [--gen-tokens 64]
//                          [--concurrency 1,16,64] [--repeats 3] [--threads T] [--cpu-affinity auto|off]
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <map>
#include <mutex>
#include <regex>
#include <thread>

#include <sys/resource.h>

#include "engine/engine_client.hpp"
#include "engine/engine_config.hpp"
#include "engine/engine_core.hpp"
#include "engine/thread_placement.hpp"
#include "kernels/cpu/ops.hpp"
#include "model/model_source.hpp"

namespace {

using namespace parley;

struct CountingSink : RequestSink {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, std::vector<int>> tokens;
  int finished = 0;
  bool rejected = false;
  void on_output(const RequestOutput& o) override {
    std::lock_guard lock(mu);
    auto& t = tokens[o.req_id];
    t.insert(t.end(), o.token_ids.begin(), o.token_ids.end());
    finished += o.finished();
    if (o.finished())
      cv.notify_all();  // not on every token: waking the waiting thread would take a core from the engine
  }
  void on_rejected(int, const std::string& message) override {
    std::lock_guard lock(mu);
    std::fprintf(stderr, "rejected: %s\n", message.c_str());
    rejected = true;
    cv.notify_all();
  }
  void wait(int expected) {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return finished >= expected || rejected; });
    if (rejected) throw std::runtime_error("the engine refused the benchmark's requests");
  }
};

double steps_of(EngineClient& engine) {
  std::promise<std::string> p;
  engine.metrics([&p](std::string text) { p.set_value(std::move(text)); });
  const std::string text = p.get_future().get();
  std::smatch m;
  if (!std::regex_search(text, m, std::regex("parley:engine_steps_total\\{[^}]*\\} ([0-9.e+]+)")))
    throw std::runtime_error("no parley:engine_steps_total in /metrics");
  return std::stod(m[1]);
}

constexpr size_t kPhases = size_t(StepPhase::Count);

// CPU seconds of every thread of this process so far.
double process_cpu() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

struct Measure {
  double seconds = 0, steps = 0, cpu_seconds = 0;
  int tokens = 0;
  std::map<std::string, std::vector<int>> ids;
  std::array<double, kPhases> phase_us{};  // per step; negative: the engine has no such phase
};

void take_profile(Measure& m, const StepProfile& profile) {
  for (size_t p = 0; p < kPhases; ++p)
    m.phase_us[p] = profile.count(StepPhase(p)) ? profile.seconds(StepPhase(p)) * 1e6 / std::max(1.0, m.steps) : -1;
}

// `concurrency` requests, each with its own prompt, run to gen_tokens.
std::vector<EngineRequestSpec> make_specs(int vocab, int concurrency, int prompt_tokens, int gen_tokens, int round) {
  std::vector<EngineRequestSpec> specs;
  for (int i = 0; i < concurrency; ++i) {
    EngineRequestSpec s;
    s.req_id = "b" + std::to_string(round) + "." + std::to_string(i);
    s.prompt_token_ids.push_back(1);
    for (int k = 1; k < prompt_tokens; ++k) s.prompt_token_ids.push_back(3 + (i * 131 + k * 17) % (vocab - 3));
    s.params.temperature = i % 2 ? 0.8f : 0.0f;
    s.params.seed = uint64_t(i);
    s.params.max_tokens = gen_tokens;
    s.params.ignore_eos = true;
    specs.push_back(std::move(s));
  }
  return specs;
}

// The requests submitted at once to the actor engine.
Measure run_batch(EngineClient& engine, StepProfile& profile, std::vector<EngineRequestSpec> specs) {
  const int concurrency = int(specs.size());
  const double steps_before = steps_of(engine);
  profile.reset();
  auto sink = std::make_shared<CountingSink>();
  const double cpu_start = process_cpu();
  const auto start = std::chrono::steady_clock::now();
  engine.submit(std::move(specs), sink);
  sink->wait(concurrency);
  Measure m;
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  m.cpu_seconds = process_cpu() - cpu_start;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the last step's counters reach /metrics
  m.steps = steps_of(engine) - steps_before;
  for (auto& [id, t] : sink->tokens) m.tokens += int(t.size()), m.ids[id.substr(id.find('.'))] = t;
  take_profile(m, profile);
  return m;
}

// An idle engine (its threads asleep for a while): from one request's submission to its first step computing, and
// of that the hop to the scheduler actor and the step's hop to the worker, per trial (each sorted). The submitting
// thread runs where `parley serve` pins its HTTP threads.
struct IdleStart {
  std::vector<double> total_us, to_scheduler_us, hop_us;
};
IdleStart idle_start_latencies(EngineClient& engine, StepProfile& profile, int vocab, int trials, int idle_ms) {
  IdleStart out;
  const std::vector<int> own = allowed_cpus();
  pin_this_thread(engine.service_cpus());
  for (int t = 0; t < trials; ++t) {
    auto specs = make_specs(vocab, 1, 8, 1, 100000 + t);
    auto sink = std::make_shared<CountingSink>();
    std::this_thread::sleep_for(std::chrono::milliseconds(idle_ms));
    profile.reset();
    const double submitted = StepProfile::now();
    engine.submit(std::move(specs), sink);
    sink->wait(1);
    out.total_us.push_back((profile.first_compute.load() - submitted) * 1e6);
    out.to_scheduler_us.push_back((profile.first_admission.load() - submitted) * 1e6);
    out.hop_us.push_back(profile.seconds(StepPhase::HopToWorker) / double(profile.count(StepPhase::HopToWorker)) * 1e6);
  }
  pin_this_thread(own);
  for (auto* v : {&out.total_us, &out.to_scheduler_us, &out.hop_us}) std::sort(v->begin(), v->end());
  return out;
}

// The same requests through EngineCore in this thread: schedule, run, update, with no messages.
Measure run_core(LlamaModel& model, SchedulerConfig config, const std::vector<EngineRequestSpec>& specs) {
  EngineCore core(model, std::move(config));
  StepProfile profile;
  core.scheduler().set_profile(&profile);
  core.runner().set_profile(&profile);
  for (const auto& s : specs) core.add_request(Request(s.req_id, s.prompt_token_ids, s.params, *s.params.seed));
  Measure m;
  const double cpu_start = process_cpu();
  const auto start = std::chrono::steady_clock::now();
  while (core.has_unfinished_requests())
    for (const EngineCoreOutput& o : core.step()) {
      auto& t = m.ids[o.req_id.substr(o.req_id.find('.'))];
      t.insert(t.end(), o.new_token_ids.begin(), o.new_token_ids.end());
      m.tokens += int(o.new_token_ids.size());
    }
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  m.cpu_seconds = process_cpu() - cpu_start;
  m.steps = double(core.scheduler().stats().num_steps);
  take_profile(m, profile);
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Async scheduling on against off, through the actor engine"};
  EngineConfig config;
  int prompt_tokens = 32, gen_tokens = 64, repeats = 3;
  std::vector<int> concurrency = {1, 16, 64};
  app.add_option("--model", config.model_path, "GGUF or llama2.c checkpoint (default: the built-in model)");
  app.add_option("--tokenizer", config.tokenizer_path, "Tokenizer (default: the model's own)");
  app.add_option("--prompt-tokens", prompt_tokens)->capture_default_str();
  app.add_option("--gen-tokens", gen_tokens)->capture_default_str();
  app.add_option("--concurrency", concurrency)->delimiter(',');
  app.add_option("--repeats", repeats, "Runs per cell; the fastest counts")->capture_default_str();
  app.add_option("--threads", config.threads, "Compute threads (0: all cores)")->capture_default_str();
  std::string affinity = "auto";
  app.add_option("--cpu-affinity", affinity, "auto or off, as parley serve's flag")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "off"}));
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::warn);
  config.cpu_affinity = parse_choice<CpuAffinity>(affinity);

  int largest = 0;
  for (int c : concurrency) largest = std::max(largest, c);
  config.scheduler.max_num_seqs = std::max(1, largest);
  config.scheduler.num_kv_blocks = largest * ((prompt_tokens + gen_tokens) / 16 + 2);
  std::map<bool, std::unique_ptr<EngineClient>> engines;
  std::map<bool, std::shared_ptr<StepProfile>> profiles;
  for (bool async_scheduling : {false, true}) {
    config.async_scheduling = async_scheduling;
    config.profile = profiles[async_scheduling] = std::make_shared<StepProfile>();
    engines[async_scheduling] = EngineClient::start(config);
  }
  // The in-process loop's model, on a backend with the same thread count, with the engine's scheduler settings.
  ModelFile file = load_model_with_vocab(config.model_path, config.tokenizer_path);
  const int vocab = file.config.vocab_size;
  cpu::CpuBackend backend(config.threads);
  LlamaModel model(file.config, std::move(file.weights), backend);
  SchedulerConfig core_config = config.scheduler;
  core_config.max_model_len = file.config.max_seq_len;
  core_config.eos_token_ids = default_stop_token_ids(*file.vocab);
  std::printf("model %s, prompt %d tokens, %d generated per request, best of %d\n\n",
              engines[true]->model_name().c_str(), prompt_tokens, gen_tokens, repeats);
  std::printf(
      "| requests | engine | steps | steps/s | output tok/s | against async off | against one thread | CPU us/step |\n"
      "|---|---|---|---|---|---|---|---|\n");
  int round = 0;
  enum { Off, On, Core };
  const auto engine_name = [](int which) {
    return which == Off ? "actors, async off" : which == On ? "actors, async on" : "one thread, no actors";
  };
  std::map<std::pair<int, int>, Measure> profiled;  // (requests, engine) -> its best run
  for (int c : concurrency) {
    std::map<int, Measure> best;
    auto keep = [&](int which, Measure m) {
      if (!best.count(which) || m.seconds < best[which].seconds) best[which] = std::move(m);
    };
    for (int r = 0; r < repeats; ++r) {  // interleaved: drift on a noisy machine hits every engine
      const auto specs = make_specs(vocab, c, prompt_tokens, gen_tokens, round++);
      keep(Off, run_batch(*engines[false], *profiles[false], specs));
      keep(On, run_batch(*engines[true], *profiles[true], specs));
      keep(Core, run_core(model, core_config, specs));
    }
    if (best[On].ids != best[Off].ids || best[Core].ids != best[Off].ids) {
      std::fprintf(stderr, "token ids differ between the engines at %d requests\n", c);
      return 1;
    }
    for (int which : {Off, On, Core}) {
      const Measure& m = best[which];
      std::printf("| %d | %s | %.0f | %.0f | %.0f | %.2fx | %.2fx | %.0f |\n", c, engine_name(which), m.steps,
                  m.steps / m.seconds, m.tokens / m.seconds, best[Off].seconds / m.seconds,
                  best[Core].seconds / m.seconds, m.cpu_seconds * 1e6 / m.steps);
      profiled[{c, which}] = m;
    }
  }
  std::printf("\nEvery request's token ids are identical across the three engines.\n\n");
  std::printf(
      "Per step, in microseconds (the best run of each cell; phases in engine/step_profile.hpp):\n\n"
      "| requests | engine | schedule | update | scheduler CPU | hop to worker | worker idle | prepare | forward | "
      "sample "
      "| hop to scheduler | hop to output | output processing | step "
      "|\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& [key, m] : profiled) {
    std::printf("| %d | %s |", key.first, engine_name(key.second));
    for (double us : m.phase_us) us < 0 ? std::printf(" - |") : std::printf(" %.1f |", us);
    std::printf(" %.1f |\n", m.seconds * 1e6 / m.steps);
  }
  // After 50 ms the threads and their caches are cold; after 1 ms they are not: no poll interval either way.
  for (int idle_ms : {50, 1}) {
    const IdleStart idle = idle_start_latencies(*engines[true], *profiles[true], vocab, 21, idle_ms);
    const size_t mid = idle.total_us.size() / 2;
    std::printf(
        "%sIdle engine (async on), submission to first step computing, 21 requests %d ms apart: median %.0f us, "
        "max %.0f us; of that the hop to the scheduler actor: median %.0f us, max %.0f us; the step's hop to the "
        "worker: median %.0f us, max %.0f us\n",
        idle_ms == 50 ? "\n" : "", idle_ms, idle.total_us[mid], idle.total_us.back(), idle.to_scheduler_us[mid],
        idle.to_scheduler_us.back(), idle.hop_us[mid], idle.hop_us.back());
  }
  return 0;
}

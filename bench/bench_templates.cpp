// Chat template parse and render time for every template in a folder (../shared/chat_templates), on a
// 10-message conversation, with Python's Jinja2 (bench/jinja2_timing.py, transformers' environment) on the
// same inputs in the same run. Usage: bench_templates [--dir D] [--no-peer]
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "model/chat_template.hpp"

using namespace parley;
using ojson = nlohmann::ordered_json;

namespace {

// Microseconds per call of f: the best of 5 batches of at least 20 ms each.
template <typename F>
double best_us(F&& f) {
  double best = 1e30;
  for (int batch = 0; batch < 5; ++batch) {
    int n = 0;
    const auto t0 = std::chrono::steady_clock::now();
    double elapsed = 0;
    do {
      f();
      ++n;
      elapsed = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    } while (elapsed < 20000);
    best = std::min(best, elapsed / n);
  }
  return best;
}

ojson conversation() {
  ojson m = ojson::array({{{"role", "system"}, {"content", "You are a helpful assistant. Answer briefly."}}});
  for (int i = 0; i < 9; ++i)
    m.push_back({{"role", i % 2 ? "assistant" : "user"},
                 {"content", "Message " + std::to_string(i) + ": tell me about the weather in Oslo, please."}});
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Chat template render time"};
  std::string dir = PARLEY_SHARED_DIR "/chat_templates";
  bool no_peer = false;
  app.add_option("--dir", dir, "A folder of .jinja templates")->capture_default_str();
  app.add_flag("--no-peer", no_peer, "Skip Jinja2");
  CLI11_PARSE(app, argc, argv);

  std::map<std::string, std::string> sources;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".jinja") {
      std::ifstream f(e.path());
      sources[e.path().stem().string()].assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    }
  ChatInputs inputs;
  inputs.messages = conversation();
  jinja::Options options;
  options.now = [] {
    std::tm t{};
    t.tm_year = 126;
    t.tm_mon = 6;
    t.tm_mday = 4;
    return t;
  };

  ojson cases = ojson::array();
  struct Row {
    double parse_us = 0, render_us = -1;
  };
  std::map<std::string, Row> rows;
  for (const auto& [name, source] : sources) {
    Row& row = rows[name];
    row.parse_us = best_us([&] { ChatTemplate t(source, "<s>", "</s>", options); });
    const ChatTemplate t(source, "<s>", "</s>", options);
    try {
      t.apply(inputs);
      row.render_us = best_us([&] { t.apply(inputs); });
    } catch (const jinja::RenderError&) {}
    cases.push_back({{"name", name}, {"template", source}, {"context", t.render_context(inputs)}});
  }
  std::map<std::string, double> peer;
  if (!no_peer) {
    const std::string in_path = std::filesystem::temp_directory_path() / "parley-bench-templates.json";
    std::ofstream(in_path) << cases.dump();
    const std::string cmd = "/usr/bin/python3 " PARLEY_SOURCE_DIR "/bench/jinja2_timing.py < " + in_path;
    std::string out;
    if (FILE* p = popen(cmd.c_str(), "r")) {
      char buf[4096];
      for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
      pclose(p);
    }
    std::filesystem::remove(in_path);
    for (const auto& r : nlohmann::json::parse(out.empty() ? "[]" : out))
      if (!r["render_us"].is_null()) peer[r["name"]] = r["render_us"];
  }
  std::printf("| template | Parley parse us | Parley render us | Jinja2 render us | ratio |\n|---|---|---|---|---|\n");
  for (const auto& [name, row] : rows) {
    const auto it = peer.find(name);
    if (row.render_us < 0) {
      std::printf("| %s | %.0f | raises | %s | |\n", name.c_str(), row.parse_us,
                  it == peer.end() ? "raises" : "renders");
      continue;
    }
    if (it == peer.end())
      std::printf("| %s | %.0f | %.1f | - | |\n", name.c_str(), row.parse_us, row.render_us);
    else
      std::printf("| %s | %.0f | %.1f | %.1f | %.1fx |\n", name.c_str(), row.parse_us, row.render_us, it->second,
                  it->second / row.render_us);
  }
  return 0;
}

// Python's Jinja2 as transformers sets it up (tests/jinja2_oracle.py), run over a batch of cases in one process,
// and the check that the engine (model/jinja) renders each snippet as it does: shared by the Jinja tests.
#pragma once
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "model/jinja/jinja.hpp"

namespace parley::test {

using Json = nlohmann::ordered_json;

// 2026-07-04 10:30:00, a Saturday: the moment the oracle's strftime_now formats.
inline std::tm fixed_now() {
  std::tm tm{};
  tm.tm_year = 2026 - 1900;
  tm.tm_mon = 6;
  tm.tm_mday = 4;
  tm.tm_hour = 10;
  tm.tm_min = 30;
  tm.tm_wday = 6;
  tm.tm_yday = 184;
  return tm;
}

// tests/jinja2_oracle.py over all the cases in one Python process: Debian's /usr/bin/python3 with python3-jinja2.
inline Json run_jinja2_oracle(const Json& cases) {
  static std::atomic<int> calls{0};
  const std::filesystem::path input =
      std::filesystem::temp_directory_path() /
      ("parley_jinja2_oracle_" + std::to_string(getpid()) + "_" + std::to_string(calls++) + ".json");
  std::ofstream(input) << cases.dump();
  const std::filesystem::path script = std::filesystem::path(__FILE__).parent_path() / "jinja2_oracle.py";
  const std::string command = "/usr/bin/python3 '" + script.string() + "' < '" + input.string() + "' 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe);
  std::string output;
  char buffer[65536];
  while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  const int status = pclose(pipe);
  std::filesystem::remove(input);
  INFO("oracle output: " << output.substr(0, 2000));
  REQUIRE(status == 0);
  Json results = Json::parse(output);
  REQUIRE(results.size() == cases.size());
  return results;
}

inline const Json& snippet_context() {
  static const Json context = Json::parse(R"j({
    "s": "Hello World",
    "n": 3,
    "f": 2.5,
    "l": [3, 1, 2],
    "words": ["b", "A", "c"],
    "d": {"b": 1, "a": 2},
    "people": [{"name": "Ann", "age": 30}, {"name": "bob", "age": 25}],
    "empty": [],
    "none_value": null,
    "t": true,
    "u": "héllo wörld ✓ 中文 😀",
    "floats": [1.0, 0.1, 1e-05, 1e+16, 1.5e+300, -0.0, 123456789.123, 3e-07, 100.0, 1e+22],
    "nested": {"a": {"b": {"c": "deep"}, "list": [1, {"x": null}]}, "z": [true, false], "é": "ü"},
    "msgs": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},
             {"role": "assistant", "content": "yo"}, {"role": "user", "content": "bye"}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
               "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"},
                                                               "days": {"type": "integer"}}, "required": ["city"]}}}]
  })j");
  return context;
}

struct Rendered {
  bool ok;
  std::string text;  // the output, or the error
};

inline Rendered render_with_engine(const std::string& source, const Json& context, const jinja::Options& options) {
  try {
    return {true, jinja::Template(source, options).render(context)};
  } catch (const jinja::ParseError& e) {
    return {false, e.what()};
  } catch (const jinja::RenderError& e) {
    return {false, e.what()};
  }
}

// Every template rendered by the engine and by Jinja2 with the same context: equal text, or both fail.
inline void check_against_jinja2(const std::vector<std::string>& templates, bool trim_blocks = true,
                                 bool lstrip_blocks = true) {
  Json cases = Json::array();
  for (const std::string& source : templates)
    cases.push_back({{"template", source},
                     {"context", snippet_context()},
                     {"trim_blocks", trim_blocks},
                     {"lstrip_blocks", lstrip_blocks}});
  const Json expected = parley::test::run_jinja2_oracle(cases);
  jinja::Options options;
  options.trim_blocks = trim_blocks;
  options.lstrip_blocks = lstrip_blocks;
  options.now = fixed_now;
  for (std::size_t i = 0; i < templates.size(); ++i) {
    const Rendered ours = render_with_engine(templates[i], snippet_context(), options);
    const Json& theirs = expected[i];
    INFO("template: " << templates[i] << "\ntrim_blocks " << trim_blocks << ", lstrip_blocks " << lstrip_blocks);
    INFO("Jinja2: " << theirs.dump());
    INFO("engine: " << (ours.ok ? "" : "(error) ") << ours.text);
    CHECK(ours.ok == theirs["ok"].get<bool>());
    if (ours.ok && theirs["ok"].get<bool>()) CHECK(ours.text == theirs["text"].get<std::string>());
  }
}

}  // namespace parley::test

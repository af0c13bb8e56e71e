// The engine as the HTTP server and `parley generate` see it: submit requests, receive their outputs
// through a sink, abort, ask for metrics and the admin view. No CAF here: this header is what keeps the
// actor framework out of the Beast translation units; actors/engine.cpp spawns and wires the actors. Narrow: value
// types a request and its outputs need, the rest declared (a user that reads the tokenizer includes it).
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/pooling_params.hpp"
#include "engine/request_output.hpp"
#include "engine/sampling_params.hpp"

namespace parley {

class Tokenizer;      // model/tokenizer.hpp
struct LlamaConfig;   // model/llama_config.hpp
struct EngineConfig;  // engine/engine_config.hpp: the flags it starts from
struct EngineView;    // engine/admin_view.hpp: the /admin views
struct ActorView;

// Receives one client request's outputs. Called from actor threads: implementations hand work to their
// own thread (an Asio strand) and must not block.
struct RequestSink {
  virtual ~RequestSink() = default;
  // The submission was admitted (before any output): a streaming response may send its headers now.
  virtual void on_admitted() {}
  // A delta for one of the request's engine requests (req_id tells which); the last has finished() set.
  virtual void on_output(const RequestOutput& output) = 0;
  // The whole submission was refused before any output (status 503 queue full, 400 can never fit).
  virtual void on_rejected(int status, const std::string& message) = 0;
};

// One engine request: a prompt and its parameters. With params.n > 1 it is a parallel-sampling parent:
// child_req_ids names its n children (the first is req_id itself); child i is seeded seed + i, or, with
// no seed, each child draws its own at admission. Outputs arrive under the children's ids.
struct EngineRequestSpec {
  std::string req_id;
  std::vector<int> prompt_token_ids;
  SamplingParams params;  // an unset seed is drawn at admission
  std::vector<std::string> child_req_ids;
  std::optional<PoolingParams> pooling;  // set: a pooling request (params is unused)
};

class EngineClient {
 public:
  virtual ~EngineClient() = default;
  // Loads the model and spawns the actors. Throws std::runtime_error / std::invalid_argument on bad config.
  static std::unique_ptr<EngineClient> start(const EngineConfig& config);

  // All-or-nothing admission of a client request's engine requests.
  virtual void submit(std::vector<EngineRequestSpec> requests, std::shared_ptr<RequestSink> sink) = 0;
  // Client cancel or disconnect: each live id finishes with `abort` and its blocks return to the pool.
  virtual void abort(std::vector<std::string> req_ids) = 0;
  // Aborts every live request (graceful shutdown after its grace period).
  virtual void abort_all() = 0;
  // Prometheus text of every metric.
  virtual void metrics(std::function<void(std::string)> reply) = 0;
  // Every actor with its mailbox depth and messages handled: one list per engine (several with data parallelism).
  virtual void admin_actors(std::function<void(std::vector<std::vector<ActorView>>)> reply) = 0;
  // Every live request (state, tokens, blocks, parent), the KV block pool and the steps: one view per engine.
  virtual void admin_requests(std::function<void(std::vector<EngineView>)> reply) = 0;
  // Forgets every cached prefix: true, or false while a request holds a block (vLLM's reset_prefix_cache).
  virtual void reset_prefix_cache(std::function<void(bool)> reply) = 0;
  // Aborts what is live and stops every actor; waits for them.
  virtual void shutdown() = 0;

  virtual const Tokenizer& tokenizer() const = 0;
  virtual const std::string& model_name() const = 0;
  virtual int max_model_len() const = 0;
  virtual const LlamaConfig& model_config() const = 0;  // the served model's architecture and shape
  virtual const std::string& chat_template() const = 0;
  virtual std::vector<int> eos_token_ids() const = 0;
  virtual int max_n() const = 0;
  // The CPUs its actor threads are pinned to (--cpu-affinity auto), where the HTTP threads belong too; empty: none.
  virtual std::vector<int> service_cpus() const { return {}; }
};

}  // namespace parley

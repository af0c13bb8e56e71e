// A point-to-point link between two devices' memories for KV transfers: NCCL send/recv between
// a prefill and a decode GPU (model/cuda/nccl_link.cpp); an in-process emulation in the tests. Transfers
// pair up in posting order: the i-th send posted on one end fills the i-th receive posted on the other, so
// both ends post every transfer the protocol announces, even one nobody wants any more. Nothing here blocks:
// posts return at once and poll() says what finished.
#pragma once
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace parley {

// The link is broken (the peer is gone, a size did not match, an operation failed): every transfer on it is lost.
struct KvLinkError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct KvLinkPoll {
  bool up = false;             // both ends have joined (transfers posted before that wait, in order)
  std::vector<uint64_t> done;  // tickets finished since the last poll, in posting order
};

class KvLink {
 public:
  virtual ~KvLink() = default;
  // Posts a send of `count` floats of device memory, which must stay valid until its ticket is done.
  virtual uint64_t post_send(const float* data, int64_t count) = 0;
  // Posts a receive of `count` floats into device memory, valid until its ticket is done.
  virtual uint64_t post_recv(float* data, int64_t count) = 0;
  // Throws KvLinkError once the link is broken.
  virtual KvLinkPoll poll() = 0;
  // Gives the link up: pending transfers stop touching their memory before this returns.
  virtual void abort() noexcept = 0;
};

// Makes links for one device: one end creates an id, the actors carry it to the other, both ends open with it.
class KvLinkFactory {
 public:
  virtual ~KvLinkFactory() = default;
  virtual std::string transport() const = 0;  // "nccl"
  // A fresh id (ncclGetUniqueId's bytes) for a new link.
  virtual std::string new_id() = 0;
  // This end (rank 0 or 1) of the link named `id`; it is up once the other end opened too (poll()).
  virtual std::unique_ptr<KvLink> open(const std::string& id, int rank) = 0;
};

}  // namespace parley

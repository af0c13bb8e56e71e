// NCCL links for KV transfers (model/kv_link.hpp): each link is a nonblocking 2-rank communicator with its
// own stream, so a transfer waiting for its peer never holds up the passes, and a link never blocks the
// worker's thread: opening, enqueueing and completion are all polled. Posts wait in order and go out once
// the communicator is up, one at a time while NCCL finishes an enqueue in the background (it connects a
// pair lazily on its first transfer, which needs the peer). ncclCommAbort stops the link's kernels, and
// abort() waits for its stream, so no transfer writes into staging after abort() returns.
#include <nccl.h>

#include <cstring>
#include <deque>
#include <optional>

#include "kernels/cuda/check.hpp"
#include "model/cuda/cuda_model.hpp"

namespace parley::cuda {
namespace {

std::string nccl_error(ncclResult_t r, ncclComm_t comm) {
  std::string why = ncclGetErrorString(r);
  if (const char* last = comm ? ncclGetLastError(comm) : nullptr; last && *last) why += std::string(": ") + last;
  return why;
}

class NcclLink final : public KvLink {
 public:
  NcclLink(int device, const ncclUniqueId& id, int rank) : device_(device), rank_(rank) {
    PARLEY_CUDA_CHECK(cudaSetDevice(device_));
    PARLEY_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // the init proceeds in the background; poll() asks how far it got
    const ncclResult_t r = ncclCommInitRankConfig(&comm_, 2, id, rank, &config);
    if (r != ncclSuccess && r != ncclInProgress) {
      const std::string why = "ncclCommInitRankConfig: " + nccl_error(r, nullptr);
      abort();  // a communicator may have been allocated
      cudaStreamDestroy(stream_);
      throw KvLinkError(why);
    }
  }
  ~NcclLink() override {
    abort();
    for (Op& op : issued_) cudaEventDestroy(op.done);
    cudaStreamDestroy(stream_);
  }

  uint64_t post_send(const float* data, int64_t count) override {
    return post({next_++, const_cast<float*>(data), count, true});
  }
  uint64_t post_recv(float* data, int64_t count) override { return post({next_++, data, count, false}); }

  KvLinkPoll poll() override {
    if (!broken_.empty()) throw KvLinkError(broken_);
    PARLEY_CUDA_CHECK(cudaSetDevice(device_));
    const ncclResult_t state = comm_state();
    if (state == ncclInProgress && !up_) return {false, {}};
    if (state != ncclSuccess && state != ncclInProgress) fail("the NCCL link failed: " + nccl_error(state, comm_));
    up_ = true;
    pump();
    KvLinkPoll p{true, {}};
    while (!issued_.empty()) {
      const cudaError_t e = cudaEventQuery(issued_.front().done);
      if (e == cudaErrorNotReady) {
        cudaGetLastError();  // an expected answer, not an error: the next launch check must not see it
        break;
      }
      if (e != cudaSuccess) fail(std::string("a KV transfer on the NCCL link failed: ") + cudaGetErrorString(e));
      cudaEventDestroy(issued_.front().done);
      p.done.push_back(issued_.front().ticket);
      issued_.pop_front();
    }
    return p;
  }

  void abort() noexcept override {
    if (!comm_) return;
    cudaSetDevice(device_);
    ncclCommAbort(comm_);  // also frees the communicator
    comm_ = nullptr;
    cudaStreamSynchronize(stream_);  // the staging may be reused (pooled) once this returns
    cudaGetLastError();
    if (broken_.empty()) broken_ = "the NCCL link was aborted";
  }

 private:
  struct Op {
    uint64_t ticket;
    float* data;
    int64_t count;
    bool send;
    cudaEvent_t done = nullptr;
  };

  uint64_t post(Op op) {
    if (!broken_.empty()) throw KvLinkError(broken_);
    PARLEY_CUDA_CHECK(cudaSetDevice(device_));
    waiting_.push_back(op);
    pump();
    return op.ticket;
  }

  ncclResult_t comm_state() {
    ncclResult_t state = ncclSuccess;
    if (const ncclResult_t r = ncclCommGetAsyncError(comm_, &state); r != ncclSuccess) state = r;
    return state;
  }

  // Enqueues waiting ops on the link's stream in order. A nonblocking communicator may answer ncclInProgress
  // and finish the enqueue in the background: until it says ncclSuccess, no other NCCL call or stream work
  // may touch it, so the op stays in `enqueuing_` and a later poll goes on.
  void pump() {
    if (!up_) return;
    for (;;) {
      if (enqueuing_) {
        const ncclResult_t r = comm_state();
        if (r == ncclInProgress) return;
        if (r != ncclSuccess) fail(std::string(enqueuing_->send ? "ncclSend: " : "ncclRecv: ") + nccl_error(r, comm_));
        enqueued(*enqueuing_);
        enqueuing_.reset();
      }
      if (waiting_.empty()) return;
      const Op op = waiting_.front();
      waiting_.pop_front();
      const int peer = 1 - rank_;
      const ncclResult_t r = op.send ? ncclSend(op.data, size_t(op.count), ncclFloat, peer, comm_, stream_)
                                     : ncclRecv(op.data, size_t(op.count), ncclFloat, peer, comm_, stream_);
      if (r == ncclInProgress)
        enqueuing_ = op;
      else if (r != ncclSuccess)
        fail(std::string(op.send ? "ncclSend: " : "ncclRecv: ") + nccl_error(r, comm_));
      else
        enqueued(op);
    }
  }
  // The op is on the stream: an event after it tells when it is done. Without one the op cannot be tracked,
  // so the link is lost (abort waits for the stream: the op's staging is free after it).
  void enqueued(Op op) {
    if (const cudaError_t e = cudaEventCreateWithFlags(&op.done, cudaEventDisableTiming); e != cudaSuccess)
      fail(std::string("cudaEventCreate for a KV transfer: ") + cudaGetErrorString(e));
    if (const cudaError_t e = cudaEventRecord(op.done, stream_); e != cudaSuccess) {
      cudaEventDestroy(op.done);
      fail(std::string("cudaEventRecord for a KV transfer: ") + cudaGetErrorString(e));
    }
    issued_.push_back(op);
  }

  [[noreturn]] void fail(std::string why) {
    broken_ = std::move(why);
    abort();
    throw KvLinkError(broken_);
  }

  int device_, rank_;
  cudaStream_t stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
  bool up_ = false;
  std::string broken_;
  uint64_t next_ = 1;
  std::deque<Op> waiting_, issued_;  // not yet enqueued; on the stream, in order
  std::optional<Op> enqueuing_;      // enqueued, NCCL still finishing it
};

class NcclLinkFactory final : public KvLinkFactory {
 public:
  explicit NcclLinkFactory(int device) : device_(device) {}
  std::string transport() const override { return "nccl"; }
  std::string new_id() override {
    ncclUniqueId id;
    if (const ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess)
      throw KvLinkError("ncclGetUniqueId: " + nccl_error(r, nullptr));
    return std::string(id.internal, sizeof(id.internal));
  }
  std::unique_ptr<KvLink> open(const std::string& id, int rank) override {
    ncclUniqueId uid;
    if (id.size() != sizeof(uid.internal))
      throw KvLinkError("an NCCL link id has " + std::to_string(sizeof(uid.internal)) + " bytes, got " +
                        std::to_string(id.size()));
    if (rank != 0 && rank != 1) throw std::invalid_argument("a link has ranks 0 and 1");
    std::memcpy(uid.internal, id.data(), id.size());
    return std::make_unique<NcclLink>(device_, uid, rank);
  }

 private:
  int device_;
};

}  // namespace

std::shared_ptr<KvLinkFactory> nccl_link_factory(int device) {
  std::string why;
  if (device < 0 || device >= device_count(&why))
    throw std::invalid_argument("--kv-transport nccl: no CUDA device " + std::to_string(device) +
                                (why.empty() ? "" : " (" + why + ")"));
  return std::make_shared<NcclLinkFactory>(device);
}

}  // namespace parley::cuda

// The in-process stand-in for NCCL links (model/kv_link.hpp): a hub pairs two ends by id and matches one
// end's sends with the other's receives in posting order, copying when both are posted, as NCCL would. A
// size mismatch breaks the link (NCCL would corrupt memory or hang); an end that aborts simply stops, and
// its peer's transfers never finish (they run into their deadline), as with a dead process. A delay makes
// each transfer take at least that long, as a wire would.
#pragma once
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>

#include "model/device_model.hpp"
#include "model/kv_link.hpp"
#include "test_support.hpp"

namespace parley::test {

class HostKvLinkHub final : public KvLinkFactory {
  using Clock = std::chrono::steady_clock;
  struct Op {
    uint64_t ticket;
    float* data;
    int64_t count;
    Clock::time_point posted;
  };
  struct Channel {
    bool joined[2] = {false, false}, aborted[2] = {false, false};
    std::string broken;
    std::deque<Op> sends[2], recvs[2];
    std::vector<uint64_t> done[2];
    uint64_t next_ticket = 1;
  };

  class End final : public KvLink {
   public:
    End(HostKvLinkHub& hub, std::shared_ptr<Channel> c, int rank) : hub_(hub), c_(std::move(c)), rank_(rank) {}
    ~End() override { abort(); }
    uint64_t post_send(const float* data, int64_t count) override {
      return post(c_->sends[rank_], const_cast<float*>(data), count);
    }
    uint64_t post_recv(float* data, int64_t count) override { return post(c_->recvs[rank_], data, count); }
    KvLinkPoll poll() override {
      std::lock_guard lock(hub_.mutex_);
      if (!hub_.device_error_.empty()) throw std::runtime_error(hub_.device_error_);
      if (!c_->broken.empty()) throw KvLinkError(c_->broken);
      for (int from : {0, 1}) match(from);
      return {c_->joined[0] && c_->joined[1], std::exchange(c_->done[rank_], {})};
    }
    void abort() noexcept override {
      std::lock_guard lock(hub_.mutex_);
      c_->aborted[rank_] = true;
      c_->sends[rank_].clear(), c_->recvs[rank_].clear();
    }

   private:
    uint64_t post(std::deque<Op>& q, float* data, int64_t count) {
      std::lock_guard lock(hub_.mutex_);
      if (hub_.fail_posts_) throw KvLinkError("the link took no transfer (emulated NIC failure)");
      const uint64_t t = c_->next_ticket++;
      q.push_back({t, data, count, Clock::now()});
      return t;
    }
    // Pairs `from`'s sends with the other end's receives, in order.
    void match(int from) {
      const int to = 1 - from;
      if (!c_->joined[0] || !c_->joined[1] || c_->aborted[from] || c_->aborted[to]) return;
      while (!c_->sends[from].empty() && !c_->recvs[to].empty()) {
        const Op s = c_->sends[from].front(), r = c_->recvs[to].front();
        if (Clock::now() - std::max(s.posted, r.posted) < hub_.delay_) return;
        if (s.count != r.count) {
          c_->broken = "a send of " + std::to_string(s.count) + " floats met a receive of " + std::to_string(r.count);
          throw KvLinkError(c_->broken);
        }
        std::memcpy(r.data, s.data, size_t(s.count) * 4);
        c_->sends[from].pop_front(), c_->recvs[to].pop_front();
        c_->done[from].push_back(s.ticket), c_->done[to].push_back(r.ticket);
        ++hub_.transfers_;
      }
    }
    HostKvLinkHub& hub_;
    std::shared_ptr<Channel> c_;
    int rank_;
  };

 public:
  std::string transport() const override { return "host-emulated-nccl"; }
  std::string new_id() override {
    std::lock_guard lock(mutex_);
    return "link-" + std::to_string(++ids_);
  }
  std::unique_ptr<KvLink> open(const std::string& id, int rank) override {
    std::lock_guard lock(mutex_);
    if (rank != 0 && rank != 1) throw std::invalid_argument("a link has ranks 0 and 1");
    if (refuse_opens_) throw KvLinkError("no link can be opened now");
    auto& c = channels_[id];
    if (!c) c = std::make_shared<Channel>();
    if (c->joined[rank]) throw KvLinkError("rank " + std::to_string(rank) + " of " + id + " joined twice");
    c->joined[rank] = true;
    return std::make_unique<End>(*this, c, rank);
  }
  // Each transfer from now on completes no sooner than this after both its ends are posted.
  void set_delay(std::chrono::milliseconds delay) {
    std::lock_guard lock(mutex_);
    delay_ = delay;
  }
  // While set, opening a link fails (the NIC is still down).
  void refuse_opens(bool refuse) {
    std::lock_guard lock(mutex_);
    refuse_opens_ = refuse;
  }
  // While set, posting a transfer throws (the NIC fails as it is handed one).
  void fail_posts(bool fail) {
    std::lock_guard lock(mutex_);
    fail_posts_ = fail;
  }
  // While set, polling any end throws this as a device error (not KvLinkError), as a CUDA call under NCCL would.
  void device_error(const std::string& what) {
    std::lock_guard lock(mutex_);
    device_error_ = what;
  }
  // Both ends of every link see it broken from their next poll (a NIC or driver failure).
  void break_all(const std::string& why) {
    std::lock_guard lock(mutex_);
    for (auto& [id, c] : channels_) c->broken = why;
  }
  int64_t transfers() const {
    std::lock_guard lock(mutex_);
    return transfers_;
  }
  // Ends joined and not yet aborted or closed (each would hold a communicator).
  int open_ends() const {
    std::lock_guard lock(mutex_);
    int n = 0;
    for (const auto& [id, c] : channels_)
      for (int rank : {0, 1}) n += c->joined[rank] && !c->aborted[rank];
    return n;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Channel>> channels_;
  uint64_t ids_ = 0;
  int64_t transfers_ = 0;
  Clock::duration delay_{};
  bool refuse_opens_ = false, fail_posts_ = false;
  std::string device_error_;
};

// Every block of `d` filled with distinct random values, so a block landing in the wrong place shows.
inline void fill_random_kv(DeviceModel& d, uint32_t seed) {
  std::vector<int> all(size_t(d.num_blocks()));
  for (int b = 0; b < d.num_blocks(); ++b) all[size_t(b)] = b;
  d.import_blocks(all, kv_bytes_of(random_floats(d.export_blocks(std::vector<int>{0}).size() / 4 * all.size(), seed)));
}

}  // namespace parley::test

// The forward pass and the KV blocks on one device, as the model runner sees them: the CPU implements it
// over LlamaModel and KvCache (below), CUDA over device memory (model/cuda/cuda_model.hpp).
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/sampling.hpp"
#include "model/kv_cache.hpp"
#include "model/llama.hpp"

namespace parley {

// What a device did beyond the passes (graph replays are counted from forward()'s answer, by the scheduler).
struct DeviceStats {
  int64_t rows_sampled_on_device = 0;
};

// Logits rows a device samples itself, so they never leave it: which rows (indices into logits_indices)
// and how (temperature, min_p, the request's Philox draw); forward() fills tokens, one per row.
struct DeviceSampling {
  std::vector<int> logits_rows;
  std::vector<cuda::body::SampleParams> params;
  std::vector<int> tokens;
  bool empty() const { return logits_rows.empty(); }
};

// Device memory holding blocks in export_blocks's layout while a link transfer (model/kv_link.hpp) is in
// flight, so the blocks themselves are free again at once (sends) or untouched until the data is whole (receives).
// Sized in 4-byte words, the link's unit: a block's bytes are always whole words (keys and values, 2 or 4 bytes).
class KvStaging {
 public:
  virtual ~KvStaging() = default;
  virtual float* data() = 0;
  virtual int64_t size() const = 0;  // 4-byte words
};

// Staging in host memory: where the device's memory is the host's.
class HostKvStaging final : public KvStaging {
 public:
  explicit HostKvStaging(std::span<const uint8_t> bytes) : data_((bytes.size() + 3) / 4) {
    std::memcpy(data_.data(), bytes.data(), bytes.size());
  }
  explicit HostKvStaging(int64_t words) : data_(size_t(words)) {}
  float* data() override { return data_.data(); }
  int64_t size() const override { return int64_t(data_.size()); }

 private:
  std::vector<float> data_;
};

class DeviceModel {
 public:
  virtual ~DeviceModel() = default;
  virtual const LlamaConfig& config() const = 0;
  virtual std::string device_name() const = 0;  // "cpu", "cuda:0"
  // Runs the batch over this device's KV blocks and fills logits[logits_indices.size()][vocab_size] on the host,
  // except the rows `sampling` names (only where samples_on_device()): those it samples into sampling->tokens.
  // Returns true when the pass replayed a captured graph rather than running eagerly.
  virtual bool forward(const ForwardBatch& batch, std::vector<float>& logits, DeviceSampling* sampling = nullptr) = 0;
  // Whether forward() can sample plain rows itself (Sampler::plain_row), sparing their logits the trip to the host.
  virtual bool samples_on_device() const { return false; }
  // The hidden state of every token of the last forward() on the host (empty where the device keeps none there).
  virtual std::span<const float> hidden_states() const { return {}; }
  // After the final norm, of each token the last forward() named in batch.hidden_indices, in that order (pooling);
  // empty where the device cannot pool (CPU only so far).
  virtual std::span<const float> normed_hidden_states() const { return {}; }
  // A reranker's head, applied to the pooled hidden state on the host; nullptr where the model has none.
  virtual const ClassifierHead* classifier() const { return nullptr; }

  virtual int num_blocks() const = 0;
  virtual int block_size() const = 0;
  virtual KvDtype kv_dtype() const = 0;
  // Which layers share which block table (the forward pass takes one per group).
  virtual const KvCacheLayout& kv_layout() const = 0;
  // Copies one block's keys and values in every slot (a split child's partial block).
  virtual void copy_block(int src, int dst) = 0;
  // The layout and error contract of KvCache::export_blocks / import_blocks (the same bytes on every device).
  virtual std::vector<uint8_t> export_blocks(std::span<const int> block_ids) const = 0;
  virtual void import_blocks(std::span<const int> block_ids, std::span<const uint8_t> data) = 0;
  // A copy of these blocks in new staging memory, taken after every pass before (a link send's source).
  virtual std::unique_ptr<KvStaging> stage_blocks(std::span<const int> block_ids) const {
    return std::make_unique<HostKvStaging>(export_blocks(block_ids));
  }
  // Staging memory for a link receive of `words` (4 bytes each).
  virtual std::unique_ptr<KvStaging> new_staging(int64_t words) const { return std::make_unique<HostKvStaging>(words); }
  // Writes staged KV into these blocks, before any later pass (the import_blocks contract).
  virtual void unstage_blocks(KvStaging& staged, std::span<const int> block_ids) {
    import_blocks(block_ids, {reinterpret_cast<const uint8_t*>(staged.data()), size_t(staged.size()) * 4});
  }

  // The host model and KV for proposers that run the model themselves (draft, layer skip, MTP): CPU only.
  virtual LlamaModel* host_model() { return nullptr; }
  virtual KvCache* host_kv() { return nullptr; }
  virtual DeviceStats stats() const { return {}; }
  // Host threads the forward pass keeps computing (none while a GPU computes): work overlapped with the
  // pass needs a core beyond these.
  virtual int host_compute_threads() const { return 0; }
};

// The CPU: the model (shared, read-only weights) and this runner's own KV cache.
class CpuDeviceModel final : public DeviceModel {
 public:
  CpuDeviceModel(LlamaModel& model, int num_blocks, int block_size, KvDtype kv_dtype = KvDtype::F32)
      : model_(model), kv_(model.config(), num_blocks, block_size, kv_dtype) {}
  const LlamaConfig& config() const override { return model_.config(); }
  std::string device_name() const override { return "cpu"; }
  bool forward(const ForwardBatch& batch, std::vector<float>& logits, DeviceSampling* sampling = nullptr) override {
    if (sampling && !sampling->empty()) throw std::logic_error("CpuDeviceModel: the CPU samples on the host");
    model_.forward(batch, kv_, logits);
    return false;
  }
  std::span<const float> hidden_states() const override { return model_.hidden_states(); }
  std::span<const float> normed_hidden_states() const override { return model_.normed_hidden_states(); }
  const ClassifierHead* classifier() const override { return model_.classifier(); }
  int num_blocks() const override { return kv_.num_blocks(); }
  int block_size() const override { return kv_.block_size(); }
  KvDtype kv_dtype() const override { return kv_.dtype(); }
  const KvCacheLayout& kv_layout() const override { return kv_.layout(); }
  void copy_block(int src, int dst) override { kv_.copy_block(src, dst); }
  std::vector<uint8_t> export_blocks(std::span<const int> ids) const override { return kv_.export_blocks(ids); }
  void import_blocks(std::span<const int> ids, std::span<const uint8_t> data) override { kv_.import_blocks(ids, data); }
  LlamaModel* host_model() override { return &model_; }
  KvCache* host_kv() override { return &kv_; }
  int host_compute_threads() const override { return model_.backend().threads(); }

 private:
  LlamaModel& model_;
  KvCache kv_;
};

}  // namespace parley

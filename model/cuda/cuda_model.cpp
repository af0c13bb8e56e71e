// DeviceLlama over CUDA: device memory, the stream's copies, CUDA graph capture, and the kernels of CudaBackend.
#include "model/cuda/cuda_model.hpp"

#include <functional>

#include "model/cuda/device_llama.hpp"
#include "kernels/cuda/ops.hpp"

namespace parley::cuda {
namespace {

// Selects the device before CudaBackend (a later base) creates its stream and cuBLAS handle on it.
struct BindDevice {
  explicit BindDevice(int device) : device_(device) { PARLEY_CUDA_CHECK(cudaSetDevice(device)); }
  int device_;
};

class CudaOps : private BindDevice, public CudaBackend {
 public:
  using Buffer = DeviceBuffer;
  using Matrix = DeviceMatrix;
  class Graph {
   public:
    Graph(cudaGraph_t g, cudaGraphExec_t e) : graph_(g), exec_(e) {}
    Graph(Graph&& o) noexcept : graph_(std::exchange(o.graph_, nullptr)), exec_(std::exchange(o.exec_, nullptr)) {}
    Graph(const Graph&) = delete;
    ~Graph() {
      if (exec_) cudaGraphExecDestroy(exec_);
      if (graph_) cudaGraphDestroy(graph_);
    }
    cudaGraphExec_t exec() const { return exec_; }
    void set_exec(cudaGraphExec_t e) { exec_ = e; }

   private:
    cudaGraph_t graph_;
    cudaGraphExec_t exec_;
  };

  CudaOps(int device, DType dtype) : BindDevice(device), dtype_(dtype) {}

  // The calling thread (the worker actor's) works on this device from now on.
  void activate() const { PARLEY_CUDA_CHECK(cudaSetDevice(device_)); }
  std::string name() const { return "cuda:" + std::to_string(device_); }
  Buffer alloc(size_t bytes) const { return DeviceBuffer(bytes); }
  // KV transfer staging comes and goes while NCCL kernels run: stream-ordered, so freeing it waits for nothing.
  Buffer alloc_staging(size_t bytes) const { return DeviceBuffer::stream_ordered(bytes, stream()); }
  void upload(void* dst, const void* src, size_t bytes) const {
    PARLEY_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream()));
  }
  void download(void* dst, const void* src, size_t bytes) const {
    PARLEY_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream()));
    synchronize();
  }
  void copy(void* dst, const void* src, size_t bytes) const {
    PARLEY_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream()));
  }
  Matrix upload_matrix(const float* w, int N, int K) const { return CudaBackend::upload_matrix(w, N, K, dtype_); }

  // Free and total bytes of this device, once what is queued has run.
  DeviceMemory memory() const {
    synchronize();
    size_t free = 0, total = 0;
    PARLEY_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    return {int64_t(free), int64_t(total)};
  }

  Graph capture(const std::function<void()>& pass) const {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    synchronize();
    PARLEY_CUDA_CHECK(cudaStreamBeginCapture(stream(), cudaStreamCaptureModeThreadLocal));
    try {
      pass();
    } catch (...) {
      cudaStreamEndCapture(stream(), &graph);  // leave the stream usable before reporting
      if (graph) cudaGraphDestroy(graph);
      cudaGetLastError();  // the failed capture's error is reported by the exception, not by the next launch
      throw;
    }
    PARLEY_CUDA_CHECK(cudaStreamEndCapture(stream(), &graph));
    Graph g(graph, nullptr);  // destroys the graph if instantiation fails
    PARLEY_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    g.set_exec(exec);
    return g;
  }
  // Zeroes device memory on the stream (a KV cache is larger than any host buffer should be).
  void zero(void* dst, size_t bytes) const { PARLEY_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, stream())); }
  void replay(const Graph& g) const { PARLEY_CUDA_CHECK(cudaGraphLaunch(g.exec(), stream())); }

 private:
  DType dtype_;
};

}  // namespace

bool compiled() { return true; }

int device_count(std::string* why) {
  int n = 0;
  const cudaError_t status = cudaGetDeviceCount(&n);
  if (status != cudaSuccess) {
    if (why)
      *why = std::string("no CUDA device: ") + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")";
    return 0;
  }
  if (n == 0 && why) *why = "no CUDA device present";
  return n;
}

std::unique_ptr<DeviceModel> make_model(const LlamaConfig& config, const LlamaWeights& weights,
                                        const CudaModelOptions& o) {
  std::string why;
  const int n = device_count(&why);
  if (o.device < 0 || o.device >= n)
    throw std::invalid_argument("--device cuda: device " + std::to_string(o.device) + " does not exist" +
                                (n == 0 ? ": " + why : " (" + std::to_string(n) + " present)"));
  auto ops = std::make_unique<CudaOps>(o.device, parse_dtype(o.dtype));
  return std::make_unique<DeviceLlama<CudaOps>>(std::move(ops), config, weights, o.model);
}

}  // namespace parley::cuda

#include "calibration/bench/kernels.hpp"

#include <cstdint>

namespace commstack::bench {
namespace {

// Grid-stride loops: one launch covers any size with a grid that fills the GPU once.
__global__ void copy_kernel(uint4* __restrict__ dst, const uint4* __restrict__ src, std::size_t n16) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n16;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

__global__ void copy_tail_kernel(unsigned char* dst, const unsigned char* src, std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) dst[i] = src[i];
}

__global__ void reduce_kernel(float* __restrict__ a, const float* __restrict__ b, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    a[i] += b[i];
}

__global__ void empty_kernel() {}

__global__ void fill_kernel(unsigned char* dst, unsigned char value, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    dst[i] = value;
}

constexpr int kThreads = 512;

unsigned grid_for(std::size_t n) {
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  const std::size_t want = (n + kThreads - 1) / kThreads;
  const std::size_t cap = static_cast<std::size_t>(sms > 0 ? sms : 1) * 8;
  return static_cast<unsigned>(want < 1 ? 1 : (want < cap ? want : cap));
}

}  // namespace

cudaError_t launch_copy(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
  const std::size_t n16 = bytes / 16;
  if (n16) copy_kernel<<<grid_for(n16), kThreads, 0, stream>>>(static_cast<uint4*>(dst), static_cast<const uint4*>(src), n16);
  const std::size_t tail = bytes - n16 * 16;
  if (tail)
    copy_tail_kernel<<<1, 16, 0, stream>>>(static_cast<unsigned char*>(dst) + n16 * 16,
                                           static_cast<const unsigned char*>(src) + n16 * 16, tail);
  return cudaGetLastError();
}

cudaError_t launch_reduce_sum(float* a, const float* b, std::size_t count, cudaStream_t stream) {
  if (count) reduce_kernel<<<grid_for(count), kThreads, 0, stream>>>(a, b, count);
  return cudaGetLastError();
}

cudaError_t launch_empty(cudaStream_t stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
  return cudaGetLastError();
}

cudaError_t launch_fill(void* dst, unsigned char value, std::size_t bytes, cudaStream_t stream) {
  if (bytes) fill_kernel<<<grid_for(bytes), kThreads, 0, stream>>>(static_cast<unsigned char*>(dst), value, bytes);
  return cudaGetLastError();
}

}  // namespace commstack::bench

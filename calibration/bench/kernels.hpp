#pragma once
// Device kernels of the bench (kernels.cu), callable from host C++: a vectorized copy, an
// element-wise float sum (the reduction NCCL's kernels do per step), an empty kernel for launch
// overhead, and a byte fill to give GEMM inputs non-zero data.
#include <cstddef>

#include <cuda_runtime.h>

namespace commstack::bench {

cudaError_t launch_copy(void* dst, const void* src, std::size_t bytes, cudaStream_t stream);
// a[i] += b[i] for `count` floats.
cudaError_t launch_reduce_sum(float* a, const float* b, std::size_t count, cudaStream_t stream);
cudaError_t launch_empty(cudaStream_t stream);
cudaError_t launch_fill(void* dst, unsigned char value, std::size_t bytes, cudaStream_t stream);

}  // namespace commstack::bench

# The CUDA bench program. Included from calibration/bench/CMakeLists.txt once CUDA, NCCL and cuBLAS
# are known to be present. Only kernels.cu goes through nvcc (three architectures, small file, so
# CI's two cores compile it in seconds); everything else is host C++ with the project's warnings.
if(NOT CMAKE_CUDA_COMPILER)
  set(CMAKE_CUDA_COMPILER "${CUDAToolkit_NVCC_EXECUTABLE}")
endif()
if(CCACHE_PROGRAM)
  set(CMAKE_CUDA_COMPILER_LAUNCHER "${CCACHE_PROGRAM}")
endif()
enable_language(CUDA)

add_library(commstack_bench_kernels STATIC kernels.cu)
set_target_properties(commstack_bench_kernels PROPERTIES CUDA_ARCHITECTURES "80;90;100" CUDA_STANDARD 17
                                                         POSITION_INDEPENDENT_CODE ON)
target_include_directories(commstack_bench_kernels PRIVATE ${PROJECT_SOURCE_DIR})
# Host-side warnings of the .cu file go through -Xcompiler; device warnings are errors too.
set(bench_cuda_flags -Xcompiler=-Wall,-Wextra)
if(COMMSTACK_WERROR)
  list(APPEND bench_cuda_flags -Werror=all-warnings -Xcompiler=-Werror)
endif()
target_compile_options(commstack_bench_kernels PRIVATE ${bench_cuda_flags})

find_package(MPI QUIET COMPONENTS CXX)
add_executable(commstack-bench bench_main.cpp comm.cpp gpu_util.cpp measure_coll.cpp measure_p2p.cpp
                               measure_device.cpp process_group.cpp)
target_include_directories(commstack-bench PRIVATE ${PROJECT_SOURCE_DIR})
target_include_directories(commstack-bench SYSTEM PRIVATE ${NCCL_INCLUDE_DIR})
target_link_libraries(commstack-bench PRIVATE commstack_bench_kernels commstack_bench_host commstack_common
                      CUDA::cudart CUDA::cublas CUDA::cublasLt ${NCCL_LIBRARY} CLI11::CLI11 Threads::Threads
                      commstack_warnings)
if(MPI_CXX_FOUND)
  target_compile_definitions(commstack-bench PRIVATE COMMSTACK_BENCH_MPI=1)
  target_link_libraries(commstack-bench PRIVATE MPI::MPI_CXX)
  message(STATUS "commstack-bench: CUDA, NCCL and MPI found: one process per GPU under mpirun/srun")
else()
  message(STATUS "commstack-bench: CUDA and NCCL found, MPI not found: single-process bench over the local GPUs")
endif()

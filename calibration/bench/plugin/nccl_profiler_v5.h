#pragma once
// NCCL profiler plugin interface, version 5 (NCCL 2.28), written for this project from the
// interface documented in NCCL's plugins/profiler/README.md: NCCL asks plugins to carry their own
// definitions of the struct versions they implement. Field order and types must match NCCL's ABI
// exactly; only the comments are ours.
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include <nccl.h>

// The event descriptors are C structs declared inside anonymous unions, as NCCL declares them (the
// layout is the ABI); clang's -Wpedantic calls that an extension in C++, GCC does not warn.
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wnested-anon-types"
#endif

extern "C" {

// NCCL's logger callback (level and subsystem flags, then printf-style text).
typedef void (*ncclDebugLogger_t)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

// Event descriptor passed to startEvent. `type` is one event bit (ncclProfileColl = 2, ...).
typedef struct {
  uint64_t type;
  void* parentObj;  // the handle this plugin returned for the parent event, or null
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      int root;
      void* stream;
      bool graphCaptured;
    } collApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      void* stream;
      bool graphCaptured;
    } p2pApi;
    struct {
      void* stream;
    } kernelLaunch;
    struct {
      uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
      void* parentGroup;  // v4 compatibility
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
      void* parentGroup;  // v4 compatibility
    } p2p;
    struct {
      pid_t pid;  // process that created the proxy op: the parent pointer is only valid in that process (PXN)
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
      uint64_t pTimer;  // GPU globaltimer (ns) at the channel's start
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
} ncclProfilerEventDescr_v5_t;

// State values of recordEventState (subset named in calibration/bench/profiler_events.hpp).
typedef enum {
  ncclProfilerV5StateUnused = 0,
  ncclProfilerV5StateMax = 24
} ncclProfilerEventState_v5_t;

typedef union {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void* data;
  } netPlugin;
  struct {
    uint64_t pTimer;  // GPU globaltimer (ns) at KernelChStop
  } kernelCh;
} ncclProfilerEventStateArgs_v5_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                       int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v5_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_v5_t eState,
                                   ncclProfilerEventStateArgs_v5_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v5_t;

}  // extern "C"

#if defined(__clang__)
#pragma clang diagnostic pop
#endif

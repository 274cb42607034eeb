/*
 * cuda_runtime_api.h (kernel emulator) -- the part of the CUDA runtime API that cuda/'s kernels
 * and dispatch call, declared for a build with no CUDA toolkit: "device memory" is host memory,
 * a stream is a tag (work runs at once on the calling thread), and errors are kept per thread
 * as cudaGetLastError reports them. Values of the enums are the real runtime's, so a plan or
 * message made here means what it means on a GPU.
 *
 * Only tests/cuda-emu/ puts this directory on an include path; nothing installed sees it.
 */
#ifndef GGMLX_EMU_CUDA_RUNTIME_API_H
#define GGMLX_EMU_CUDA_RUNTIME_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cudaError {
    cudaSuccess                           = 0,
    cudaErrorInvalidValue                 = 1,
    cudaErrorMemoryAllocation             = 2,
    cudaErrorInitializationError          = 3,
    cudaErrorInvalidConfiguration         = 9,
    cudaErrorInvalidDevice                = 101,
    cudaErrorNoDevice                     = 100,
    cudaErrorInvalidResourceHandle        = 400,
    cudaErrorNotReady                     = 600,
    cudaErrorHostMemoryAlreadyRegistered  = 712,
    cudaErrorHostMemoryNotRegistered      = 713,
    cudaErrorIllegalAddress               = 700,
    cudaErrorLaunchOutOfResources         = 701,
    cudaErrorLaunchTimeout                = 702,
    cudaErrorIllegalInstruction           = 715,
    cudaErrorMisalignedAddress            = 716,
    cudaErrorInvalidAddressSpace          = 717,
    cudaErrorInvalidPc                    = 718,
    cudaErrorLaunchFailure                = 719,
    cudaErrorNvlinkUncorrectable          = 220,
    cudaErrorECCUncorrectable             = 214,
    cudaErrorContextIsDestroyed           = 709,
    cudaErrorAssert                       = 710,
    cudaErrorHardwareStackError           = 714,
    cudaErrorStreamCaptureUnsupported     = 900,
    cudaErrorStreamCaptureInvalidated     = 901,
    cudaErrorStreamCaptureUnmatched       = 903,
    cudaErrorGraphExecUpdateFailure       = 910,
    cudaErrorUnknown                      = 999,
} cudaError_t;

enum cudaMemcpyKind {
    cudaMemcpyHostToHost     = 0,
    cudaMemcpyHostToDevice   = 1,
    cudaMemcpyDeviceToHost   = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault        = 4,
};

/* Streams and events live in emu-cudart.cpp. The default stream (NULL) and the per-thread one
 * run their work at once on the calling thread; a created stream is a worker thread draining
 * its own queue, so work on it really is asynchronous. */
typedef struct ggmlx_emu_stream * cudaStream_t;
typedef struct ggmlx_emu_event *  cudaEvent_t;
typedef struct ggmlx_emu_graph *  cudaGraph_t;
typedef struct ggmlx_emu_exec *   cudaGraphExec_t;

#define cudaStreamPerThread ((cudaStream_t) 0x2)
#define cudaStreamDefault     0x0
#define cudaStreamNonBlocking 0x1
#define cudaEventDefault       0x0
#define cudaEventBlockingSync  0x1
#define cudaEventDisableTiming 0x2
#define cudaHostRegisterDefault  0x0
#define cudaHostRegisterPortable 0x1
#define cudaHostRegisterMapped   0x2
#define cudaHostRegisterReadOnly 0x8
#define cudaEnableDefault 0x0
#define CUDART_CB

typedef void (*cudaHostFn_t)(void * user_data);

enum cudaStreamCaptureMode {
    cudaStreamCaptureModeGlobal      = 0,
    cudaStreamCaptureModeThreadLocal = 1,
    cudaStreamCaptureModeRelaxed     = 2,
};

enum cudaDriverEntryPointQueryResult {
    cudaDriverEntryPointSuccess            = 0,
    cudaDriverEntryPointSymbolNotFound     = 1,
    cudaDriverEntryPointVersionNotSufficent = 2,
};

enum cudaDeviceAttr {
    cudaDevAttrMemoryPoolsSupported = 115,
};

enum cudaGraphExecUpdateResult {
    cudaGraphExecUpdateSuccess = 0,
    cudaGraphExecUpdateError   = 1,
};

typedef struct cudaGraphExecUpdateResultInfo {
    enum cudaGraphExecUpdateResult result;
    void *                         errorNode;
    void *                         errorFromNode;
} cudaGraphExecUpdateResultInfo;

/* the fields the backend reads; the real struct has many more */
struct cudaDeviceProp {
    char   name[256];
    size_t totalGlobalMem;
    int    major;
    int    minor;
    int    multiProcessorCount;
};

cudaError_t  cudaGetLastError(void);
cudaError_t  cudaPeekAtLastError(void);
const char * cudaGetErrorString(cudaError_t error);
const char * cudaGetErrorName(cudaError_t error);

cudaError_t cudaGetDeviceCount(int * count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int * device);
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp * prop, int device);
cudaError_t cudaDeviceGetAttribute(int * value, enum cudaDeviceAttr attr, int device);
cudaError_t cudaDeviceGetPCIBusId(char * bus_id, int len, int device);
cudaError_t cudaMemGetInfo(size_t * free_bytes, size_t * total_bytes);
cudaError_t cudaGetDriverEntryPointByVersion(const char * symbol, void ** fn, unsigned int version,
                                             unsigned long long flags, enum cudaDriverEntryPointQueryResult * status);

cudaError_t cudaMalloc(void ** ptr, size_t size);
cudaError_t cudaFree(void * ptr);
cudaError_t cudaMallocAsync(void ** ptr, size_t size, cudaStream_t stream);
cudaError_t cudaFreeAsync(void * ptr, cudaStream_t stream);
cudaError_t cudaMallocHost(void ** ptr, size_t size);
cudaError_t cudaFreeHost(void * ptr);
cudaError_t cudaHostRegister(void * ptr, size_t size, unsigned int flags);
cudaError_t cudaHostUnregister(void * ptr);
cudaError_t cudaHostGetDevicePointer(void ** dev_ptr, void * host_ptr, unsigned int flags);

cudaError_t cudaMemcpyAsync(void * dst, const void * src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemcpy2DAsync(void * dst, size_t dpitch, const void * src, size_t spitch, size_t width, size_t height,
                              enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemcpyPeerAsync(void * dst, int dst_device, const void * src, int src_device, size_t count,
                                cudaStream_t stream);
cudaError_t cudaMemsetAsync(void * dst, int value, size_t count, cudaStream_t stream);

cudaError_t cudaStreamCreateWithFlags(cudaStream_t * stream, unsigned int flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamQuery(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags);
cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void * user_data);

cudaError_t cudaEventCreate(cudaEvent_t * event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t * event, unsigned int flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float * ms, cudaEvent_t start, cudaEvent_t end);

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t * graph);
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t * exec, cudaGraph_t graph, unsigned long long flags);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t * exec, cudaGraph_t graph, unsigned long long flags);
cudaError_t cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t graph, cudaGraphExecUpdateResultInfo * info);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);

#ifdef __cplusplus
}
#endif

#endif /* GGMLX_EMU_CUDA_RUNTIME_API_H */

/* cuda-private.h — the CUDA driver's and cuBLAS's entry points as
 * cuda-backend.c opens them (function pointers in the context), shared with
 * the CUDA emulator (cuda-emulator.c), which fills the same pointers with
 * its own functions. No CUDA header is included: the few types are declared
 * here (their ABI is stable). Internal to kernels/. */
#pragma once

#include "runtime-private.h"

G_BEGIN_DECLS

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUevent;
typedef void *CUstream;
typedef unsigned long long CUdeviceptr;
typedef int nvrtcResult;
typedef void *nvrtcProgram;
typedef int cublasStatus_t;
typedef void *cublasHandle_t;

#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8
#define CUBLAS_OP_N 0
#define CUBLAS_OP_T 1

struct _PlCudaContext {
  CUdevice        dev;
  CUcontext       ctx;
  int             sms, major, minor;
  char            name[256];
  CUevent        *events;
  int             n_events;
  cublasHandle_t  blas;
  char           *blas_error;
  bool            emulated;  /* the CUDA emulator (cuda-emulator.c) stands in for the driver */
  CUresult (*init) (unsigned);
  CUresult (*device_get) (CUdevice *, int);
  CUresult (*device_count) (int *);
  CUresult (*device_attr) (int *, int, CUdevice);
  CUresult (*device_name) (char *, int, CUdevice);
  CUresult (*primary_retain) (CUcontext *, CUdevice);
  CUresult (*set_current) (CUcontext);
  CUresult (*module_load) (CUmodule *, const void *);
  CUresult (*get_function) (CUfunction *, CUmodule, const char *);
  CUresult (*func_set_attr) (CUfunction, int, int);
  CUresult (*launch) (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                      void **, void **);
  CUresult (*launch_cooperative) (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  CUstream, void **);
  CUresult (*memset_d8) (CUdeviceptr, unsigned char, size_t);
  CUresult (*mem_alloc) (CUdeviceptr *, size_t);
  CUresult (*mem_free) (CUdeviceptr);
  CUresult (*htod) (CUdeviceptr, const void *, size_t);
  CUresult (*dtoh) (void *, CUdeviceptr, size_t);
  CUresult (*dtod) (CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*event_create) (CUevent *, unsigned);
  CUresult (*event_record) (CUevent, CUstream);
  CUresult (*event_sync) (CUevent);
  CUresult (*event_elapsed) (float *, CUevent, CUevent);
  CUresult (*ctx_sync) (void);
  CUresult (*error_string) (CUresult, const char **);
  CUresult (*host_alloc) (void **, size_t, unsigned);
  CUresult (*host_free) (void *);
  CUresult (*htod_async) (CUdeviceptr, const void *, size_t, CUstream);
  CUresult (*dtoh_async) (void *, CUdeviceptr, size_t, CUstream);
  CUresult (*stream_create) (CUstream *, unsigned);
  CUresult (*stream_wait_event) (CUstream, CUevent, unsigned);
  CUstream        copy_stream;
  cublasStatus_t (*blas_sgemm) (cublasHandle_t, int, int, int, int, int, const float *, const float *, int,
                                const float *, int, const float *, float *, int);
  cublasStatus_t (*blas_dgemm) (cublasHandle_t, int, int, int, int, int, const double *, const double *, int,
                                const double *, int, const double *, double *, int);
  cublasStatus_t (*blas_sgemm_batched) (cublasHandle_t, int, int, int, int, int, const float *, const float *, int,
                                        long long, const float *, int, long long, const float *, float *, int,
                                        long long, int);
  cublasStatus_t (*blas_dgemm_batched) (cublasHandle_t, int, int, int, int, int, const double *, const double *, int,
                                        long long, const double *, int, long long, const double *, double *, int,
                                        long long, int);
};

/* cuda-emulator.c: fills c with the emulator's entry points (PASSLAB_CUDA=emulator). */
void     pl_cuda_emulator_open (PlCudaContext *c);
/* Compiles a module's CUDA C for the emulator (C++ compiler, cached like
 * the CPU's kernels) with an entry point for each of kernels (NULL-terminated);
 * cuModuleGetFunction and cuLaunchKernel take it. */
gpointer pl_cuda_emulator_load (const char *source, const char *const *kernels, GError **error);

G_END_DECLS

/* runtime-private.h — the executable's insides, shared by the files that
 * build it (runtime.c, runtime-build.c: kernel plans, steps and buffers;
 * runtime-memory.c: the memory plan; runtime-compile.c: the code;
 * runtime-query.c) and runtime-run.c (running: launches, timings, the
 * memory timeline, reports). Internal to kernels/. */
#pragma once

#include "backend.h"
#include "runtime.h"

G_BEGIN_DECLS

typedef enum {
  BUF_INPUT,   /* a graph input: the caller's tensor (cpu), uploaded (cuda) */
  BUF_CONST,   /* constant data: the graph's tensor (cpu), uploaded once (cuda) */
  BUF_TEMP,    /* produced by a step: a place in the arena */
  BUF_ALIAS,   /* shares the memory of buffer `alias_of` (a view) */
} BufKind;

typedef struct {
  BufKind    kind;
  PlDType    dtype;
  int        rank;
  int64_t    dims[PL_MAX_RANK];
  PlLayout   layout;        /* how the elements lie in memory (layout.h); aliases share their source's */
  int64_t    bytes;
  PlTensor  *constant;      /* CONST */
  bool       owned;         /* CONST made by the runtime (packed weights): unref'ed with the executable */
  int        input_index;   /* INPUT */
  int        alias_of;      /* ALIAS */
  int        first, last;   /* the steps that make it and read it last (roots: over all aliases) */
  int64_t    offset;        /* in the arena (TEMP, and INPUT on cuda); -1 when not there */
  guint64    device;        /* cuda: CONST allocations */
  bool       host;          /* a SwapOut output: lives in the host pool, not the arena */
  int64_t    host_offset;   /* in the host pool (host buffers) */
  const char *name;
} Buffer;

typedef struct {
  PlKernelPlan   *plan;
  int            *in_bufs;     /* per input slot (lib_slot: -1, bound at run time) */
  int            *out_bufs;    /* per output slot (-1 for an omitted output) */
  int             lib_buf;     /* GEMM/CONV with an epilogue, not in place: the raw result */
  int             col_buf;     /* CONV on the cpu: the im2col matrix; a ConvTranspose's column matrix (cpu, cuda) */
  int             scratch_buf; /* cuda rows kernels: global scratch */
  int             entry;       /* the kernel-table row it belongs to */
  const PlNode   *node;        /* the node it runs (a body node when its fusion was split) */
  PlCpuKernelFn   fn;
  PlCpuIm2colFn   im2col;      /* CONV: im2col, or a ConvTranspose's col2im */
  PlCpuConvDirectFn direct;    /* CONV, impl DIRECT, on the cpu */
  PlCpuGemmFn     gemm_small;  /* GEMM of a few rows on the cpu (gemm-small.h); NULL: BLAS */
  int64_t         tile[3];     /* its tile (the attribute, else the pebble rule's) */
  int             pack;        /* CONV: PACK_* — the weights the kernel reads are repacked */
  int             pack_src;    /* weights that are not constants: repacked every run from this buffer */
  int             pack_buf;    /*   into this one (-1: constants, packed once when building) */
  gpointer        cu_fn[2];    /* cuda: loop kernel, convolution */
  PlCudaLaunch    launch[2];
  char           *source;      /* the generated code of this step */
  int             copy;        /* COPY_OUT / COPY_IN: a swap copy, not a kernel */
  int             convert;     /* cpu: CONVERT_F16 / CONVERT_F32, CompressFp16 / DecompressFp16 in place */
  int             status;      /* a kernel that checks indices (pl_kernel_plan_checks): its status words; else -1 */
} Step;

enum { COPY_NONE, COPY_OUT, COPY_IN };
enum { PACK_NONE, PACK_GEMM_NHWC, PACK_DIRECT };
enum { CONVERT_NONE, CONVERT_F16, CONVERT_F32 };

typedef struct {
  char    *name;
  guint32  node_id;
  char    *ops;
  int      n_ops;
  char    *kind;       /* "loop", "input", "library", "op", "fallback", ... */
  char    *note;
  bool     library, fallback;
  int64_t  bytes, flops;
  int      first_step, n_steps;
} Entry;

struct _PlExecutable {
  const PlGraph    *g;
  PlBackend         backend;
  char             *cache_dir;
  int               threads;
  bool              generate_only;
  GPtrArray        *plans;       /* PlKernelPlan*, owned */
  GArray           *bufs;        /* Buffer */
  GArray           *steps;       /* Step */
  GArray           *entries;     /* Entry */
  GHashTable       *buf_of;      /* PlValue* -> buffer + 1 */
  int              *output_bufs; /* per graph output */
  int64_t           arena_bytes;
  int64_t           peak_bytes;  /* most device bytes live at once (without fragmentation) */
  int64_t           workspace_bytes; /* most kernel scratch at once: im2col, library results, cuda scratch */
  int64_t           host_bytes;  /* the host pool (swapped-out tensors), first fit */
  int64_t           host_peak_bytes;
  int64_t           device_budget;
  void             *host_pool;   /* cpu: malloc'd; cuda: pinned (cuMemHostAlloc) */
  char             *source;      /* the whole translation unit */
  bool              cache_hit;
  /* cpu */
  PlCpuModule      *cpu;
  void             *arena;
  /* the status words of the kernels that check indices (Step.status), set
   * by a kernel that met an index out of range; assigned at the first run */
  bool              status_ready;
  int               n_status;
  int64_t          *status;      /* PL_STATUS_WORDS a kernel; cpu (cuda: downloaded here) */
  guint64           cu_status;   /* cuda */
  /* cuda */
  PlCudaContext    *cuda;
  gpointer          cu_module;
  guint64           cu_arena;
};

static inline Buffer *
pl_runtime_buf (PlExecutable *e, int b)
{
  return &g_array_index (e->bufs, Buffer, b);
}

static inline Step *
pl_runtime_step (PlExecutable *e, int s)
{
  return &g_array_index (e->steps, Step, s);
}

/* The buffer whose memory b is: b, or the root of its chain of aliases. */
static inline int
pl_runtime_root (PlExecutable *e, int b)
{
  while (b >= 0 && pl_runtime_buf (e, b)->kind == BUF_ALIAS)
    b = pl_runtime_buf (e, b)->alias_of;
  return b;
}

/* runtime-build.c: plans, steps and buffers for every node (in-place
 * sharing included); a kernel's scratch buffer of `bytes` */
bool       pl_runtime_build           (PlExecutable *e, GError **error);
int        pl_runtime_scratch_buffer  (PlExecutable *e, int64_t bytes, const char *name);
/* runtime-memory.c: outputs stored over inputs that die; the arena and host
 * pool offsets, the peak and the workspace; whether the arena fits the budget */
void       pl_runtime_share_in_place  (PlExecutable *e);
void       pl_runtime_plan_memory     (PlExecutable *e);
bool       pl_runtime_check_budget    (PlExecutable *e, GError **error);
/* runtime-compile.c: the source of every step (cuda: for n_sms SMs), compiled
 * and looked up; on cuda, constants uploaded and the arena allocated */
void       pl_runtime_generate_cpu    (PlExecutable *e);
bool       pl_runtime_compile_cpu     (PlExecutable *e, GError **error);
void       pl_runtime_generate_cuda   (PlExecutable *e, int n_sms);
bool       pl_runtime_compile_cuda    (PlExecutable *e, GError **error);
bool       pl_runtime_upload_cuda     (PlExecutable *e, GError **error);
/* runtime-run.c: a host copy of a tensor of dtype/rank/dims from one layout to another */
void       pl_runtime_relayout      (PlDType dtype, int rank, const int64_t *dims, PlLayout from, PlLayout to,
                                     const void *src, void *dst);
/* runtime-build.c: the weights of a CONV step in the order its kernel reads them */
void       pl_runtime_pack_weights  (const Step *st, const void *w_oihw, void *packed);
/* runtime-run.c */
PlTensor **pl_runtime_run_reference (PlExecutable *e, PlTensor *const *inputs, int repeat, PlRunReport **report,
                                     GError **error);
PlTensor **pl_runtime_run_compiled  (PlExecutable *e, PlTensor *const *inputs, int repeat, PlRunReport **report,
                                     GError **error);

/* cuda-backend.c: the driver API the runtime uses */
/* The module of a CUDA C translation unit: NVRTC and cuModuleLoadData, or
 * the emulator's (which needs the names of the kernels, NULL-terminated). */
gpointer pl_cuda_module_build  (PlCudaContext *c, const char *source, const char *const *kernels, GError **error);
gpointer pl_cuda_function      (PlCudaContext *c, gpointer module, const char *name, GError **error);
guint64  pl_cuda_alloc         (PlCudaContext *c, size_t bytes, GError **error);
void     pl_cuda_free          (PlCudaContext *c, guint64 ptr);
bool     pl_cuda_upload        (PlCudaContext *c, guint64 dst, const void *src, size_t bytes, GError **error);
bool     pl_cuda_download      (PlCudaContext *c, void *dst, guint64 src, size_t bytes, GError **error);
bool     pl_cuda_launch        (PlCudaContext *c, gpointer fn, const PlCudaLaunch *l, void **params, GError **error);
bool     pl_cuda_gemm          (PlCudaContext *c, const PlGemmDesc *g, guint64 a, guint64 b, guint64 out, GError **error);
/* Timing: events recorded on the stream; elapsed milliseconds between two. */
bool     pl_cuda_events        (PlCudaContext *c, int n, GError **error);
bool     pl_cuda_record        (PlCudaContext *c, int event, GError **error);
bool     pl_cuda_elapsed       (PlCudaContext *c, int from, int to, float *ms, GError **error);
bool     pl_cuda_sync          (PlCudaContext *c, GError **error);
/* Swapping: pinned host memory, and a second (non-blocking) stream for copies. */
void    *pl_cuda_host_alloc    (PlCudaContext *c, size_t bytes, GError **error);
void     pl_cuda_host_free     (PlCudaContext *c, void *p);
/* On the copy stream: wait for event after (recorded on the compute stream),
 * record start, copy (to_host: device -> host), record end. */
bool     pl_cuda_copy_async    (PlCudaContext *c, bool to_host, void *host, guint64 dev, size_t bytes, int after,
                                int start, int end, GError **error);
/* The compute stream waits for an event (recorded on the copy stream). */
bool     pl_cuda_wait_event    (PlCudaContext *c, int event, GError **error);

G_END_DECLS

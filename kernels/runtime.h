/* runtime.h — executing a (possibly optimized) graph on a backend, with a
 * kernel per fusion node or op, per-kernel timings and the memory in use
 * over time.
 *
 *   reference  the interpreter (core/interp.c): exact, slow, the oracle
 *   cpu        generated C per kernel, compiled by the system C compiler
 *              (-O3 -march=native -fopenmp) into a cached shared object and
 *              dlopen'ed; MatMul/Gemm/Conv through OpenBLAS
 *   cuda       generated CUDA C compiled by NVRTC, loaded through the driver
 *              API (libcuda.so.1 opened at run time), cuBLAS for GEMM
 *
 * Ops a backend cannot generate code for run through the reference
 * implementation and are marked `fallback` in the report: honest, never
 * hidden.
 *
 * Swapping (the swap pass, DESIGN.md §1.5): SwapOut / SwapIn nodes are
 * copies between the arena (device memory: inputs, intermediates, kernel
 * workspace) and a separate host pool (malloc'd on the cpu, pinned and
 * copied on a second stream with events on cuda), in the order the swap
 * pass planned. A device budget makes building fail when the arena does not
 * fit it; the report gives device and host memory over time and the time
 * spent in copies and waiting for them.
 */
#pragma once

#include "graph.h"

G_BEGIN_DECLS

typedef enum {
  PL_BACKEND_REFERENCE,
  PL_BACKEND_CPU,
  PL_BACKEND_CUDA,
} PlBackend;

const char *pl_backend_name       (PlBackend b);
/* Call first thing in main(): OpenBLAS's worker threads spin for ~0.1 s
 * after every call and steal the cores from the generated OpenMP kernels
 * that follow (identical plans measured 11 vs 19 ms depending on what ran
 * before them). OpenBLAS reads OPENBLAS_THREAD_TIMEOUT only when it loads,
 * so when it is unset this sets it and re-executes the program once. */
void        pl_runtime_init_process (char **argv);
bool        pl_backend_from_name  (const char *name, PlBackend *b);
/* Whether the backend can run here (cuda: a driver and a device); why not in *reason. */
bool        pl_backend_available  (PlBackend b, char **reason);

typedef struct {
  char    *name;         /* kernel name: the node's name */
  guint32  node_id;      /* the top-level node it runs */
  char    *ops;          /* "Sub+Mul+ReduceMean" */
  int      n_ops;
  bool     library;      /* a library call (BLAS / cuBLAS) */
  bool     fallback;     /* ran through the reference implementation */
  double   median_ms;    /* over the repeats */
  double   min_ms;
  int64_t  bytes;        /* bytes the kernel must move: inputs read once + outputs written once */
  int64_t  flops;
  double   gbps;         /* bytes / median time */
  char    *kind;         /* "loop", "input", "stitch", "library", "output", "op", "split", "fallback" */
  char    *note;         /* what ran: "gemm 128x512x128", "fallback: Resize is not generated", ... */
  int      n_launches;   /* launches per run (a fusion that is not one kernel runs its body op by op) */
} PlKernelTiming;

/* One launch of the last run, for timelines. */
typedef struct {
  int      kernel;       /* index into PlRunReport.kernels */
  char    *name;         /* the launch (a body node of a split fusion, else the kernel's name) */
  double   start_ms;     /* since the run started */
  double   dur_ms;
} PlTraceEvent;

typedef struct {
  double   t_ms;         /* time since the run started */
  int64_t  bytes;        /* device memory in use (the arena: inputs, intermediates, scratch) */
  int64_t  host_bytes;   /* host memory in use: tensors swapped out (SwapOut outputs) */
} PlMemorySample;

typedef struct {
  PlBackend        backend;
  PlKernelTiming  *kernels;
  int              n_kernels;
  double           total_ms;      /* median end-to-end time of one run */
  int              repeats;
  PlMemorySample  *memory;        /* the last run's timeline */
  int              n_memory;
  int64_t          peak_bytes;    /* most bytes in use at once (inputs and intermediates; constants apart) */
  int64_t          arena_bytes;   /* the memory plan's arena (first fit over the schedule) */
  int64_t          param_bytes;   /* constants */
  int64_t          workspace_bytes; /* kernel scratch in the arena at once (im2col, library results): part of
                                     * peak_bytes, unknown to the graph's memory profile */
  PlTraceEvent    *events;        /* the last run's launches */
  int              n_events;
  char            *device;        /* "cpu: 2 threads", "NVIDIA H100 ...", "reference interpreter" */
  bool             emulated;      /* cuda on the CUDA emulator: results are real, times are the CPU's */
  /* swapping (SwapOut / SwapIn nodes, DESIGN.md §1.5) */
  int64_t          host_peak_bytes; /* most swapped-out bytes held in host memory at once */
  int64_t          host_pool_bytes; /* the host pool (first fit, like the arena; pinned on cuda) */
  int64_t          device_budget;   /* the budget the plan was checked against (0: none) */
  int              n_copies;        /* swap copies per run */
  int64_t          copy_bytes;      /* bytes they move per run */
  double           copy_ms;         /* time spent in swap copies (median run) */
  double           wait_ms;         /* time compute waited for copies (cpu: copies are synchronous, = copy_ms) */
} PlRunReport;

typedef struct _PlExecutable PlExecutable;

typedef struct {
  PlBackend   backend;
  const char *cache_dir;     /* compiled-kernel cache (cpu); NULL: $XDG_CACHE_HOME/passlab */
  int         threads;       /* cpu: OpenMP threads (0: all cores) */
  bool        generate_only; /* plan and generate the code, compile nothing (no compiler or GPU
                              * needed): for viewing the source and the memory plan (the budget is
                              * checked); running fails */
  int64_t     device_budget; /* bytes of device memory the plan may use (0: no limit); the arena
                              * (inputs, intermediates, scratch; constants apart) must fit, else
                              * pl_executable_new fails naming the need and the budget */
} PlCompileOptions;

void           pl_compile_options_init (PlCompileOptions *o, PlBackend backend);
/* Generates and compiles every kernel of g. g must outlive the executable. */
PlExecutable  *pl_executable_new       (const PlGraph *g, const PlCompileOptions *o, GError **error);
void           pl_executable_free      (PlExecutable *e);
/* Runs repeat times (after one warm-up run); returns the outputs of the last
 * run (g->outputs order) and fills a report when report is not NULL. */
PlTensor     **pl_executable_run       (PlExecutable *e, PlTensor *const *inputs, int repeat,
                                        PlRunReport **report, GError **error);
/* The generated source of the kernel for node_id (NULL for library/fallback kernels). */
const char    *pl_executable_source    (PlExecutable *e, guint32 node_id);
/* The whole generated translation unit (C or CUDA); NULL for the reference backend. */
const char    *pl_executable_full_source (PlExecutable *e);
/* Whether compiling found the object in the cache (cpu). */
bool           pl_executable_cache_hit (PlExecutable *e);
/* Kernels (table rows) and launches per run. */
int            pl_executable_n_kernels (PlExecutable *e);
int            pl_executable_n_launches (PlExecutable *e);
/* The memory plan (also of a generate_only executable): the arena, the most
 * device bytes live at once, the most kernel workspace at once, the host
 * pool. NULL for what is not wanted. */
void           pl_executable_memory    (PlExecutable *e, int64_t *arena, int64_t *peak, int64_t *workspace,
                                        int64_t *host_pool);
/* A readable dump of the loop IR of node_id's kernel(s); NULL if none. g_free it. */
char          *pl_executable_plan_dump (PlExecutable *e, guint32 node_id);

/* Generates the CUDA C of every kernel of g and compiles it with NVRTC —
 * no GPU needed. arch NULL: "compute_90". *source (may be NULL) receives
 * the CUDA source, *n_kernels the number of __global__ kernels. Fails with
 * PL_ERROR_UNSUPPORTED when libnvrtc cannot be loaded. */
bool           pl_cuda_compile_check   (const PlGraph *g, const char *arch, char **source, int *n_kernels,
                                        GError **error);

void           pl_run_report_free      (PlRunReport *r);
/* Chrome-trace / Perfetto JSON: one complete event per kernel of the last
 * run, plus a counter track of memory in use. */
char          *pl_run_report_trace_json (const PlRunReport *r);
char          *pl_run_report_json      (const PlRunReport *r);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PlRunReport, pl_run_report_free)

G_END_DECLS

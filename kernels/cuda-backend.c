/* cuda-backend.c — the CUDA driver API, NVRTC and cuBLAS, all opened at run
 * time with dlopen so passlab starts, and its CPU path works, on machines
 * without an NVIDIA driver. Nothing here includes a CUDA header: the few
 * types and entry points are declared below (their ABI is stable; versioned
 * names as cuda.h maps them: cuMemAlloc_v2, ...).
 *
 * One context per process: the device's primary context (cuDevicePrimaryCtxRetain),
 * the default stream, a cuBLAS handle. Launch timings are CUDA events.
 * Swap copies run on a second, non-blocking stream (created on first use)
 * between the arena and pinned host memory; the two streams are ordered by
 * events only (cuStreamWaitEvent).
 */
#define G_LOG_DOMAIN "passlab"
#include "cuda-private.h"

#include <dlfcn.h>
#include <string.h>

/* --- NVRTC ----------------------------------------------------------------------------- */

static struct {
  gsize        once;
  char        *error;
  nvrtcResult (*create) (nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *);
  nvrtcResult (*compile) (nvrtcProgram, int, const char *const *);
  nvrtcResult (*log_size) (nvrtcProgram, size_t *);
  nvrtcResult (*log) (nvrtcProgram, char *);
  nvrtcResult (*ptx_size) (nvrtcProgram, size_t *);
  nvrtcResult (*ptx) (nvrtcProgram, char *);
  nvrtcResult (*destroy) (nvrtcProgram *);
  const char *(*error_string) (nvrtcResult);
  nvrtcResult (*version) (int *, int *);
} nv;

/* dlopen the first of names that loads. */
static void *
open_first (const char *const *names, char **tried)
{
  GString *t = g_string_new (NULL);
  for (int i = 0; names[i]; i++)
    {
      void *h = dlopen (names[i], RTLD_NOW | RTLD_LOCAL);
      if (h)
        {
          g_string_free (t, TRUE);
          return h;
        }
      g_string_append_printf (t, "%s%s", t->len ? ", " : "", names[i]);
    }
  *tried = g_string_free (t, FALSE);
  return NULL;
}

#define SYM(h, field, name) (*(void **) &(field) = dlsym ((h), (name)))

static void
nvrtc_load (void)
{
  if (!g_once_init_enter (&nv.once))
    return;
  static const char *const names[] = { "libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
                                       "/usr/local/cuda/lib64/libnvrtc.so", NULL };
  char *tried = NULL;
  void *h = open_first (names, &tried);
  if (!h)
    nv.error = g_strdup_printf ("no NVRTC library (tried %s)", tried);
  else if (!SYM (h, nv.create, "nvrtcCreateProgram") || !SYM (h, nv.compile, "nvrtcCompileProgram") ||
           !SYM (h, nv.log_size, "nvrtcGetProgramLogSize") || !SYM (h, nv.log, "nvrtcGetProgramLog") ||
           !SYM (h, nv.ptx_size, "nvrtcGetPTXSize") || !SYM (h, nv.ptx, "nvrtcGetPTX") ||
           !SYM (h, nv.destroy, "nvrtcDestroyProgram") || !SYM (h, nv.error_string, "nvrtcGetErrorString"))
    nv.error = g_strdup ("the NVRTC library lacks an entry point");
  else
    SYM (h, nv.version, "nvrtcVersion");   /* names the PTX cache's files: optional */
  g_free (tried);
  g_once_init_leave (&nv.once, 1);
}

bool
pl_nvrtc_available (char **reason)
{
  nvrtc_load ();
  if (nv.error && reason)
    *reason = g_strdup (nv.error);
  return nv.error == NULL;
}

/* Where the PTX of (options, source) is kept: cache_dir/p<SHA-256 of
 * NVRTC's version, the options and the source>.ptx. */
static char *
ptx_cache_path (const char *cache_dir, const char *const *opts, int n_opts, const char *source)
{
  int major = 0, minor = 0;
  if (nv.version)
    nv.version (&major, &minor);
  GString *key = g_string_new (NULL);
  g_string_append_printf (key, "nvrtc %d.%d\n", major, minor);
  for (int i = 0; i < n_opts; i++)
    g_string_append_printf (key, "%s\n", opts[i]);
  g_string_append (key, source);
  g_autofree char *base = pl_kernel_cache_name ("p", key->str, (gssize) key->len);
  g_string_free (key, TRUE);
  g_autofree char *dir = cache_dir ? g_strdup (cache_dir) : pl_kernel_cache_dir ();
  g_autofree char *name = g_strconcat (base, ".ptx", NULL);
  return g_build_filename (dir, name, NULL);
}

/* A cached PTX file that NVRTC could have written: it names its version
 * and target (a file cut short or overwritten is compiled again). */
static char *
read_cached_ptx (const char *path, size_t *ptx_size)
{
  char *text = NULL;
  gsize n = 0;
  if (!g_file_get_contents (path, &text, &n, NULL))
    return NULL;
  if (strlen (text) != n || !strstr (text, ".version ") || !strstr (text, ".target "))
    {
      g_free (text);
      return NULL;
    }
  if (ptx_size)
    *ptx_size = n;
  return text;
}

char *
pl_nvrtc_compile (const char *source, const char *arch, const char *cache_dir, bool *cache_hit, size_t *ptx_size,
                  GError **error)
{
  if (cache_hit)
    *cache_hit = false;
  nvrtc_load ();
  if (nv.error)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "%s", nv.error);
      return NULL;
    }
  g_autofree char *arch_opt = g_strdup_printf ("--gpu-architecture=%s", arch ? arch : "compute_90");
  /* 177: a helper of the prelude that this module does not use */
  const char *opts[] = { arch_opt, "--std=c++17", "-default-device", "--diag-suppress=177" };
  g_autofree char *cached = ptx_cache_path (cache_dir, opts, G_N_ELEMENTS (opts), source);
  char *ptx = read_cached_ptx (cached, ptx_size);
  if (ptx)
    {
      if (cache_hit)
        *cache_hit = true;
      return ptx;
    }
  nvrtcProgram prog = NULL;
  nvrtcResult r = nv.create (&prog, source, "passlab.cu", 0, NULL, NULL);
  if (r != 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "nvrtcCreateProgram: %s", nv.error_string (r));
      return NULL;
    }
  r = nv.compile (prog, G_N_ELEMENTS (opts), opts);
  if (r != 0)
    {
      size_t n = 0;
      nv.log_size (prog, &n);
      g_autofree char *log = g_malloc0 (n + 1);
      nv.log (prog, log);
      /* the first lines are the ones that say what is wrong */
      if (strlen (log) > 4000)
        log[4000] = '\0';
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "NVRTC failed (%s):\n%s", nv.error_string (r), log);
    }
  else
    {
      size_t n = 0;
      nv.ptx_size (prog, &n);
      ptx = g_malloc0 (n + 1);
      nv.ptx (prog, ptx);
      n = strlen (ptx);   /* NVRTC counts the terminating zero */
      if (ptx_size)
        *ptx_size = n;
      /* a cache that cannot be written only costs the next run a compile */
      g_autofree char *dir = g_path_get_dirname (cached);
      if (g_mkdir_with_parents (dir, 0755) != 0 || !g_file_set_contents (cached, ptx, (gssize) n, NULL))
        g_debug ("PTX not cached in %s", dir);
    }
  nv.destroy (&prog);
  return ptx;
}

/* --- the driver -------------------------------------------------------------------------- */


static PlCudaContext *the_context;
static char *context_error;

static bool
cu_check (PlCudaContext *c, CUresult r, const char *what, GError **error)
{
  if (r == 0)
    return true;
  const char *s = NULL;
  if (c && c->error_string)
    c->error_string (r, &s);
  g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "%s: CUDA error %d (%s)", what, r, s ? s : "unknown");
  return false;
}

static void
load_cublas (PlCudaContext *c)
{
  static const char *const names[] = { "libcublas.so", "libcublas.so.13", "libcublas.so.12",
                                       "/usr/local/cuda/lib64/libcublas.so", NULL };
  char *tried = NULL;
  void *h = open_first (names, &tried);
  cublasStatus_t (*create) (cublasHandle_t *) = NULL;
  if (!h)
    c->blas_error = g_strdup_printf ("no cuBLAS (tried %s)", tried);
  else if (!SYM (h, create, "cublasCreate_v2") || !SYM (h, c->blas_sgemm, "cublasSgemm_v2") ||
           !SYM (h, c->blas_dgemm, "cublasDgemm_v2") || !SYM (h, c->blas_sgemm_batched, "cublasSgemmStridedBatched") ||
           !SYM (h, c->blas_dgemm_batched, "cublasDgemmStridedBatched"))
    c->blas_error = g_strdup ("cuBLAS lacks an entry point");
  else if (create (&c->blas) != 0)
    c->blas_error = g_strdup ("cublasCreate failed");
  g_free (tried);
}

static PlCudaContext *
open_driver (char **why)
{
  PlCudaContext *c = g_new0 (PlCudaContext, 1);
  if (g_strcmp0 (g_getenv ("PASSLAB_CUDA"), "emulator") == 0)
    {
      g_autofree char *no_cxx = NULL;
      if (!pl_cpu_cxx_available (&no_cxx))
        {
          *why = g_strdup_printf ("PASSLAB_CUDA=emulator: %s", no_cxx);
          g_free (c);
          return NULL;
        }
      pl_cuda_emulator_open (c);
    }
  void *h = c->emulated ? NULL : dlopen ("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!c->emulated && !h)
    {
      *why = g_strdup ("no libcuda.so.1: no NVIDIA driver (PASSLAB_CUDA=emulator runs the CUDA code on the CPU)");
      g_free (c);
      return NULL;
    }
  bool ok = c->emulated || (SYM (h, c->init, "cuInit") && SYM (h, c->device_get, "cuDeviceGet") &&
            SYM (h, c->device_count, "cuDeviceGetCount") && SYM (h, c->device_attr, "cuDeviceGetAttribute") &&
            SYM (h, c->device_name, "cuDeviceGetName") && SYM (h, c->primary_retain, "cuDevicePrimaryCtxRetain") &&
            SYM (h, c->set_current, "cuCtxSetCurrent") && SYM (h, c->module_load, "cuModuleLoadData") &&
            SYM (h, c->get_function, "cuModuleGetFunction") && SYM (h, c->func_set_attr, "cuFuncSetAttribute") &&
            SYM (h, c->launch, "cuLaunchKernel") && SYM (h, c->launch_cooperative, "cuLaunchCooperativeKernel") &&
            SYM (h, c->memset_d8, "cuMemsetD8_v2") && SYM (h, c->mem_alloc, "cuMemAlloc_v2") &&
            SYM (h, c->mem_free, "cuMemFree_v2") && SYM (h, c->htod, "cuMemcpyHtoD_v2") &&
            SYM (h, c->dtoh, "cuMemcpyDtoH_v2") && SYM (h, c->dtod, "cuMemcpyDtoD_v2") && SYM (h, c->event_create, "cuEventCreate") &&
            SYM (h, c->event_record, "cuEventRecord") && SYM (h, c->event_sync, "cuEventSynchronize") &&
            SYM (h, c->event_elapsed, "cuEventElapsedTime") && SYM (h, c->ctx_sync, "cuCtxSynchronize") &&
            SYM (h, c->error_string, "cuGetErrorString") && SYM (h, c->host_alloc, "cuMemHostAlloc") &&
            SYM (h, c->host_free, "cuMemFreeHost") && SYM (h, c->htod_async, "cuMemcpyHtoDAsync_v2") &&
            SYM (h, c->dtoh_async, "cuMemcpyDtoHAsync_v2") && SYM (h, c->stream_create, "cuStreamCreate") &&
            SYM (h, c->stream_wait_event, "cuStreamWaitEvent"));
  int count = 0;
  if (!ok)
    *why = g_strdup ("libcuda.so.1 lacks an entry point (driver too old?)");
  else if (c->init (0) != 0)
    *why = g_strdup ("cuInit failed: no usable NVIDIA GPU");
  else if (c->device_count (&count) != 0 || count < 1)
    *why = g_strdup ("no CUDA device");
  else if (c->device_get (&c->dev, 0) != 0 || c->primary_retain (&c->ctx, c->dev) != 0 || c->set_current (c->ctx) != 0)
    *why = g_strdup ("cannot open a context on device 0");
  else
    {
      c->device_attr (&c->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, c->dev);
      c->device_attr (&c->major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, c->dev);
      c->device_attr (&c->minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, c->dev);
      c->device_name (c->name, sizeof c->name - 1, c->dev);
      if (!c->emulated)
        load_cublas (c);
      return c;
    }
  g_free (c);
  return NULL;
}

PlCudaContext *
pl_cuda_get (GError **error)
{
  static gsize once;
  if (g_once_init_enter (&once))
    {
      the_context = open_driver (&context_error);
      g_once_init_leave (&once, 1);
    }
  if (!the_context)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "CUDA is not available: %s", context_error);
      return NULL;
    }
  the_context->set_current (the_context->ctx);
  return the_context;
}

bool
pl_cuda_available (char **reason)
{
  g_autoptr (GError) error = NULL;
  char *why = NULL;
  PlCudaContext *c = pl_cuda_get (&error);
  if (!c)
    {
      if (reason)
        *reason = g_strdup (context_error);
      return false;
    }
  if (!c->emulated && !pl_nvrtc_available (&why))   /* the emulator compiles CUDA C without NVRTC */
    {
      if (reason)
        *reason = why;
      else
        g_free (why);
      return false;
    }
  return true;
}

int
pl_cuda_sm_count (PlCudaContext *c)
{
  return c->sms > 0 ? c->sms : 132;
}

char *
pl_cuda_arch (PlCudaContext *c)
{
  return c->major > 0 ? g_strdup_printf ("compute_%d%d", c->major, c->minor) : g_strdup ("compute_90");
}

const char *
pl_cuda_device_name (PlCudaContext *c)
{
  return c->name[0] ? c->name : "unknown GPU";
}

bool
pl_cuda_emulated (PlCudaContext *c)
{
  return c->emulated;
}

/* NVRTC, then the driver loads the PTX. The emulator compiles the CUDA C
 * itself, after NVRTC (when it can be loaded) has checked that a GPU would
 * take the same code. */
gpointer
pl_cuda_module_build (PlCudaContext *c, const char *source, const char *const *kernels, GError **error)
{
  g_autofree char *arch = pl_cuda_arch (c);
  size_t size = 0;
  g_autofree char *ptx = NULL;
  if ((!c->emulated || pl_nvrtc_available (NULL)) && !(ptx = pl_nvrtc_compile (source, arch, NULL, NULL, &size, error)))
    return NULL;
  if (c->emulated)
    return pl_cuda_emulator_load (source, kernels, error);
  CUmodule m = NULL;
  return cu_check (c, c->module_load (&m, ptx), "cuModuleLoadData", error) ? m : NULL;
}

gpointer
pl_cuda_function (PlCudaContext *c, gpointer module, const char *name, GError **error)
{
  CUfunction f = NULL;
  g_autofree char *what = g_strdup_printf ("cuModuleGetFunction (%s)", name);
  return cu_check (c, c->get_function (&f, module, name), what, error) ? f : NULL;
}

guint64
pl_cuda_alloc (PlCudaContext *c, size_t bytes, GError **error)
{
  CUdeviceptr p = 0;
  if (!cu_check (c, c->mem_alloc (&p, MAX (bytes, 1)), "cuMemAlloc", error))
    return 0;
  return p;
}

void
pl_cuda_free (PlCudaContext *c, guint64 ptr)
{
  if (ptr)
    c->mem_free (ptr);
}

bool
pl_cuda_upload (PlCudaContext *c, guint64 dst, const void *src, size_t bytes, GError **error)
{
  return bytes == 0 || cu_check (c, c->htod (dst, src, bytes), "cuMemcpyHtoD", error);
}

bool
pl_cuda_download (PlCudaContext *c, void *dst, guint64 src, size_t bytes, GError **error)
{
  return bytes == 0 || cu_check (c, c->dtoh (dst, src, bytes), "cuMemcpyDtoH", error);
}

bool
pl_cuda_copy_gbps (PlCudaContext *c, size_t bytes, double *gbps, GError **error)
{
  guint64 a = pl_cuda_alloc (c, bytes, error), b = a ? pl_cuda_alloc (c, bytes, error) : 0;
  bool ok = b && pl_cuda_events (c, 2, error);
  float best = G_MAXFLOAT;
  for (int i = 0; ok && i < 6; i++)   /* the first copy warms up */
    {
      float ms = 0;
      ok = pl_cuda_record (c, 0, error) && cu_check (c, c->dtod (b, a, bytes), "cuMemcpyDtoD", error) &&
           pl_cuda_record (c, 1, error) && pl_cuda_elapsed (c, 0, 1, &ms, error);
      if (ok && i > 0)
        best = MIN (best, ms);
    }
  pl_cuda_free (c, a);
  pl_cuda_free (c, b);
  if (ok)
    *gbps = 2.0 * (double) bytes / (MAX (best, 1e-3f) * 1e6);
  return ok;
}

bool
pl_cuda_launch (PlCudaContext *c, gpointer fn, const PlCudaLaunch *l, void **params, GError **error)
{
  if (l->grid < 1)
    return true;
  if (l->shared_bytes > 48 * 1024 &&
      !cu_check (c, c->func_set_attr (fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, l->shared_bytes),
                 "cuFuncSetAttribute", error))
    return false;
  unsigned gx = (unsigned) MIN (l->grid, G_MAXINT32), gy = (unsigned) MAX (l->grid_yz[0], 1),
           gz = (unsigned) MAX (l->grid_yz[1], 1);
  unsigned by = (unsigned) MAX (l->block_yz[0], 1), bz = (unsigned) MAX (l->block_yz[1], 1);
  if (l->cooperative)
    {
      /* the grid barrier's counters (the first 16 bytes of the scratch, the
       * last kernel argument) start at zero; a cooperative launch fails
       * rather than deadlocks when the grid cannot be resident at once */
      g_autofree char *what = g_strdup_printf ("cuLaunchCooperativeKernel (%s)", l->entry);
      guint64 scratch = *(guint64 *) params[l->n_params - 1];
      return cu_check (c, c->memset_d8 (scratch, 0, 16), "cuMemsetD8", error) &&
             cu_check (c, c->launch_cooperative (fn, gx, gy, gz, (unsigned) l->block, by, bz,
                                                 (unsigned) l->shared_bytes, NULL, params), what, error);
    }
  g_autofree char *what = g_strdup_printf ("cuLaunchKernel (%s)", l->entry);
  return cu_check (c, c->launch (fn, gx, gy, gz, (unsigned) l->block, by, bz, (unsigned) l->shared_bytes, NULL, params,
                                 NULL), what, error);
}

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands. */
static bool
gemm_call (PlCudaContext *c, const PlGemmDesc *g, guint64 a, guint64 b, guint64 out, long long sa, long long sb,
           int batch, GError **error)
{
  int ta = g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  int lda = (int) (g->trans_a ? g->M : g->K), ldb = (int) (g->trans_b ? g->K : g->N);
  int M = (int) g->M, N = (int) g->N, K = (int) g->K;
  cublasStatus_t st;
  if (g->dtype == PL_DTYPE_F64)
    {
      double alpha = g->alpha, beta = 0;
      st = c->blas_dgemm_batched (c->blas, tb, ta, N, M, K, &alpha, (const double *) b, ldb, sb, (const double *) a,
                                  lda, sa, &beta, (double *) out, N, (long long) M * N, batch);
    }
  else
    {
      float alpha = (float) g->alpha, beta = 0;
      st = c->blas_sgemm_batched (c->blas, tb, ta, N, M, K, &alpha, (const float *) b, ldb, sb, (const float *) a,
                                  lda, sa, &beta, (float *) out, N, (long long) M * N, batch);
    }
  if (st != 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "cuBLAS gemm failed (status %d)", st);
      return false;
    }
  return true;
}

/* The batch strides as one stride over the flattened batch, if they are. */
static bool
uniform_stride (const PlGemmDesc *g, const int64_t *strides, long long *s)
{
  int r = g->batch_rank;
  *s = r ? strides[r - 1] : 0;
  int64_t want = *s;
  for (int k = r - 1; k >= 0; k--)
    {
      if (strides[k] != want && !(g->batch_dims[k] == 1))
        return false;
      want *= g->batch_dims[k];
    }
  return true;
}

bool
pl_cuda_gemm (PlCudaContext *c, const PlGemmDesc *g, guint64 a, guint64 b, guint64 out, GError **error)
{
  if (c->blas_error)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "%s", c->blas_error);
      return false;
    }
  size_t es = g->dtype == PL_DTYPE_F64 ? 8 : 4;
  long long sa, sb;
  if (uniform_stride (g, g->a_strides, &sa) && uniform_stride (g, g->b_strides, &sb))
    return gemm_call (c, g, a, b, out, sa, sb, (int) g->batch, error);
  for (int64_t bi = 0; bi < g->batch; bi++)
    {
      int64_t ao = 0, bo = 0, rest = bi;
      for (int k = g->batch_rank - 1; k >= 0; k--)
        {
          int64_t ix = rest % g->batch_dims[k];
          rest /= g->batch_dims[k];
          ao += ix * g->a_strides[k];
          bo += ix * g->b_strides[k];
        }
      if (!gemm_call (c, g, a + (guint64) (ao * (int64_t) es), b + (guint64) (bo * (int64_t) es),
                      out + (guint64) (bi * g->M * g->N * (int64_t) es), 0, 0, 1, error))
        return false;
    }
  return true;
}

bool
pl_cuda_events (PlCudaContext *c, int n, GError **error)
{
  while (c->n_events < n)
    {
      CUevent ev = NULL;
      if (!cu_check (c, c->event_create (&ev, 0), "cuEventCreate", error))
        return false;
      c->events = g_renew (CUevent, c->events, c->n_events + 1);
      c->events[c->n_events++] = ev;
    }
  return true;
}

bool
pl_cuda_record (PlCudaContext *c, int event, GError **error)
{
  return cu_check (c, c->event_record (c->events[event], NULL), "cuEventRecord", error);
}

bool
pl_cuda_elapsed (PlCudaContext *c, int from, int to, float *ms, GError **error)
{
  return cu_check (c, c->event_sync (c->events[to]), "cuEventSynchronize", error) &&
         cu_check (c, c->event_elapsed (ms, c->events[from], c->events[to]), "cuEventElapsedTime", error);
}

bool
pl_cuda_sync (PlCudaContext *c, GError **error)
{
  return cu_check (c, c->ctx_sync (), "cuCtxSynchronize", error);
}

/* --- swapping: pinned host memory, the copy stream ------------------------------------- */

#define CU_STREAM_NON_BLOCKING 0x1   /* no implicit synchronization with the legacy default stream */

void *
pl_cuda_host_alloc (PlCudaContext *c, size_t bytes, GError **error)
{
  void *p = NULL;
  return cu_check (c, c->host_alloc (&p, MAX (bytes, 1), 0), "cuMemHostAlloc", error) ? p : NULL;
}

void
pl_cuda_host_free (PlCudaContext *c, void *p)
{
  if (p)
    c->host_free (p);
}

bool
pl_cuda_copy_async (PlCudaContext *c, bool to_host, void *host, guint64 dev, size_t bytes, int after, int start,
                    int end, GError **error)
{
  if (!c->copy_stream && !cu_check (c, c->stream_create (&c->copy_stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate", error))
    return false;
  CUstream s = c->copy_stream;
  if (!cu_check (c, c->stream_wait_event (s, c->events[after], 0), "cuStreamWaitEvent", error) ||
      !cu_check (c, c->event_record (c->events[start], s), "cuEventRecord", error))
    return false;
  if (bytes > 0)
    {
      CUresult r = to_host ? c->dtoh_async (host, dev, bytes, s) : c->htod_async (dev, host, bytes, s);
      if (!cu_check (c, r, to_host ? "cuMemcpyDtoHAsync" : "cuMemcpyHtoDAsync", error))
        return false;
    }
  return cu_check (c, c->event_record (c->events[end], s), "cuEventRecord", error);
}

bool
pl_cuda_wait_event (PlCudaContext *c, int event, GError **error)
{
  return cu_check (c, c->stream_wait_event (NULL, c->events[event], 0), "cuStreamWaitEvent", error);
}

/* cuda-emulator.c — a CUDA device on the CPU, so the CUDA backend's whole
 * path (generated kernels, launch configurations, the runtime's buffers,
 * cuBLAS calls, events, the swap copies) runs and is checked against the
 * reference on machines without a GPU. PASSLAB_CUDA=emulator selects it in
 * place of the driver (cuda-backend.c).
 *
 * It works at the level of the driver API: the context's function pointers
 * (cuda-private.h) point here instead of into libcuda and libcublas.
 * Memory is host memory (a device pointer is a host address), copies are
 * memcpy, events read the monotonic clock, cuBLAS is OpenBLAS in column-major
 * order. A module is the generated CUDA C behind cuda-emulator-device.h,
 * compiled by the C++ compiler (the kernels run as fibers: see that file),
 * and a function is the module's pl_emu_entry_<kernel>.
 *
 * It checks results, not speed: its timings are the CPU's running an
 * emulation, which says nothing about a GPU. Fresh allocations are filled
 * with NaN bytes, so a kernel that reads memory nobody wrote shows it.
 */
#define G_LOG_DOMAIN "passlab"
#include "cuda-private.h"
#include "cuda-emulator-fibers.h"

#include <cblas.h>
#include <gio/gio.h>
#include <stdlib.h>
#include <string.h>

#define CUDA_ERROR_NOT_FOUND     500
#define CUDA_ERROR_LAUNCH_FAILED 719
#define CUDA_ERROR_UNKNOWN       999

/* A small GPU: grids of a few blocks keep the emulation quick and still
 * exercise the grid-stride loops. */
#define EMULATED_SMS 4

/* The message of the last failed call, for cuGetErrorString. */
static char last_error[2048];

static CUresult
fail (CUresult r, const char *msg)
{
  g_strlcpy (last_error, msg, sizeof last_error);
  return r;
}

static CUresult emu_init (unsigned flags) { return 0; }
static CUresult emu_device_get (CUdevice *d, int ordinal) { *d = 0; return 0; }
static CUresult emu_device_count (int *n) { *n = 1; return 0; }
static CUresult emu_set_current (CUcontext ctx) { return 0; }
static CUresult emu_func_set_attr (CUfunction f, int attr, int value) { return 0; }
static CUresult emu_ctx_sync (void) { return 0; }
static CUresult emu_event_sync (CUevent e) { return 0; }
static CUresult emu_stream_wait_event (CUstream s, CUevent e, unsigned flags) { return 0; }

static CUresult
emu_device_attr (int *v, int attr, CUdevice d)
{
  *v = attr == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT      ? EMULATED_SMS
       : attr == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? 9   /* NVRTC checks the code for sm_90 */
                                                              : 0;
  return 0;
}

static CUresult
emu_device_name (char *name, int len, CUdevice d)
{
  g_strlcpy (name, "passlab CUDA emulator (CPU)", (gsize) len);
  return 0;
}

static CUresult
emu_primary_retain (CUcontext *ctx, CUdevice d)
{
  static int the_context;
  *ctx = &the_context;
  return 0;
}

static CUresult
emu_module_load (CUmodule *m, const void *image)
{
  return fail (CUDA_ERROR_UNKNOWN, "the emulator loads CUDA C, not PTX (pl_cuda_emulator_load)");
}

static CUresult
emu_get_function (CUfunction *f, CUmodule m, const char *name)
{
  g_autofree char *sym = g_strconcat ("pl_emu_entry_", name, NULL);
  *f = pl_cpu_module_symbol (m, sym);
  if (*f)
    return 0;
  g_autofree char *msg = g_strdup_printf ("no kernel %s in the module", name);
  return fail (CUDA_ERROR_NOT_FOUND, msg);
}

typedef int (*EntryFn) (const unsigned *dims, unsigned shared, void **params, char *err, int err_len);

static CUresult
launch (CUfunction f, const unsigned dims[7], unsigned shared, void **params)
{
  char err[1024] = "";
  EntryFn entry;
  *(void **) &entry = f;
  if (entry (dims, shared, params, err, sizeof err) != 0)
    return fail (CUDA_ERROR_LAUNCH_FAILED, err);
  return 0;
}

static CUresult
emu_launch (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
            unsigned shared, CUstream stream, void **params, void **extra)
{
  const unsigned dims[7] = { gx, gy, gz, bx, by, bz, 0 };
  return launch (f, dims, shared, params);
}

/* Every block's threads stay alive, so the kernel may synchronize the grid. */
static CUresult
emu_launch_cooperative (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, CUstream stream, void **params)
{
  const unsigned dims[7] = { gx, gy, gz, bx, by, bz, 1 };
  return launch (f, dims, shared, params);
}

static CUresult
emu_memset_d8 (CUdeviceptr dst, unsigned char value, size_t n)
{
  memset ((void *) (uintptr_t) dst, value, n);
  return 0;
}

static CUresult
emu_mem_alloc (CUdeviceptr *p, size_t bytes)
{
  void *m = NULL;
  if (posix_memalign (&m, 256, MAX (bytes, 1)) != 0)
    return fail (2 /* CUDA_ERROR_OUT_OF_MEMORY */, "out of host memory");
  memset (m, 0xff, bytes);   /* NaN in every float: reading what nobody wrote shows */
  *p = (CUdeviceptr) (uintptr_t) m;
  return 0;
}

static CUresult
emu_mem_free (CUdeviceptr p)
{
  free ((void *) (uintptr_t) p);
  return 0;
}

static CUresult
emu_htod (CUdeviceptr dst, const void *src, size_t n)
{
  memcpy ((void *) (uintptr_t) dst, src, n);
  return 0;
}

static CUresult
emu_dtoh (void *dst, CUdeviceptr src, size_t n)
{
  memcpy (dst, (const void *) (uintptr_t) src, n);
  return 0;
}

static CUresult
emu_dtod (CUdeviceptr dst, CUdeviceptr src, size_t n)
{
  memcpy ((void *) (uintptr_t) dst, (const void *) (uintptr_t) src, n);
  return 0;
}

static CUresult emu_htod_async (CUdeviceptr dst, const void *src, size_t n, CUstream s) { return emu_htod (dst, src, n); }
static CUresult emu_dtoh_async (void *dst, CUdeviceptr src, size_t n, CUstream s) { return emu_dtoh (dst, src, n); }

static CUresult
emu_host_alloc (void **p, size_t bytes, unsigned flags)
{
  CUdeviceptr d = 0;
  CUresult r = emu_mem_alloc (&d, bytes);
  *p = (void *) (uintptr_t) d;
  return r;
}

static CUresult
emu_host_free (void *p)
{
  free (p);
  return 0;
}

static CUresult
emu_stream_create (CUstream *s, unsigned flags)
{
  static int the_stream;
  *s = &the_stream;
  return 0;
}

/* An event is the monotonic time (µs) when it was recorded. */
static CUresult
emu_event_create (CUevent *e, unsigned flags)
{
  *e = g_new0 (gint64, 1);
  return 0;
}

static CUresult
emu_event_record (CUevent e, CUstream s)
{
  *(gint64 *) e = g_get_monotonic_time ();
  return 0;
}

static CUresult
emu_event_elapsed (float *ms, CUevent from, CUevent to)
{
  *ms = (float) (*(gint64 *) to - *(gint64 *) from) / 1000.0f;
  return 0;
}

static CUresult
emu_error_string (CUresult r, const char **s)
{
  *s = last_error[0] ? last_error : "emulator error";
  return 0;
}

/* --- cuBLAS: OpenBLAS, column-major like cuBLAS --------------------------------------- */

static enum CBLAS_TRANSPOSE
op (int o)
{
  return o == CUBLAS_OP_T ? CblasTrans : CblasNoTrans;
}

static cublasStatus_t
emu_sgemm_batched (cublasHandle_t h, int ta, int tb, int m, int n, int k, const float *alpha, const float *a, int lda,
                   long long sa, const float *b, int ldb, long long sb, const float *beta, float *c, int ldc,
                   long long sc, int batch)
{
  for (int i = 0; i < batch; i++)
    cblas_sgemm (CblasColMajor, op (ta), op (tb), m, n, k, *alpha, a + i * sa, lda, b + i * sb, ldb, *beta,
                 c + i * sc, ldc);
  return 0;
}

static cublasStatus_t
emu_dgemm_batched (cublasHandle_t h, int ta, int tb, int m, int n, int k, const double *alpha, const double *a,
                   int lda, long long sa, const double *b, int ldb, long long sb, const double *beta, double *c,
                   int ldc, long long sc, int batch)
{
  for (int i = 0; i < batch; i++)
    cblas_dgemm (CblasColMajor, op (ta), op (tb), m, n, k, *alpha, a + i * sa, lda, b + i * sb, ldb, *beta,
                 c + i * sc, ldc);
  return 0;
}

static cublasStatus_t
emu_sgemm (cublasHandle_t h, int ta, int tb, int m, int n, int k, const float *alpha, const float *a, int lda,
           const float *b, int ldb, const float *beta, float *c, int ldc)
{
  return emu_sgemm_batched (h, ta, tb, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1);
}

static cublasStatus_t
emu_dgemm (cublasHandle_t h, int ta, int tb, int m, int n, int k, const double *alpha, const double *a, int lda,
           const double *b, int ldb, const double *beta, double *c, int ldc)
{
  return emu_dgemm_batched (h, ta, tb, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1);
}

void
pl_cuda_emulator_open (PlCudaContext *c)
{
  static int the_handle;
  c->emulated = true;
  c->init = emu_init;
  c->device_get = emu_device_get;
  c->device_count = emu_device_count;
  c->device_attr = emu_device_attr;
  c->device_name = emu_device_name;
  c->primary_retain = emu_primary_retain;
  c->set_current = emu_set_current;
  c->module_load = emu_module_load;
  c->get_function = emu_get_function;
  c->func_set_attr = emu_func_set_attr;
  c->launch = emu_launch;
  c->launch_cooperative = emu_launch_cooperative;
  c->memset_d8 = emu_memset_d8;
  c->mem_alloc = emu_mem_alloc;
  c->mem_free = emu_mem_free;
  c->htod = emu_htod;
  c->dtoh = emu_dtoh;
  c->dtod = emu_dtod;
  c->event_create = emu_event_create;
  c->event_record = emu_event_record;
  c->event_sync = emu_event_sync;
  c->event_elapsed = emu_event_elapsed;
  c->ctx_sync = emu_ctx_sync;
  c->error_string = emu_error_string;
  c->host_alloc = emu_host_alloc;
  c->host_free = emu_host_free;
  c->htod_async = emu_htod_async;
  c->dtoh_async = emu_dtoh_async;
  c->stream_create = emu_stream_create;
  c->stream_wait_event = emu_stream_wait_event;
  c->blas = &the_handle;
  c->blas_sgemm = emu_sgemm;
  c->blas_dgemm = emu_dgemm;
  c->blas_sgemm_batched = emu_sgemm_batched;
  c->blas_dgemm_batched = emu_dgemm_batched;
}

/* --- modules ---------------------------------------------------------------------------- */

/* `extern __shared__ T name[];` (dynamic shared memory) becomes a pointer
 * into the emulator's buffer; a static __shared__ is a static already. */
static void
append_rewritten (GString *out, const char *src)
{
  static const char marker[] = "extern __shared__ ";
  const char *p = src, *hit;
  while ((hit = strstr (p, marker)))
    {
      const char *decl = hit + strlen (marker), *end = strstr (decl, "[];");
      if (!end)
        break;
      const char *name = end;
      while (name > decl && (g_ascii_isalnum (name[-1]) || name[-1] == '_'))
        name--;
      g_autofree char *type = g_strstrip (g_strndup (decl, (gsize) (name - decl)));
      g_string_append_len (out, p, hit - p);
      g_string_append_printf (out, "%s *%.*s = (%s *) PL_EMU_DYNAMIC_SHARED;", type, (int) (end - name), name, type);
      p = end + 3;
    }
  g_string_append (out, p);
}

gpointer
pl_cuda_emulator_load (const char *source, const char *const *kernels, GError **error)
{
  g_autoptr (GBytes) device = g_resources_lookup_data ("/org/passlab/kernels/cuda-emulator-device.h",
                                                       G_RESOURCE_LOOKUP_FLAGS_NONE, error);
  if (!device)
    return NULL;
  g_autofree char *header = g_strndup (g_bytes_get_data (device, NULL), g_bytes_get_size (device));
  GString *s = g_string_new (NULL);
  append_rewritten (s, source);
  g_string_append (s, "\n/* --- the emulator's entry points --- */\n");
  for (int k = 0; kernels[k]; k++)
    g_string_append_printf (s, "PL_EMU_ENTRY (%s)\n", kernels[k]);
  g_autofree char *text = g_string_free (s, FALSE);
  PlCpuModule *m = pl_cpu_module_compile_cxx (header, text, NULL, NULL, error);
  if (!m)
    return NULL;
  /* the module's threads run on the library's fibers (cuda-emulator-fibers.c) */
  int (*bind) (const PlEmuRuntime *) = NULL;
  *(void **) &bind = pl_cpu_module_symbol (m, "pl_emu_bind");
  if (!bind || bind (pl_cuda_emulator_runtime ()) != 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "the emulator module %s does not bind to this emulator's runtime",
                   pl_cpu_module_path (m));
      pl_cpu_module_free (m);
      return NULL;
    }
  return m;
}

/* cpu-backend.c — the CPU backend's machinery: compiling a generated
 * translation unit with the system C compiler into a cached shared object
 * and loading it (dlopen), and the library calls (OpenBLAS GEMM,
 * convolution as im2col + GEMM in the conv's layout: NCHW per image, NHWC
 * and CHWN per group over the whole batch, in chunks that fit L2). This is how
 * TorchInductor's CPU backend works (DESIGN.md §2.3).
 *
 * OpenMP's worker threads wait passively between kernels unless the user
 * set OMP_WAIT_POLICY or GOMP_SPINCOUNT: spinning workers steal the cores
 * from the BLAS threads and from everything else on a shared machine (on a
 * loaded 2-core machine a 64x512x128 GEMM after a parallel kernel took 20 ms
 * instead of 0.3 ms). libgomp reads the variable when it is first loaded,
 * which is our first dlopen.
 *
 * The cache key is the SHA-256 of the compiler's identity (`cc --version`),
 * the flags and the source, so a compiler upgrade or a flag change never
 * reuses a stale object. Objects are written under a temporary name and
 * renamed, so concurrent processes never load a half-written file.
 */
#define G_LOG_DOMAIN "passlab"
#include "backend.h"
#include "conv-direct.h"

#include <cblas.h>
#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <glib/gstdio.h>

/* -fno-trapping-math lets loops with comparisons and selects vectorize and
 * -fno-math-errno lets sqrt inline; neither changes any value computed.
 * -mprefer-vector-width=512: GCC picks 256-bit vectors on AVX-512 machines
 * by default; loops that compute (exp, tanh) run 1.2-1.4x faster at 512
 * bits on a Sapphire Rapids, memory-bound ones the same. A no-op without
 * AVX-512. libmvec (kernels' vectorized libm) comes with -lm. */
#define CFLAGS "-O3 -march=native -mprefer-vector-width=512 -fopenmp -fno-trapping-math -fno-math-errno -fPIC -shared -w"

/* The CUDA emulator's modules (cuda-emulator.c): CUDA C compiled as C++
 * (their threads' fibers are the library's, cuda-emulator-fibers.c).
 * -fno-strict-aliasing: CUDA code reinterprets shared memory. */
#define CXXFLAGS "-O2 -std=gnu++17 -fPIC -shared -w -fno-strict-aliasing"

struct _PlCpuModule {
  void *handle;
  char *path;
};

typedef struct {
  const char *env;        /* the variable that names the compiler */
  const char *fallback;   /* the compiler when it is unset */
  const char *flags;
  const char *ext;        /* of the source file */
  const char *what;       /* for messages */
  int         id;         /* which identity slot */
} Toolchain;

static const Toolchain c_toolchain = { "PASSLAB_CC", "cc", CFLAGS, "c", "C compiler", 0 };
static const Toolchain cxx_toolchain = { "PASSLAB_CXX", "c++", CXXFLAGS, "cc", "C++ compiler", 1 };

const char *
pl_cpu_compiler_flags (void)
{
  return CFLAGS;
}

const char *
pl_cpu_blas_name (void)
{
#ifdef PL_HAVE_OPENBLAS_CORENAME
  static char *name;
  if (g_once_init_enter (&name))
    g_once_init_leave (&name, g_strdup_printf ("OpenBLAS %s", openblas_get_corename ()));
  return name;
#else
  return "BLAS";
#endif
}

static const char *
compiler (const Toolchain *t)
{
  const char *cc = g_getenv (t->env);
  return cc && *cc ? cc : t->fallback;
}

/* `cc --version`'s first line, once per process and toolchain. */
static const char *
compiler_identity (const Toolchain *t)
{
  static char *id[2];
  static GMutex lock;
  g_mutex_lock (&lock);
  if (!id[t->id])
    {
      const char *argv[] = { compiler (t), "--version", NULL };
      g_autofree char *out = NULL;
      int status = 0;
      if (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL,
                        &out, NULL, &status, NULL) && out)
        {
          char *nl = strchr (out, '\n');
          if (nl)
            *nl = '\0';
          id[t->id] = g_strdup (out);
        }
      else
        id[t->id] = g_strdup ("");
    }
  g_mutex_unlock (&lock);
  return id[t->id];
}

char *
pl_kernel_cache_dir (void)
{
  return g_build_filename (g_get_user_cache_dir (), "passlab", "kernels", NULL);
}

/* The first lines of the compiler's messages, for an error people can read. */
static char *
first_lines (const char *text, int n)
{
  g_auto (GStrv) lines = g_strsplit (text ? text : "", "\n", n + 1);
  if (g_strv_length (lines) > (guint) n)
    {
      g_free (lines[n]);
      lines[n] = NULL;
    }
  return g_strjoinv ("\n", lines);
}

/* Runs the toolchain's compiler on src into tmp with its flags, then
 * renames tmp to dst. `header`: src is a header to precompile (no -shared,
 * no libraries). */
static bool
spawn_compiler (const Toolchain *t, const char *src, const char *tmp, const char *dst, bool header, GError **error)
{
  g_auto (GStrv) flags = g_strsplit (t->flags, " ", -1);
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (gpointer) compiler (t));
  for (int i = 0; flags[i]; i++)
    if (!header || strcmp (flags[i], "-shared") != 0)
      g_ptr_array_add (argv, flags[i]);
  if (header)
    g_ptr_array_add (argv, (gpointer) "-xc++-header");
  g_ptr_array_add (argv, (gpointer) "-o");
  g_ptr_array_add (argv, (gpointer) tmp);
  g_ptr_array_add (argv, (gpointer) src);
  if (!header)
    g_ptr_array_add (argv, (gpointer) "-lm");
  g_ptr_array_add (argv, NULL);
  g_autofree char *err = NULL;
  int status = 0;
  g_autoptr (GError) local = NULL;
  /* plain ASCII messages */
  g_auto (GStrv) env = g_environ_setenv (g_get_environ (), "LC_ALL", "C", TRUE);
  if (!g_spawn_sync (NULL, (char **) argv->pdata, env, G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL,
                     NULL, &err, &status, &local))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "cannot run the %s '%s': %s", t->what, compiler (t),
                   local->message);
      return false;
    }
  if (!g_spawn_check_wait_status (status, NULL))
    {
      g_autofree char *msg = first_lines (err, 20);
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "the %s failed on %s:\n%s", t->what, src, msg);
      g_unlink (tmp);
      return false;
    }
  if (g_rename (tmp, dst) != 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_IO, "cannot write %s: %s", dst, g_strerror (errno));
      g_unlink (tmp);
      return false;
    }
  return true;
}

char *
pl_kernel_cache_name (const char *prefix, const char *key, gssize key_len)
{
  g_autofree char *hash = g_compute_checksum_for_string (G_CHECKSUM_SHA256, key, key_len);
  return g_strdup_printf ("%s%.32s", prefix, hash);
}

/* A cache file's name for text compiled by t: the key names the compiler's
 * identity and flags too. */
static char *
cache_name (const Toolchain *t, const char *prefix, const char *text)
{
  g_autofree char *keytext = g_strdup_printf ("%s\n%s %s\n%s", compiler_identity (t), compiler (t), t->flags, text);
  return pl_kernel_cache_name (prefix, keytext, -1);
}

/* dir/name holding `text` and, beside it, the compiler's precompiled form
 * (name.gch, which GCC reads in its place when a source's first line
 * includes it and the flags match). A header that fails to precompile is
 * still included as text. */
static bool
write_precompiled_header (const Toolchain *t, const char *dir, const char *name, const char *text, GError **error)
{
  g_autofree char *path = g_build_filename (dir, name, NULL);
  g_autofree char *gch = g_strdup_printf ("%s.gch", path);
  if (!g_file_test (path, G_FILE_TEST_EXISTS) && !g_file_set_contents (path, text, -1, error))
    return false;
  if (!g_file_test (gch, G_FILE_TEST_EXISTS))
    {
      g_autofree char *tmp = g_strdup_printf ("%s.%d.tmp.gch", path, (int) getpid ());
      g_autoptr (GError) local = NULL;
      if (!spawn_compiler (t, path, tmp, gch, true, &local))
        g_debug ("not precompiled: %s", local->message);
    }
  return true;
}

static PlCpuModule *
module_compile (const Toolchain *t, const char *header, const char *source, const char *cache_dir, bool *cache_hit,
                GError **error)
{
  g_autofree char *dir = cache_dir ? g_strdup (cache_dir) : pl_kernel_cache_dir ();
  if (g_mkdir_with_parents (dir, 0755) != 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_IO, "cannot create the kernel cache %s: %s", dir, g_strerror (errno));
      return NULL;
    }
  /* a header goes in as an include of its own file, so that it can be precompiled */
  g_autofree char *header_name = NULL, *with_header = NULL;
  if (header)
    {
      g_autofree char *h = cache_name (t, "h", header);
      header_name = g_strconcat (h, ".h", NULL);
      source = with_header = g_strdup_printf ("#include \"%s\"\n%s", header_name, source);
    }
  g_autofree char *base = cache_name (t, "k", source);
  g_autofree char *so = g_strdup_printf ("%s/%s.so", dir, base);
  g_autofree char *src = g_strdup_printf ("%s/%s.%s", dir, base, t->ext);
  if (cache_hit)
    *cache_hit = g_file_test (so, G_FILE_TEST_EXISTS);

  if (!g_file_test (so, G_FILE_TEST_EXISTS))
    {
      if ((header && !write_precompiled_header (t, dir, header_name, header, error))
          || !g_file_set_contents (src, source, -1, error))
        return NULL;
      g_autofree char *tmp = g_strdup_printf ("%s/%s.%d.tmp.so", dir, base, (int) getpid ());
      if (!spawn_compiler (t, src, tmp, so, false, error))
        return NULL;
    }
  static gsize policy_once;
  if (g_once_init_enter (&policy_once))
    {
      if (!g_getenv ("OMP_WAIT_POLICY") && !g_getenv ("GOMP_SPINCOUNT"))
        g_setenv ("OMP_WAIT_POLICY", "passive", FALSE);
      g_once_init_leave (&policy_once, 1);
    }
  /* Never unloaded: OpenMP's worker threads may still sit in its code. */
  void *h = dlopen (so, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!h)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "cannot load %s: %s", so, dlerror ());
      return NULL;
    }
  PlCpuModule *m = g_new0 (PlCpuModule, 1);
  m->handle = h;
  m->path = g_steal_pointer (&so);
  return m;
}

PlCpuModule *
pl_cpu_module_compile (const char *source, const char *cache_dir, bool *cache_hit, GError **error)
{
  return module_compile (&c_toolchain, NULL, source, cache_dir, cache_hit, error);
}

bool
pl_cpu_cxx_available (char **reason)
{
  g_autofree char *path = g_find_program_in_path (compiler (&cxx_toolchain));
  if (!path && reason)
    *reason = g_strdup_printf ("no C++ compiler '%s' ($PASSLAB_CXX)", compiler (&cxx_toolchain));
  return path != NULL;
}

PlCpuModule *
pl_cpu_module_compile_cxx (const char *header, const char *source, const char *cache_dir, bool *cache_hit,
                           GError **error)
{
  return module_compile (&cxx_toolchain, header, source, cache_dir, cache_hit, error);
}

void *
pl_cpu_module_symbol (PlCpuModule *m, const char *name)
{
  return dlsym (m->handle, name);
}

const char *
pl_cpu_module_path (const PlCpuModule *m)
{
  return m->path;
}

void
pl_cpu_module_free (PlCpuModule *m)
{
  if (!m)
    return;
  dlclose (m->handle);
  g_free (m->path);
  g_free (m);
}

/* --- BLAS ------------------------------------------------------------------------- */

/* y = alpha * op (A) x, A rows x cols as stored (row-major, lda), y zeroed
 * first: with beta = 0 some OpenBLAS versions scale y by 0 and keep a NaN
 * that the buffer held before. */
static void
gemv_one (PlDType t, bool trans, int64_t rows, int64_t cols, double alpha, const void *a, int64_t lda,
          const void *x, int64_t incx, void *y, int64_t incy)
{
  const int64_t n = trans ? cols : rows;
  const size_t es = t == PL_DTYPE_F64 ? 8 : 4;
  for (int64_t i = 0; i < n; i++)
    memset ((char *) y + i * incy * es, 0, es);
  if (t == PL_DTYPE_F64)
    cblas_dgemv (CblasRowMajor, trans ? CblasTrans : CblasNoTrans, (blasint) rows, (blasint) cols, alpha, a,
                 (blasint) lda, x, (blasint) incx, 0.0, y, (blasint) incy);
  else
    cblas_sgemv (CblasRowMajor, trans ? CblasTrans : CblasNoTrans, (blasint) rows, (blasint) cols, (float) alpha, a,
                 (blasint) lda, x, (blasint) incx, 0.0f, y, (blasint) incy);
}

/* C (M x N, ldc) = alpha op (A) op (B). A single row or column of C is a
 * matrix-vector product, and BLAS's gemv runs it at the memory's speed where
 * its gemm does not: a classifier's 1 x 1000 x 2048 took 0.33 ms through
 * sgemm, 0.06 ms through sgemv, the weights in cache (OpenBLAS here). */
static void
gemm_one (PlDType t, bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const void *a, int64_t lda,
          const void *b, int64_t ldb, void *c, int64_t ldc)
{
  if (M == 1 && N > 1)   /* c = op (B)^T a: a is A's one row (or column, when A is transposed) */
    {
      if (tb)
        gemv_one (t, false, N, K, alpha, b, ldb, a, ta ? lda : 1, c, 1);
      else
        gemv_one (t, true, K, N, alpha, b, ldb, a, ta ? lda : 1, c, 1);
      return;
    }
  if (N == 1 && M > 1)   /* c = op (A) b: b is B's one column (or row, when B is transposed) */
    {
      if (ta)
        gemv_one (t, true, K, M, alpha, a, lda, b, tb ? 1 : ldb, c, ldc);
      else
        gemv_one (t, false, M, K, alpha, a, lda, b, tb ? 1 : ldb, c, ldc);
      return;
    }
  if (t == PL_DTYPE_F64)
    cblas_dgemm (CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (blasint) M,
                 (blasint) N, (blasint) K, alpha, a, (blasint) lda, b, (blasint) ldb, 0.0, c, (blasint) ldc);
  else
    cblas_sgemm (CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (blasint) M,
                 (blasint) N, (blasint) K, (float) alpha, a, (blasint) lda, b, (blasint) ldb, 0.0f, c, (blasint) ldc);
}

void
pl_cpu_gemm (const PlGemmDesc *g, const void *a, const void *b, void *c)
{
  pl_cpu_gemm_with (g, a, b, c, NULL);
}

void
pl_cpu_gemm_with (const PlGemmDesc *g, const void *a, const void *b, void *c, PlCpuGemmFn fn)
{
  size_t es = g->dtype == PL_DTYPE_F64 ? 8 : 4;
  int64_t lda = g->trans_a ? g->M : g->K, ldb = g->trans_b ? g->K : g->N;
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
      if (fn)
        fn ((const char *) a + ao * es, (const char *) b + bo * es, (char *) c + bi * g->M * g->N * es);
      else
        gemm_one (g->dtype, g->trans_a, g->trans_b, g->M, g->N, g->K, g->alpha, (const char *) a + ao * es, lda,
                  (const char *) b + bo * es, ldb, (char *) c + bi * g->M * g->N * es, g->N);
    }
}

/* --- convolution: im2col + GEMM in the conv's layout ------------------------------ */

bool
pl_conv_is_pointwise (const PlConvDesc *c)
{
  if (c->x_layout != c->y_layout)
    return false;
  for (int i = 0; i < c->n; i++)
    if (c->kernel[i] != 1 || c->strides[i] != 1 || c->pads[i] || c->pads[c->n + i] || c->in[i] != c->out[i])
      return false;
  return true;
}

/* NHWC / CHWN: the batch's im2col matrix goes in chunks that fit the cores'
 * L2 together, so the GEMM reads what im2col just wrote from cache (batch
 * 8 of a 64-channel 56x56 3x3 conv, NHWC on 2 cores: 1.3-1.5x faster in 4
 * MiB chunks than as one GEMM over a 56 MiB matrix). A 1x1 stride-1 conv
 * has no matrix: one GEMM. */
static int64_t
col_chunk_bytes (void)
{
  return MAX (pl_cpu_fast_memory_bytes () * pl_cpu_parallel_units (), (int64_t) 1 << 20);
}

/* How many of `units` go in one chunk when at most `fit` fit: all of them,
 * or the fewest even chunks (at least one unit each). */
static int64_t
even_chunk (int64_t units, int64_t fit)
{
  fit = MAX (fit, 1);
  if (fit >= units)
    return units;
  int64_t pieces = (units + fit - 1) / fit;
  return (units + pieces - 1) / pieces;
}

int64_t
pl_cpu_conv_chunk (const PlConvDesc *c)
{
  /* NHWC: rows (n, o...); CHWN: columns (o..., n), whole positions */
  int64_t total = c->batch * c->col_cols, unit = c->y_layout == PL_LAYOUT_CHWN ? c->batch : 1;
  int64_t fit = col_chunk_bytes () / (c->col_rows * (int64_t) pl_dtype_size (c->dtype) * unit);
  return even_chunk (total / unit, fit) * unit;
}

/* NCHW: one image's matrix goes in chunks of whole output rows (the
 * outermost spatial dim) of at most NCHW_CHUNK_BYTES, so the workspace
 * stays small whatever the image size (a 50% memory budget must not be
 * eaten by im2col, DESIGN.md §1.5) and the GEMM reads the chunk from cache.
 * resnet_train at a 50% swap budget: measured device peak 5.0 MiB with
 * 4 MiB chunks, 2.5 MiB with 1 MiB chunks (budget 3.1 MiB); resnet_stack's
 * NCHW convs ran 19-29 ms either way on the shared machine (noise larger
 * than any difference). */
#define NCHW_CHUNK_BYTES ((int64_t) 1 << 20)
/* A ConvTranspose's column matrix has (M/g)·kh·kw rows, 9x the output
 * channels for a 3x3 kernel; its chunks are smaller so the workspace does
 * not lift the step above the graph's planned peak (the memory profile does
 * not count workspaces): resnet_train's backward-input with 1 MiB chunks
 * went 29 KiB above it. Its time stayed within the shared 2-core machine's
 * noise (3.6-3.9 ms with 1 MiB chunks, 4.3-6.1 ms with 256 KiB). */
#define CONVT_CHUNK_BYTES ((int64_t) 256 << 10)

/* The outermost spatial dim of the matrix's columns: the output's for a
 * conv, the input's for a ConvTranspose. */
static int64_t
col_outer (const PlConvDesc *c)
{
  return c->transpose ? c->in[0] : c->out[0];
}

int64_t
pl_cpu_conv_nchw_rows (const PlConvDesc *c)
{
  int64_t outer = col_outer (c), inner = c->col_cols / outer;
  int64_t budget = c->transpose ? CONVT_CHUNK_BYTES : NCHW_CHUNK_BYTES;
  return even_chunk (outer, budget / (c->col_rows * (int64_t) pl_dtype_size (c->dtype) * inner));
}

int64_t
pl_cpu_conv_col_elems (const PlConvDesc *c)
{
  if (c->transpose)
    return c->col_rows * pl_cpu_conv_nchw_rows (c) * (c->col_cols / c->in[0]);
  if (pl_conv_is_pointwise (c))
    return 0;
  /* NCHW: a chunk of one (image, group)'s rows; the others: one group's chunk of the batch */
  return c->col_rows * (c->y_layout == PL_LAYOUT_NCHW ? pl_cpu_conv_nchw_rows (c) * (c->col_cols / c->out[0])
                                                     : pl_cpu_conv_chunk (c));
}

bool
pl_cpu_conv_packs_weights (const PlConvDesc *c)
{
  return c->impl == PL_CONV_IMPL_GEMM && c->y_layout == PL_LAYOUT_NHWC;
}

/* [K][C/g][kh][kw] -> [K][kh][kw][C/g]: the NHWC im2col's column order, so
 * its rows copy runs of channels. */
void
pl_cpu_conv_pack (const PlConvDesc *c, const void *w_oihw, void *packed)
{
  size_t es = c->dtype == PL_DTYPE_F64 ? 8 : 4;
  int64_t cg = c->c_in / c->group, kprod = c->col_rows / cg;
  for (int64_t k = 0; k < c->c_out; k++)
    for (int64_t ci = 0; ci < cg; ci++)
      for (int64_t r = 0; r < kprod; r++)
        memcpy ((char *) packed + ((k * kprod + r) * cg + ci) * es, (const char *) w_oihw + ((k * cg + ci) * kprod + r) * es,
                es);
}

void
pl_cpu_conv (const PlConvDesc *c, const void *x, const void *w, void *y, void *col, PlCpuIm2colFn im2col)
{
  size_t es = c->dtype == PL_DTYPE_F64 ? 8 : 4;
  int64_t cg = c->c_in / c->group, mg = c->c_out / c->group, R = c->col_rows, P = c->col_cols;
  int64_t NP = c->batch * P;
  bool x_is_col = pl_conv_is_pointwise (c);   /* 1x1 stride 1: X is the matrix */
  int64_t chunk = x_is_col ? NP : pl_cpu_conv_chunk (c);
  const char *xb = x, *wb = w;
  char *yb = y;
  switch (c->y_layout)
    {
    case PL_LAYOUT_NHWC:
      /* Y[N·OH·OW][K] = col[N·OH·OW][kh·kw·C/g] x Wp^T, a group's columns and a chunk's rows at a time */
      for (int64_t g = 0; g < c->group; g++)
        for (int64_t s = 0; s < NP; s += chunk)
          {
            const void *a = xb + (s * c->c_in + g * cg) * es;
            int64_t lda = c->c_in;
            if (!x_is_col)
              {
                im2col (x, col, s / chunk, g);
                a = col;
                lda = R;
              }
            gemm_one (c->dtype, false, true, MIN (chunk, NP - s), mg, R, 1.0, a, lda, wb + g * mg * R * es, R,
                      yb + (s * c->c_out + g * mg) * es, c->c_out);
          }
      return;
    case PL_LAYOUT_CHWN:
      /* Y[K][OH·OW·N] = W[K][C/g·kh·kw] x col[C/g·kh·kw][OH·OW·N], a group's rows and a chunk's columns at a time */
      for (int64_t g = 0; g < c->group; g++)
        for (int64_t s = 0; s < NP; s += chunk)
          {
            int64_t cols = MIN (chunk, NP - s);
            const void *b = xb + (g * cg * NP + s) * es;
            int64_t ldb = NP;
            if (!x_is_col)
              {
                im2col (x, col, s / chunk, g);
                b = col;
                ldb = cols;
              }
            gemm_one (c->dtype, false, false, mg, cols, R, 1.0, wb + g * mg * R * es, R, b, ldb,
                      yb + (g * mg * NP + s) * es, NP);
          }
      return;
    default:
      /* Y[n][K][OH·OW] = W[K][C/g·k] x col[C/g·k][OH·OW], per (image, group), a chunk of
       * output rows at a time (im2col's n argument: image * chunks + chunk) */
      for (int64_t n = 0; n < c->batch; n++)
        for (int64_t g = 0; g < c->group; g++)
          {
            if (x_is_col)
              {
                gemm_one (c->dtype, false, false, mg, P, R, 1.0, wb + g * mg * R * es, R,
                          xb + (n * c->c_in + g * cg) * P * es, P, yb + (n * c->c_out + g * mg) * P * es, P);
                continue;
              }
            int64_t rows = pl_cpu_conv_nchw_rows (c), inner = P / c->out[0];
            int64_t chunks = (c->out[0] + rows - 1) / rows;
            for (int64_t k = 0; k < chunks; k++)
              {
                int64_t cols = (MIN (c->out[0], (k + 1) * rows) - k * rows) * inner;
                im2col (x, col, n * chunks + k, g);
                gemm_one (c->dtype, false, false, mg, cols, R, 1.0, wb + g * mg * R * es, R, col, cols,
                          yb + ((n * c->c_out + g * mg) * P + k * rows * inner) * es, P);
              }
          }
      return;
    }
}

/* --- ConvTranspose: GEMM + col2im ------------------------------------------------- */

void
pl_cpu_conv_transpose (const PlKernelPlan *p, const void *x, const void *w, void *y, void *col, PlCpuIm2colFn col2im)
{
  const PlConvDesc *c = &p->conv;
  const PlGemmDesc *gd = &p->gemm;
  size_t es = c->dtype == PL_DTYPE_F64 ? 8 : 4;
  int64_t P = c->col_cols, rows = pl_cpu_conv_nchw_rows (c), inner = P / c->in[0];
  int64_t chunks = (c->in[0] + rows - 1) / rows;
  const char *xb = x, *wb = w;
  /* cols[(M/g)·k][chunk of X's positions] = W_g^T [C/g][(M/g)·k]^T x X_g[C/g][chunk], then col2im */
  for (int64_t n = 0; n < c->batch; n++)
    for (int64_t g = 0; g < c->group; g++)
      for (int64_t k = 0; k < chunks; k++)
        {
          int64_t cols = (MIN (c->in[0], (k + 1) * rows) - k * rows) * inner;
          const char *b = xb + ((n * c->group + g) * gd->b_strides[0] + k * rows * inner) * es;
          gemm_one (c->dtype, true, false, gd->M, cols, gd->K, 1.0, wb + g * gd->a_strides[0] * es, gd->M, b, P, col,
                    cols);
          col2im (col, y, n * chunks + k, g);
        }
}

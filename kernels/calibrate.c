/* calibrate.c — costs of convolutions per layout and of layout transforms
 * (see calibrate.h; seed 003, MACO; DESIGN.md §1.4).
 *
 * Measured costs. pl_calibration_prepare() builds ONE calibration graph for
 * everything the cache lacks: per (conv shape, layout, impl) a branch
 *
 *     x_i -> LayoutTransform(to L) -> Conv(impl) [output in L] -> LayoutTransform(to NCHW) -> out_i
 *
 * (distinct inputs, random constant weights; no transforms when L is NCHW),
 * the same per (pool shape, layout) with the pool (MaxPool, AveragePool,
 * GlobalAveragePool, GlobalMaxPool: pool.h) in place of the conv,
 * and per (shape, from, to) transform a branch that brings a tensor into
 * `from`, transforms it to `to` and back to NCHW. The graph runs on the
 * backend through the runtime (a warm-up run, then REPEATS timed runs), and
 * each conv's and transform's kernel median becomes an entry. A kernel that
 * ran through the reference implementation (the backend cannot generate it)
 * is recorded as unsupported (infinite cost) for this process only, never
 * cached, so a later runtime that supports it gets measured. If the batch
 * fails to build or run, each branch is retried on its own and the failing
 * ones are unsupported.
 *
 * The cache: $PASSLAB_CACHE_DIR (else $XDG_CACHE_HOME/passlab)/calibration.txt,
 * one line per entry `machine \t backend \t key \t ms`, for every machine
 * that wrote to it; saving re-reads the file, merges and replaces it
 * atomically (g_file_set_contents).
 *
 * Analytic costs, for what is not measured: the machine's ceilings, measured
 * once and cached (cpu: memcpy of 256 MiB and a 1024^3 sgemm through BLAS;
 * cuda: the same through the runtime), and
 *   conv       max (flops / GEMM rate, bytes / bandwidth), bytes counting the
 *              im2col matrix written and read (NCHW: one image at a time;
 *              NHWC and CHWN: the whole batch), read again from cache when it
 *              fits in the last-level cache;
 *   transform  2 * bytes / bandwidth (read once, write once);
 *   pool       its bytes (X read once, Y written once) / bandwidth, the same
 *              in every layout.
 * The analytic model barely distinguishes layouts: it sees the same FLOPs
 * and nearly the same bytes in every layout, while what differs in practice
 * is how well the GEMM or the generated loops vectorize and use the cache.
 * The measured costs are what the layout pass should use; the analytic
 * ones are a fallback that makes the pass usable before (or without) a
 * calibration run.
 */
#define G_LOG_DOMAIN "passlab"
#include "calibrate.h"

#include "backend.h"
#include "conv-direct.h"
#include "interp.h"
#include "pool.h"
#include "tune.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPEATS 5
#define CEILING_COPY_BYTES ((int64_t) 256 << 20)
#define CEILING_GEMM_N 1024
#define KEY_COPY "ceiling memcpy 256MiB"
#define KEY_GEMM "ceiling sgemm 1024^3"
/* Assumption of the analytic model: the generated direct convolution reaches
 * this fraction of the BLAS GEMM rate (no packing, no hand-written micro-kernel). */
#define DIRECT_GEMM_FRACTION 0.5

typedef struct {
  double       ms;
  PlCostSource source;
} Entry;

struct _PlCalibration {
  PlBackend   backend;
  bool        measure;
  bool          use_cache;   /* analytic mode, but what the cache measured counts (pl_calibration_use_cache) */
  char       *machine;
  char       *dir;
  char       *path;
  GHashTable *entries;     /* key -> Entry*: this machine and backend (cache, measurements, table) */
  GHashTable *unsupported; /* key -> (char*) why: measured as not generated, this process only */
  guint       layouts;     /* bit per PlLayout measured by prepare */
  guint       impls;       /* bit per PlConvImpl */
  bool        have_ceilings;
  double      copy_ms, gemm_ms;   /* the ceilings: 256 MiB memcpy, 1024^3 sgemm */
  int64_t     llc_bytes;
  int         n_measured;
  char       *last_error;
  int         tune_trials; /* > 0: direct convs get a tile from the pruned tile search (cpu) */
};

/* --- keys ---------------------------------------------------------------------------- */

static char *
dims_text (int rank, const int64_t *d)
{
  GString *s = g_string_new (NULL);
  for (int i = 0; i < rank; i++)
    g_string_append_printf (s, "%s%" G_GINT64_FORMAT, i ? "x" : "", d[i]);
  return g_string_free (s, FALSE);
}

static const char *
impl_name (PlConvImpl impl)
{
  return impl == PL_CONV_IMPL_DIRECT ? "direct" : "gemm";
}

/* The conv's geometry, layouts and impl aside: "1x64x56x56 k64x3x3 s1,1 p1,1,1,1 d1,1 g1 f32". */
static char *
conv_shape_text (const PlConvDesc *c)
{
  int64_t x[4] = { c->batch, c->c_in, c->in[0], c->in[1] };
  g_autofree char *xs = dims_text (2 + c->n, x);
  return g_strdup_printf ("%s k%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT " s%" G_GINT64_FORMAT
                          ",%" G_GINT64_FORMAT " p%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
                          ",%" G_GINT64_FORMAT " d%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT " g%" G_GINT64_FORMAT " %s",
                          xs, c->c_out, c->kernel[0], c->kernel[1], c->strides[0], c->strides[1], c->pads[0],
                          c->pads[1], c->pads[2], c->pads[3], c->dilations[0], c->dilations[1], c->group,
                          pl_dtype_name (c->dtype));
}

/* A 2-d conv with static shapes (the only kind with layout choices). */
static bool
conv_desc (const PlNode *conv, PlConvDesc *c)
{
  g_autofree char *why = NULL;
  if (conv == NULL || conv->op != PL_OP_Conv || !pl_conv_desc_from_node (conv, c, &why))
    return false;
  return c->n == 2;
}

static char *
conv_key (const PlConvDesc *c, PlLayout layout, PlConvImpl impl)
{
  g_autofree char *shape = conv_shape_text (c);
  return g_strdup_printf ("conv %s %s %s", shape, pl_layout_name (layout), impl_name (impl));
}

char *
pl_calibration_conv_key (const PlNode *conv, PlLayout layout, PlConvImpl impl)
{
  PlConvDesc c;
  return conv_desc (conv, &c) ? conv_key (&c, layout, impl) : NULL;
}

static bool
value_dims4 (const PlValue *v, int64_t *d)
{
  return v && v->shape.rank == 4 && pl_shape_get_dims (&v->shape, d);
}

static char *
transform_key_dims (const int64_t *d, PlDType dtype, PlLayout from, PlLayout to)
{
  g_autofree char *ds = dims_text (4, d);
  return g_strdup_printf ("transform %s %s %s>%s", ds, pl_dtype_name (dtype), pl_layout_name (from),
                          pl_layout_name (to));
}

char *
pl_calibration_transform_key (const PlValue *v, PlLayout from, PlLayout to)
{
  int64_t d[PL_MAX_RANK];
  return value_dims4 (v, d) ? transform_key_dims (d, v->dtype, from, to) : NULL;
}

/* A 2-d pool with static shapes that the runtime generates (the only kind with layout choices). */
static bool
pool_desc (const PlNode *pool, PlPoolDesc *d)
{
  g_autofree char *why = NULL;
  return pool && pl_pool_desc_from_node (pool, d, &why) && d->n == 2;
}

/* "pool max 1x64x112x112 k3x3 s2,2 p1,1,1,1 d1,1 o56x56 f32 NHWC", "pool global-avg 1x512x7x7 f32 NHWC";
 * an average that counts its pads is "avg-pads". */
static char *
pool_key (const PlPoolDesc *d, PlLayout layout)
{
  int64_t x[4] = { d->batch, d->channels, d->in[0], d->in[1] };
  g_autofree char *xs = dims_text (4, x);
  const char *kind = d->kind == PL_POOL_MAX ? "max" : d->count_include_pad ? "avg-pads" : "avg";
  if (d->global)
    return g_strdup_printf ("pool global-%s %s %s %s", kind, xs, pl_dtype_name (d->dtype), pl_layout_name (layout));
  return g_strdup_printf ("pool %s %s k%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT " s%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
                          " p%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
                          " d%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT " o%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT " %s %s",
                          kind, xs, d->kernel[0], d->kernel[1], d->strides[0], d->strides[1], d->pads[0], d->pads[1],
                          d->pads[2], d->pads[3], d->dilations[0], d->dilations[1], d->out[0], d->out[1],
                          pl_dtype_name (d->dtype), pl_layout_name (layout));
}

char *
pl_calibration_pool_key (const PlNode *pool, PlLayout layout)
{
  PlPoolDesc d;
  return pool_desc (pool, &d) ? pool_key (&d, layout) : NULL;
}

/* --- the machine --------------------------------------------------------------------- */

static char *
cpu_model (void)
{
  g_autofree char *text = NULL;
  if (g_file_get_contents ("/proc/cpuinfo", &text, NULL, NULL))
    {
      static const char *const fields[] = { "model name", "Model", "Hardware", "cpu model" };
      g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
      for (guint f = 0; f < G_N_ELEMENTS (fields); f++)
        for (int i = 0; lines[i]; i++)
          {
            const char *colon = strchr (lines[i], ':');
            if (colon && g_str_has_prefix (lines[i], fields[f]) && colon[1])
              return g_strstrip (g_strdup (colon + 1));
          }
    }
  return g_strdup ("unknown model");
}

static int
cpu_threads (void)
{
  const char *omp = g_getenv ("OMP_NUM_THREADS");
  int n = omp ? atoi (omp) : 0;
  return n > 0 ? n : (int) g_get_num_processors ();
}

/* "cuda NVIDIA H100 80GB HBM3" from the driver's /proc entry, else the arch. */
static char *
cuda_machine (GError **error)
{
  PlCudaContext *cuda = pl_cuda_get (error);
  if (!cuda)
    return NULL;
  g_autoptr (GDir) dir = g_dir_open ("/proc/driver/nvidia/gpus", 0, NULL);
  const char *name;
  while (dir && (name = g_dir_read_name (dir)))
    {
      g_autofree char *path = g_build_filename ("/proc/driver/nvidia/gpus", name, "information", NULL);
      g_autofree char *text = NULL;
      if (!g_file_get_contents (path, &text, NULL, NULL))
        continue;
      g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
      for (int i = 0; lines[i]; i++)
        if (g_str_has_prefix (lines[i], "Model:"))
          {
            g_autofree char *model = g_strstrip (g_strdup (lines[i] + 6));
            return g_strdup_printf ("cuda %s, %d SMs", model, pl_cuda_sm_count (cuda));
          }
    }
  g_autofree char *arch = pl_cuda_arch (cuda);
  return g_strdup_printf ("cuda %s, %d SMs", arch, pl_cuda_sm_count (cuda));
}

/* The largest cache of cpu0 (sysfs), 8 MiB if unknown. */
static int64_t
last_level_cache_bytes (void)
{
  int64_t best = 0;
  for (int i = 0; i < 8; i++)
    {
      g_autofree char *path = g_strdup_printf ("/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
      g_autofree char *text = NULL;
      if (!g_file_get_contents (path, &text, NULL, NULL))
        break;
      char *end = NULL;
      int64_t v = g_ascii_strtoll (text, &end, 10);
      if (end && (*end == 'K' || *end == 'k'))
        v <<= 10;
      else if (end && *end == 'M')
        v <<= 20;
      best = MAX (best, v);
    }
  return best > 0 ? best : (int64_t) 8 << 20;
}

static char *
cache_dir (void)
{
  const char *env = g_getenv ("PASSLAB_CACHE_DIR");
  if (env && *env)
    return g_strdup (env);
  return g_build_filename (g_get_user_cache_dir (), "passlab", NULL);
}

/* --- the cache file ------------------------------------------------------------------ */

/* Every line of the file: "machine\tbackend\tkey" -> ms text. */
static GHashTable *
read_cache_lines (const char *path)
{
  GHashTable *all = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_autofree char *text = NULL;
  if (!g_file_get_contents (path, &text, NULL, NULL))
    return all;
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  for (int i = 0; lines[i]; i++)
    {
      g_auto (GStrv) f = g_strsplit (lines[i], "\t", -1);
      if (g_strv_length (f) != 4 || lines[i][0] == '#')
        continue;   /* a damaged or foreign line: ignored, rewritten without it */
      char *end = NULL;
      double ms = g_ascii_strtod (f[3], &end);
      if (end == f[3] || *end || !(ms >= 0) || isinf (ms))
        continue;
      g_hash_table_insert (all, g_strdup_printf ("%s\t%s\t%s", f[0], f[1], f[2]), g_strdup (f[3]));
    }
  return all;
}

static void
load_cache (PlCalibration *cal)
{
  g_autoptr (GHashTable) all = read_cache_lines (cal->path);
  g_autofree char *prefix = g_strdup_printf ("%s\t%s\t", cal->machine, pl_backend_name (cal->backend));
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init (&it, all);
  while (g_hash_table_iter_next (&it, &k, &v))
    if (g_str_has_prefix (k, prefix))
      {
        Entry *e = g_new (Entry, 1);
        e->ms = g_ascii_strtod (v, NULL);
        e->source = PL_COST_MEASURED;
        g_hash_table_insert (cal->entries, g_strdup ((char *) k + strlen (prefix)), e);
      }
}

static int
compare_strings (gconstpointer a, gconstpointer b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

/* Merges this machine's measured entries into the file (re-read now, so
 * other processes' entries survive) and replaces it atomically. */
static bool
save_cache (PlCalibration *cal, GError **error)
{
  if (g_mkdir_with_parents (cal->dir, 0755) != 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_IO, "cannot create the cache directory %s", cal->dir);
      return false;
    }
  g_autoptr (GHashTable) all = read_cache_lines (cal->path);
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init (&it, cal->entries);
  while (g_hash_table_iter_next (&it, &k, &v))
    {
      const Entry *e = v;
      if (e->source != PL_COST_MEASURED || !isfinite (e->ms))
        continue;
      char buf[G_ASCII_DTOSTR_BUF_SIZE];
      g_hash_table_insert (all, g_strdup_printf ("%s\t%s\t%s", cal->machine, pl_backend_name (cal->backend),
                                                 (char *) k),
                           g_strdup (g_ascii_formatd (buf, sizeof buf, "%.6g", e->ms)));
    }
  g_autoptr (GPtrArray) lines = g_ptr_array_new_with_free_func (g_free);
  g_hash_table_iter_init (&it, all);
  while (g_hash_table_iter_next (&it, &k, &v))
    g_ptr_array_add (lines, g_strdup_printf ("%s\t%s\n", (char *) k, (char *) v));
  g_ptr_array_sort (lines, compare_strings);
  g_autoptr (GString) text = g_string_new ("");
  for (guint i = 0; i < lines->len; i++)
    g_string_append (text, lines->pdata[i]);
  g_autoptr (GError) local = NULL;
  if (!g_file_set_contents (cal->path, text->str, (gssize) text->len, &local))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_IO, "cannot write %s: %s", cal->path, local->message);
      return false;
    }
  return true;
}

/* Records a measurement (rounded as the cache file keeps it, so a value read
 * back from the cache equals the one measured). */
static void
set_measured (PlCalibration *cal, const char *key, double ms)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  Entry *e = g_new (Entry, 1);
  e->ms = g_ascii_strtod (g_ascii_formatd (buf, sizeof buf, "%.6g", ms), NULL);
  e->source = PL_COST_MEASURED;
  g_hash_table_replace (cal->entries, g_strdup (key), e);
  g_hash_table_remove (cal->unsupported, key);
}

/* --- life cycle ---------------------------------------------------------------------- */

PlCalibration *
pl_calibration_new (PlBackend backend, bool measure, GError **error)
{
  g_return_val_if_fail (backend == PL_BACKEND_CPU || backend == PL_BACKEND_CUDA, NULL);
  g_autofree char *reason = NULL;
  if (!pl_backend_available (backend, &reason))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "calibration on %s: %s", pl_backend_name (backend),
                   reason ? reason : "not available");
      return NULL;
    }
  g_autofree char *machine = NULL;
  if (backend == PL_BACKEND_CUDA)
    {
      if (!(machine = cuda_machine (error)))
        return NULL;
    }
  else
    {
      g_autofree char *model = cpu_model ();
      machine = g_strdup_printf ("cpu %s, %d threads", model, cpu_threads ());
    }
  g_strdelimit (machine, "\t\n", ' ');
  PlCalibration *cal = g_new0 (PlCalibration, 1);
  cal->backend = backend;
  cal->measure = measure;
  cal->machine = g_steal_pointer (&machine);
  cal->dir = cache_dir ();
  cal->path = g_build_filename (cal->dir, "calibration.txt", NULL);
  cal->entries = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  cal->unsupported = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  cal->layouts = (1u << PL_LAYOUT_COUNT) - 1;
  cal->impls = (1u << PL_CONV_IMPL_GEMM) | (1u << PL_CONV_IMPL_DIRECT);
  cal->llc_bytes = last_level_cache_bytes ();
  load_cache (cal);
  return cal;
}

void
pl_calibration_free (PlCalibration *cal)
{
  if (!cal)
    return;
  g_free (cal->machine);
  g_free (cal->dir);
  g_free (cal->path);
  g_hash_table_unref (cal->entries);
  g_hash_table_unref (cal->unsupported);
  g_free (cal->last_error);
  g_free (cal);
}

const char *
pl_calibration_machine (const PlCalibration *cal)
{
  return cal->machine;
}

const char *
pl_calibration_path (const PlCalibration *cal)
{
  return cal->path;
}

void
pl_calibration_restrict (PlCalibration *cal, guint layouts, guint impls)
{
  cal->layouts = layouts;
  cal->impls = impls;
}

int
pl_calibration_n_measured (const PlCalibration *cal)
{
  return cal->n_measured;
}

const char *
pl_calibration_last_error (const PlCalibration *cal)
{
  return cal->last_error;
}

void
pl_calibration_set (PlCalibration *cal, const char *key, double ms, PlCostSource source)
{
  Entry *e = g_new (Entry, 1);
  e->ms = ms;
  e->source = source;
  g_hash_table_replace (cal->entries, g_strdup (key), e);
  g_hash_table_remove (cal->unsupported, key);
}

bool
pl_calibration_load_table (PlCalibration *cal, const char *path, GError **error)
{
  g_autofree char *text = NULL;
  g_autoptr (GError) local = NULL;
  if (!g_file_get_contents (path, &text, NULL, &local))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_IO, "cost table: %s", local->message);
      return false;
    }
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  for (int i = 0; lines[i]; i++)
    {
      g_strstrip (lines[i]);
      if (!lines[i][0] || lines[i][0] == '#')
        continue;
      const char *tab = strrchr (lines[i], '\t');
      char *end = NULL;
      double ms = tab ? g_ascii_strtod (tab + 1, &end) : NAN;
      if (!tab || end == tab + 1 || *end || !(ms >= 0))
        {
          g_set_error (error, PL_ERROR, PL_ERROR_PARSE, "%s:%d: expected 'key<TAB>ms' (ms >= 0 or inf)", path, i + 1);
          return false;
        }
      g_autofree char *key = g_strndup (lines[i], tab - lines[i]);
      pl_calibration_set (cal, g_strstrip (key), ms, PL_COST_TABLE);
    }
  return true;
}

/* The entry for key as this calibration may use it: a table entry always,
 * a measured one only when measuring; NULL otherwise. */
static const Entry *
lookup (const PlCalibration *cal, const char *key)
{
  const Entry *e = g_hash_table_lookup (cal->entries, key);
  if (e && (e->source == PL_COST_TABLE || cal->measure || cal->use_cache))
    return e;
  return NULL;
}

/* --- ceilings ------------------------------------------------------------------------ */

static double
now_ms (void)
{
  return g_get_monotonic_time () / 1000.0;
}

/* The best of a few 256 MiB memcpys and 1024^3 sgemms on this cpu. */
static void
measure_cpu_ceilings (double *copy_ms, double *gemm_ms)
{
  char *a = g_malloc (CEILING_COPY_BYTES), *b = g_malloc (CEILING_COPY_BYTES);
  memset (a, 1, CEILING_COPY_BYTES);
  memset (b, 2, CEILING_COPY_BYTES);
  *copy_ms = INFINITY;
  for (int r = 0; r < 4; r++)
    {
      double t = now_ms ();
      memcpy (b, a, CEILING_COPY_BYTES);
      *copy_ms = MIN (*copy_ms, now_ms () - t);
    }
  g_free (a);
  g_free (b);
  int n = CEILING_GEMM_N;
  float *x = g_new (float, (gsize) n * n), *y = g_new (float, (gsize) n * n), *z = g_new0 (float, (gsize) n * n);
  for (int i = 0; i < n * n; i++)
    x[i] = y[i] = (float) (i % 17) / 17.0f;
  *gemm_ms = INFINITY;
  for (int r = 0; r < 4; r++)
    {
      double t = now_ms ();
      cblas_sgemm (CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, x, n, y, n, 0.0f, z, n);
      if (r > 0)   /* the first warms up BLAS's threads */
        *gemm_ms = MIN (*gemm_ms, now_ms () - t);
    }
  g_free (x);
  g_free (y);
  g_free (z);
}

static PlNode *
add_op (PlGraph *g, const char *op, int n, PlValue *const *in, GError **error)
{
  PlNode *node = pl_graph_add_node (g, op, NULL, NULL, n, in, 1, NULL, error);
  if (node && !pl_node_infer (node, error))
    return NULL;
  return node;
}

static PlRunReport *run_graph (PlCalibration *cal, const PlGraph *g, GError **error);

static const PlKernelTiming *
timing_of (const PlRunReport *r, const PlNode *node)
{
  for (int k = 0; node && k < r->n_kernels; k++)
    if (r->kernels[k].node_id == node->id)
      return &r->kernels[k];
  return NULL;
}

/* The same ceilings on the device: a copy-like Relu of 64 Mi floats and a
 * 1024^3 MatMul through the runtime (cuBLAS). */
static bool
measure_runtime_ceilings (PlCalibration *cal, double *copy_ms, double *gemm_ms, GError **error)
{
  g_autoptr (PlGraph) g = pl_graph_new ("ceilings");
  int64_t big = CEILING_COPY_BYTES / 4, n = CEILING_GEMM_N;
  PlShape s1 = pl_shape_from_dims (1, (int64_t[]) { big }), s2 = pl_shape_from_dims (2, (int64_t[]) { n, n });
  PlValue *x = pl_graph_add_input (g, "x", PL_DTYPE_F32, &s1, error);
  PlValue *a = x ? pl_graph_add_input (g, "a", PL_DTYPE_F32, &s2, error) : NULL;
  PlValue *b = a ? pl_graph_add_input (g, "b", PL_DTYPE_F32, &s2, error) : NULL;
  PlNode *copy = b ? add_op (g, "Relu", 1, &x, error) : NULL;
  PlNode *mm = copy ? add_op (g, "MatMul", 2, (PlValue *[]) { a, b }, error) : NULL;
  if (!mm)
    return false;
  pl_graph_add_output (g, copy->outputs[0]);
  pl_graph_add_output (g, mm->outputs[0]);
  g_autoptr (PlRunReport) r = run_graph (cal, g, error);
  if (!r)
    return false;
  const PlKernelTiming *tc = timing_of (r, copy), *tm = timing_of (r, mm);
  if (!tc || !tm)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "ceilings: no kernel timings");
      return false;
    }
  *copy_ms = tc->median_ms;
  *gemm_ms = tm->median_ms;
  return true;
}

/* The ceilings from the cache, else measured now and cached. The cache keeps
 * them whichever mode this calibration is in (they are facts of the machine). */
static void
ensure_ceilings (PlCalibration *cal)
{
  if (cal->have_ceilings)
    return;
  const Entry *c = g_hash_table_lookup (cal->entries, KEY_COPY), *m = g_hash_table_lookup (cal->entries, KEY_GEMM);
  if (c && m && c->ms > 0 && m->ms > 0)
    {
      cal->copy_ms = c->ms;
      cal->gemm_ms = m->ms;
      cal->have_ceilings = true;
      return;
    }
  double copy_ms = 0, gemm_ms = 0;
  g_autoptr (GError) error = NULL;
  cal->have_ceilings = true;
  if (cal->backend == PL_BACKEND_CPU)
    measure_cpu_ceilings (&copy_ms, &gemm_ms);
  else if (!measure_runtime_ceilings (cal, &copy_ms, &gemm_ms, &error))
    {
      /* nothing measured: an H100's order of magnitude (2.5 TB/s, 50 TFLOP/s), not cached */
      g_free (cal->last_error);
      cal->last_error = g_strdup_printf ("ceilings: %s", error->message);
      cal->copy_ms = 2.0 * CEILING_COPY_BYTES / 2.5e9;
      cal->gemm_ms = 2.0 * CEILING_GEMM_N * CEILING_GEMM_N * (double) CEILING_GEMM_N / 5e10;
      return;
    }
  set_measured (cal, KEY_COPY, copy_ms);
  set_measured (cal, KEY_GEMM, gemm_ms);
  cal->copy_ms = ((Entry *) g_hash_table_lookup (cal->entries, KEY_COPY))->ms;
  cal->gemm_ms = ((Entry *) g_hash_table_lookup (cal->entries, KEY_GEMM))->ms;
  g_autoptr (GError) save_error = NULL;
  if (!save_cache (cal, &save_error))
    g_debug ("calibration: %s", save_error->message);
}

/* Bytes (read + written) per ms, and FLOPs per ms. */
static double
bandwidth (PlCalibration *cal)
{
  ensure_ceilings (cal);
  return 2.0 * CEILING_COPY_BYTES / cal->copy_ms;
}

static double
gemm_rate (PlCalibration *cal)
{
  ensure_ceilings (cal);
  return 2.0 * CEILING_GEMM_N * CEILING_GEMM_N * (double) CEILING_GEMM_N / cal->gemm_ms;
}

void
pl_calibration_ceilings (PlCalibration *cal, double *gbps, double *gflops)
{
  if (gbps)
    *gbps = bandwidth (cal) / 1e6;
  if (gflops)
    *gflops = gemm_rate (cal) / 1e6;
}

PlCost
pl_calibration_bytes (PlCalibration *cal, int64_t bytes)
{
  return (PlCost) { (double) bytes / bandwidth (cal), PL_COST_ANALYTIC };
}

/* --- analytic model ------------------------------------------------------------------ */

static bool
conv_is_pointwise (const PlConvDesc *c)
{
  for (int i = 0; i < c->n; i++)
    if (c->kernel[i] != 1 || c->strides[i] != 1 || c->pads[i] != 0 || c->pads[c->n + i] != 0)
      return false;
  return true;
}

static double
analytic_conv (PlCalibration *cal, const PlConvDesc *c, PlLayout layout, PlConvImpl impl)
{
  double esz = (double) pl_dtype_size (c->dtype);
  double out = (double) c->batch * c->c_out * c->out[0] * c->out[1];
  double cin_g = (double) (c->c_in / c->group);
  double flops = 2.0 * out * cin_g * c->kernel[0] * c->kernel[1];
  double bytes = esz * ((double) c->batch * c->c_in * c->in[0] * c->in[1] + c->c_out * cin_g * c->kernel[0] * c->kernel[1]
                        + out);
  double rate = gemm_rate (cal);
  if (impl == PL_CONV_IMPL_DIRECT)
    rate *= DIRECT_GEMM_FRACTION;
  else if (!conv_is_pointwise (c))
    {
      /* im2col: written, then read by the GEMM; the read hits the cache when the matrix fits */
      double per_image = esz * c->c_in * c->kernel[0] * c->kernel[1] * c->out[0] * c->out[1];
      double at_once = layout == PL_LAYOUT_NCHW ? per_image : per_image * c->batch;
      bytes += per_image * c->batch * (at_once <= cal->llc_bytes ? 1 : 2);
    }
  return MAX (flops / rate, bytes / bandwidth (cal));
}

/* --- costs --------------------------------------------------------------------------- */

static bool
direct_supported (const PlConvDesc *c, PlLayout layout)
{
  PlConvDesc d = *c;
  d.x_layout = d.y_layout = layout;
  d.impl = PL_CONV_IMPL_DIRECT;
  g_autofree char *why = NULL;
  return pl_conv_direct_supported (&d, &why);
}

/* A direct conv's entries: the pebble tile's "<key>" and a tuned tile's
 * "<key> tile XxYxZ" (see tuned_targets). The fastest known; its tile in
 * tile[] (0s: the pebble rule's). NULL when none. */
static const Entry *
best_direct (const PlCalibration *cal, const char *key, int64_t tile[3])
{
  const Entry *best = lookup (cal, key);
  tile[0] = tile[1] = tile[2] = 0;
  g_autofree char *prefix = g_strdup_printf ("%s tile ", key);
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init (&it, cal->entries);
  while (g_hash_table_iter_next (&it, &k, &v))
    {
      int64_t t[3];
      const Entry *e = lookup (cal, k);
      if (e && g_str_has_prefix (k, prefix) && (!best || e->ms < best->ms) &&
          sscanf ((char *) k + strlen (prefix), "%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT, &t[0],
                  &t[1], &t[2]) == 3)
        {
          best = e;
          memcpy (tile, t, sizeof t);
        }
    }
  return best;
}

PlCost
pl_calibration_conv (PlCalibration *cal, const PlNode *conv, PlLayout layout, PlConvImpl impl)
{
  PlConvDesc c;
  if (!conv_desc (conv, &c))
    {
      /* not a 2-d conv with static shapes: it can only run as it is (NCHW, gemm); its cost is not modelled */
      return (PlCost) { layout == PL_LAYOUT_NCHW && impl == PL_CONV_IMPL_GEMM ? 0 : INFINITY, PL_COST_ANALYTIC };
    }
  g_autofree char *key = conv_key (&c, layout, impl);
  int64_t tile[3];
  const Entry *e = impl == PL_CONV_IMPL_DIRECT ? best_direct (cal, key, tile) : lookup (cal, key);
  if (e)
    return (PlCost) { e->ms, e->source };
  if (cal->measure && g_hash_table_contains (cal->unsupported, key))
    return (PlCost) { INFINITY, PL_COST_MEASURED };
  if (impl == PL_CONV_IMPL_DIRECT && !direct_supported (&c, layout))
    return (PlCost) { INFINITY, PL_COST_ANALYTIC };
  return (PlCost) { analytic_conv (cal, &c, layout, impl), PL_COST_ANALYTIC };
}

PlCost
pl_calibration_transform (PlCalibration *cal, const PlValue *v, PlLayout from, PlLayout to)
{
  int64_t d[PL_MAX_RANK];
  if (from == to)
    return (PlCost) { 0, PL_COST_ANALYTIC };
  if (!value_dims4 (v, d))
    return (PlCost) { INFINITY, PL_COST_ANALYTIC };
  g_autofree char *key = transform_key_dims (d, v->dtype, from, to);
  const Entry *e = lookup (cal, key);
  if (e)
    return (PlCost) { e->ms, e->source };
  if (cal->measure && g_hash_table_contains (cal->unsupported, key))
    return (PlCost) { INFINITY, PL_COST_MEASURED };
  int64_t bytes = (int64_t) pl_dtype_size (v->dtype) * d[0] * d[1] * d[2] * d[3];
  return (PlCost) { 2.0 * (double) bytes / bandwidth (cal), PL_COST_ANALYTIC };
}

PlCost
pl_calibration_pool (PlCalibration *cal, const PlNode *pool, PlLayout layout)
{
  PlPoolDesc d;
  if (!pool_desc (pool, &d))
    return (PlCost) { layout == PL_LAYOUT_NCHW ? 0 : INFINITY, PL_COST_ANALYTIC };
  g_autofree char *key = pool_key (&d, layout);
  const Entry *e = lookup (cal, key);
  if (e)
    return (PlCost) { e->ms, e->source };
  if (cal->measure && g_hash_table_contains (cal->unsupported, key))
    return (PlCost) { INFINITY, PL_COST_MEASURED };
  return (PlCost) { (double) pl_pool_bytes (&d) / bandwidth (cal), PL_COST_ANALYTIC };
}

void
pl_calibration_conv_tile (PlCalibration *cal, const PlNode *conv, PlLayout layout, int64_t tile[3])
{
  PlConvDesc c;
  tile[0] = tile[1] = tile[2] = 0;
  if (cal->backend != PL_BACKEND_CPU || !conv_desc (conv, &c))
    return;   /* cuda: the kernel's own pebble tile for a block */
  g_autofree char *key = conv_key (&c, layout, PL_CONV_IMPL_DIRECT);
  if (best_direct (cal, key, tile) && tile[0] > 0)
    return;   /* a tuned tile measured faster than the pebble rule's */
  c.x_layout = c.y_layout = layout;
  pl_conv_pebble_tile (&c, pl_cpu_fast_memory_bytes (), pl_cpu_parallel_units (), tile);
}

/* --- measuring ----------------------------------------------------------------------- */

static PlRunReport *
run_graph (PlCalibration *cal, const PlGraph *g, GError **error)
{
  PlCompileOptions o;
  pl_compile_options_init (&o, cal->backend);
  g_autofree char *kernels = g_getenv ("PASSLAB_CACHE_DIR") ? g_build_filename (cal->dir, "kernels", NULL) : NULL;
  o.cache_dir = kernels;
  PlExecutable *e = pl_executable_new (g, &o, error);
  if (!e)
    return NULL;
  PlTensor **inputs = pl_random_inputs (g, 1, 1, error);
  PlRunReport *report = NULL;
  PlTensor **outs = inputs || g->inputs->len == 0 ? pl_executable_run (e, inputs, REPEATS, &report, error) : NULL;
  if (outs)
    pl_interp_free_outputs (outs, (int) g->outputs->len);
  if (inputs)
    pl_interp_free_outputs (inputs, (int) g->inputs->len);
  pl_executable_free (e);
  if (!outs)
    g_clear_pointer (&report, pl_run_report_free);
  return report;
}

/* What one branch of the calibration graph measures. */
typedef struct {
  char    *key;
  bool     conv;           /* a conv */
  bool     pool;           /* a pool (neither: a transform) */
  PlConvDesc desc;         /* conv: the geometry */
  PlPoolDesc pool_desc;    /* pool: the geometry */
  PlLayout layout, from;   /* conv, pool: its layout; transform: from -> layout */
  PlConvImpl impl;
  int64_t  dims[4];        /* transform: the tensor; conv, pool: X */
  int64_t  out_dims[4];    /* conv, pool: Y */
  int64_t  tile[3];        /* direct conv: a tuned tile (0s: the pebble rule's) */
  PlDType  dtype;
} Target;

static void
target_free (gpointer p)
{
  Target *t = p;
  g_free (t->key);
  g_free (t);
}

static PlValue *
transform (PlGraph *g, PlValue *x, PlLayout to, GError **error)
{
  PlNode *n = pl_graph_add_node (g, "LayoutTransform", NULL, NULL, 1, &x, 1, NULL, error);
  if (!n)
    return NULL;
  pl_node_set_attr_string (n, "to", pl_layout_name (to));
  return pl_node_infer (n, error) ? n->outputs[0] : NULL;
}

/* The transforms of a branch in a layout other than NCHW (xin: X brought
 * into it, y: Y brought back) are measurements too. */
static void
add_branch_transforms (GPtrArray *nodes, GPtrArray *keys, PlValue *xin, PlValue *y, PlLayout layout)
{
  int64_t xd[4], yd[4];
  if (layout == PL_LAYOUT_NCHW || !value_dims4 (xin, xd) || !value_dims4 (y, yd))
    return;
  g_ptr_array_add (nodes, xin->producer);
  g_ptr_array_add (keys, transform_key_dims (xd, xin->dtype, PL_LAYOUT_NCHW, layout));
  g_ptr_array_add (nodes, y->producer);
  g_ptr_array_add (keys, transform_key_dims (yd, y->dtype, layout, PL_LAYOUT_NCHW));
}

/* The end of a conv's or pool's branch: node's output in t's layout, back
 * to NCHW as a graph output; node and its transforms are what it times. */
static bool
finish_branch (PlGraph *g, PlNode *node, const Target *t, PlValue *xin, GPtrArray *nodes, GPtrArray *keys,
               GError **error)
{
  if (!pl_node_infer (node, error))
    return false;
  node->outputs[0]->layout = t->layout;
  PlValue *y = t->layout != PL_LAYOUT_NCHW ? transform (g, node->outputs[0], PL_LAYOUT_NCHW, error) : node->outputs[0];
  if (!y)
    return false;
  pl_graph_add_output (g, y);
  g_ptr_array_add (nodes, node);
  g_ptr_array_add (keys, g_strdup (t->key));
  add_branch_transforms (nodes, keys, xin, y, t->layout);
  return true;
}

/* A pool's branch: x -> [to its layout] -> pool -> [to NCHW]. */
static bool
add_pool_branch (PlGraph *g, const Target *t, const char *xname, GPtrArray *nodes, GPtrArray *keys, GError **error)
{
  const PlPoolDesc *d = &t->pool_desc;
  int64_t xd[4] = { d->batch, d->channels, d->in[0], d->in[1] };
  PlShape xs = pl_shape_from_dims (4, xd);
  PlValue *x = pl_graph_add_input (g, xname, d->dtype, &xs, error);
  PlValue *xin = x && t->layout != PL_LAYOUT_NCHW ? transform (g, x, t->layout, error) : x;
  PlNode *pool = xin ? pl_graph_add_node (g, pl_pool_op_type (d), NULL, NULL, 1, &xin, 1, NULL, error) : NULL;
  if (!pool)
    return false;
  pl_pool_set_attrs (d, pool);
  return finish_branch (g, pool, t, xin, nodes, keys, error);
}

/* Adds a branch measuring t; nodes and keys receive what it times (node, cache key). */
static bool
add_branch (const PlCalibration *cal, PlGraph *g, const Target *t, int index, GPtrArray *nodes, GPtrArray *keys, GError **error)
{
  g_autofree char *xname = g_strdup_printf ("x%d", index);
  if (t->pool)
    return add_pool_branch (g, t, xname, nodes, keys, error);
  if (!t->conv)
    {
      PlShape s = pl_shape_from_dims (4, t->dims);
      PlValue *x = pl_graph_add_input (g, xname, t->dtype, &s, error);
      PlValue *a = x && t->from != PL_LAYOUT_NCHW ? transform (g, x, t->from, error) : x;
      PlValue *b = a ? transform (g, a, t->layout, error) : NULL;
      PlValue *c = b && t->layout != PL_LAYOUT_NCHW ? transform (g, b, PL_LAYOUT_NCHW, error) : b;
      if (!c)
        return false;
      g_ptr_array_add (nodes, b->producer);
      g_ptr_array_add (keys, g_strdup (t->key));
      pl_graph_add_output (g, c);
      return true;
    }
  const PlConvDesc *c = &t->desc;
  int64_t xd[4] = { c->batch, c->c_in, c->in[0], c->in[1] };
  int64_t wd[4] = { c->c_out, c->c_in / c->group, c->kernel[0], c->kernel[1] };
  PlShape xs = pl_shape_from_dims (4, xd);
  PlValue *x = pl_graph_add_input (g, xname, c->dtype, &xs, error);
  if (!x)
    return false;
  PlTensor *w = pl_tensor_new (c->dtype, 4, wd, error);
  if (!w)
    return false;
  g_autoptr (GRand) rand = g_rand_new_with_seed ((guint32) index + 1);
  pl_tensor_fill_random (w, rand, -0.1, 0.1);
  g_autofree char *wname = g_strdup_printf ("w%d", index);
  PlValue *wv = pl_graph_add_constant (g, wname, w, error);
  pl_tensor_unref (w);
  PlValue *xin = wv && t->layout != PL_LAYOUT_NCHW ? transform (g, x, t->layout, error) : wv ? x : NULL;
  if (!xin)
    return false;
  PlNode *conv = pl_graph_add_node (g, "Conv", NULL, NULL, 2, (PlValue *[]) { xin, wv }, 1, NULL, error);
  if (!conv)
    return false;
  pl_node_set_attr_ints (conv, "kernel_shape", c->kernel, 2);
  pl_node_set_attr_ints (conv, "strides", c->strides, 2);
  pl_node_set_attr_ints (conv, "dilations", c->dilations, 2);
  pl_node_set_attr_ints (conv, "pads", c->pads, 4);
  pl_node_set_attr_int (conv, "group", c->group);
  if (t->impl == PL_CONV_IMPL_DIRECT)
    {
      pl_node_set_attr_string (conv, "impl", "direct");
      int64_t tile[3] = { 0, 0, 0 };
      PlConvDesc d = *c;
      d.x_layout = d.y_layout = t->layout;
      if (t->tile[0] > 0)
        memcpy (tile, t->tile, sizeof tile);
      else if (cal->backend == PL_BACKEND_CPU)   /* cuda: the kernel's own tile for a block */
        pl_conv_pebble_tile (&d, pl_cpu_fast_memory_bytes (), pl_cpu_parallel_units (), tile);
      if (tile[0] > 0)
        pl_node_set_attr_ints (conv, "tile", tile, 3);
    }
  return finish_branch (g, conv, t, xin, nodes, keys, error);
}

/* Builds a graph of the targets, runs it and records each target's time.
 * False when the graph cannot be built or run. */
static bool
measure_targets (PlCalibration *cal, GPtrArray *targets, int first, int n, GError **error)
{
  g_autoptr (PlGraph) g = pl_graph_new ("calibration");
  g_autoptr (GPtrArray) nodes = g_ptr_array_new ();
  g_autoptr (GPtrArray) keys = g_ptr_array_new_with_free_func (g_free);
  for (int i = first; i < first + n; i++)
    if (!add_branch (cal, g, targets->pdata[i], i, nodes, keys, error))
      return false;
  g_autoptr (PlRunReport) r = run_graph (cal, g, error);
  if (!r)
    return false;
  g_autoptr (GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal);
  for (guint i = 0; i < nodes->len; i++)
    {
      const char *key = keys->pdata[i];
      const PlKernelTiming *k = timing_of (r, nodes->pdata[i]);
      if (!k || !g_hash_table_add (seen, (gpointer) key))
        continue;   /* measured once per batch: the first branch that has it */
      if (k->fallback)
        g_hash_table_replace (cal->unsupported, g_strdup (key),
                              g_strdup_printf ("ran through the reference implementation%s%s",
                                               k->note ? ": " : "", k->note ? k->note : ""));
      else
        {
          set_measured (cal, key, k->median_ms);
          cal->n_measured++;
        }
    }
  return true;
}

/* Adds t unless the cache or a planned branch has it; planned owns its keys. */
static void
add_target (PlCalibration *cal, GPtrArray *targets, GHashTable *planned, Target *t)
{
  if (g_hash_table_contains (cal->entries, t->key) || g_hash_table_contains (planned, t->key))
    {
      target_free (t);
      return;
    }
  g_hash_table_add (planned, g_strdup (t->key));
  if ((t->conv || t->pool) && t->layout != PL_LAYOUT_NCHW)
    {
      /* its branch measures the transforms into and out of its layout too */
      g_hash_table_add (planned, transform_key_dims (t->dims, t->dtype, PL_LAYOUT_NCHW, t->layout));
      g_hash_table_add (planned, transform_key_dims (t->out_dims, t->dtype, t->layout, PL_LAYOUT_NCHW));
    }
  g_ptr_array_add (targets, t);
}

/* The target of a conv or a pool (key) in layout; the caller sets what it is. */
static Target *
node_target (char *key, const PlNode *node, PlLayout layout)
{
  Target *t = g_new0 (Target, 1);
  t->key = key;
  t->layout = layout;
  t->dtype = node->inputs[0]->dtype;
  value_dims4 (node->inputs[0], t->dims);
  value_dims4 (node->outputs[0], t->out_dims);
  return t;
}

/* With tuning on (cpu): the pruned tile search (tune.h) for the direct conv
 * of target t, unless the cache says it was searched ("tuned <key>", the
 * trials). When it finds a tile other than the pebble rule's, that tile is
 * measured in the batch like every other kernel, as "<key> tile XxYxZ", so
 * the two compete on the same footing. */
static void
tuned_target (PlCalibration *cal, GPtrArray *targets, GHashTable *planned, const PlNode *conv, const Target *t)
{
  if (cal->tune_trials <= 0 || cal->backend != PL_BACKEND_CPU)
    return;
  g_autofree char *marker = g_strdup_printf ("tuned %s", t->key);
  if (g_hash_table_contains (cal->entries, marker))
    return;
  g_autofree char *kernels = g_getenv ("PASSLAB_CACHE_DIR") ? g_build_filename (cal->dir, "kernels", NULL) : NULL;
  PlTuneOptions o = { .max_trials = cal->tune_trials, .repeat = 3, .seed = 1, .pruned_only = true,
                      .cache_dir = kernels };
  g_autoptr (GError) error = NULL;
  g_autoptr (PlTuneResult) r = pl_tune_conv (conv, t->layout, &o, &error);
  if (!r)
    {
      g_free (cal->last_error);
      cal->last_error = g_strdup_printf ("tuning %s: %s", conv->name, error->message);
      return;
    }
  set_measured (cal, marker, cal->tune_trials);
  const int64_t *b = r->best_pruned_tile;
  if (memcmp (b, r->pebble_tile, sizeof r->pebble_tile) == 0)
    return;
  Target *tt = g_memdup2 (t, sizeof *t);
  tt->key = g_strdup_printf ("%s tile %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT, t->key, b[0], b[1],
                             b[2]);
  memcpy (tt->tile, b, sizeof tt->tile);
  add_target (cal, targets, planned, tt);
}

void
pl_calibration_set_tuning (PlCalibration *cal, int trials)
{
  cal->tune_trials = MAX (trials, 0);
}

/* What the graph may need that this calibration has no entry for. */
static GPtrArray *
missing_targets (PlCalibration *cal, const PlGraph *g)
{
  GPtrArray *targets = g_ptr_array_new_with_free_func (target_free);
  g_autoptr (GHashTable) planned = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr (GPtrArray) values = g_ptr_array_new ();
  for (guint i = 0; i < g->nodes->len; i++)
    {
      const PlNode *node = g->nodes->pdata[i];
      const PlOpInfo *info = pl_op_info (node->op);
      PlConvDesc c;
      PlPoolDesc pd;
      if (pool_desc (node, &pd))
        {
          g_ptr_array_add (values, node->inputs[0]);
          g_ptr_array_add (values, node->outputs[0]);
          for (int l = 0; l < PL_LAYOUT_COUNT; l++)
            if (cal->layouts & (1u << l))
              {
                Target *t = node_target (pool_key (&pd, l), node, l);
                t->pool = true;
                t->pool_desc = pd;
                add_target (cal, targets, planned, t);
              }
        }
      else if (node->op == PL_OP_Conv && conv_desc (node, &c))
        {
          g_ptr_array_add (values, node->inputs[0]);
          g_ptr_array_add (values, node->outputs[0]);
          for (int l = 0; l < PL_LAYOUT_COUNT; l++)
            for (int m = 0; m <= PL_CONV_IMPL_DIRECT; m++)
              {
                if (!(cal->layouts & (1u << l)) || !(cal->impls & (1u << m)))
                  continue;
                if (m == PL_CONV_IMPL_DIRECT && !direct_supported (&c, l))
                  continue;
                Target *t = node_target (conv_key (&c, l, m), node, l);
                t->conv = true;
                t->desc = c;
                t->impl = m;
                if (m == PL_CONV_IMPL_DIRECT)
                  tuned_target (cal, targets, planned, node, t);
                add_target (cal, targets, planned, t);
              }
        }
      else if (info && info->category == PL_CAT_ELEMENTWISE)
        {
          for (int k = 0; k < node->n_inputs; k++)
            if (node->inputs[k] && !pl_value_constant (node->inputs[k]))
              g_ptr_array_add (values, node->inputs[k]);
          for (int k = 0; k < node->n_outputs; k++)
            if (node->outputs[k])
              g_ptr_array_add (values, node->outputs[k]);
        }
    }
  for (guint i = 0; i < values->len; i++)
    {
      const PlValue *v = values->pdata[i];
      int64_t d[PL_MAX_RANK];
      if (!value_dims4 (v, d) || (v->dtype != PL_DTYPE_F32 && v->dtype != PL_DTYPE_F64))
        continue;
      for (int a = 0; a < PL_LAYOUT_COUNT; a++)
        for (int b = 0; b < PL_LAYOUT_COUNT; b++)
          {
            if (a == b || !(cal->layouts & (1u << a)) || !(cal->layouts & (1u << b)))
              continue;
            Target *t = g_new0 (Target, 1);
            *t = (Target) { .key = transform_key_dims (d, v->dtype, a, b), .from = a, .layout = b, .dtype = v->dtype };
            memcpy (t->dims, d, sizeof t->dims);
            add_target (cal, targets, planned, t);
          }
    }
  return targets;
}

bool
pl_calibration_prepare (PlCalibration *cal, const PlGraph *g, GError **error)
{
  if (!cal->measure)
    return true;
  g_autoptr (GPtrArray) targets = missing_targets (cal, g);
  if (targets->len == 0)
    return true;
  g_autoptr (GError) batch_error = NULL;
  if (!measure_targets (cal, targets, 0, (int) targets->len, &batch_error))
    {
      /* one branch breaks the batch: measure each on its own */
      g_free (cal->last_error);
      cal->last_error = g_strdup (batch_error->message);
      for (guint i = 0; i < targets->len; i++)
        {
          g_autoptr (GError) one = NULL;
          const Target *t = targets->pdata[i];
          if (!measure_targets (cal, targets, (int) i, 1, &one))
            g_hash_table_replace (cal->unsupported, g_strdup (t->key), g_strdup (one->message));
        }
    }
  return save_cache (cal, error);
}

const char *
pl_cost_source_name (PlCostSource source)
{
  switch (source)
    {
    case PL_COST_MEASURED: return "measured";
    case PL_COST_ANALYTIC: return "analytic";
    case PL_COST_TABLE: return "table";
    }
  return "?";
}

const char *
pl_calibration_unsupported_reason (const PlCalibration *cal, const char *key)
{
  return g_hash_table_lookup (cal->unsupported, key);
}

void
pl_calibration_use_cache (PlCalibration *cal)
{
  cal->use_cache = true;
}

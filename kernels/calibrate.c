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
 * backend through the runtime in three rounds (each a warm-up run, then
 * REPEATS timed runs; a round in which the hypervisor or another process
 * took CPU time runs again), and the least of
 * each conv's and transform's kernel medians over the rounds becomes an
 * entry. A kernel that
 * ran through the reference implementation (the backend cannot generate it)
 * is recorded as unsupported (infinite cost) for this process only, never
 * cached, so a later runtime that supports it gets measured. If the batch
 * fails to build or run, each branch is retried on its own and the failing
 * ones are unsupported.
 *
 * The cache: $PASSLAB_CACHE_DIR (else $XDG_CACHE_HOME/passlab)/calibration.txt,
 * one line per entry `machine \t backend \t key \t ms \t rounds`, for every
 * machine that wrote to it (a line without rounds, from an older passlab,
 * is one round: measured again when needed); saving re-reads the file, merges and replaces it
 * atomically (g_file_set_contents).
 *
 * A node's entries are measured together: when a conv or pool lacks one
 * (a layout, an impl, a kernel whose generator changed), every layout and
 * impl of it is measured again in the same batch, since the pass compares
 * them and this machine's speed drifts by some 20% between calibrations
 * (group_stale in calibrate-measure.c).
 *
 * A process measures an entry once (unless asked to remeasure), and an
 * entry's value, once the process has read or measured it, stays its value
 * (a table of its own, under a lock): also when measured in fewer calm
 * rounds than PL_CAL_ROUNDS (cached so, for the next process to measure
 * again), and also when another process rewrites the file meanwhile (tests
 * and scripts share a cache). Otherwise two plans that `bench` makes in one
 * process and means to be the same (`layout` forced to NHWC against `nhwc`)
 * could part on noise.
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
#include "calibrate-private.h"

#include "backend.h"
#include "conv-direct.h"
#include "pool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Assumption of the analytic model: the generated direct convolution reaches
 * this fraction of the BLAS GEMM rate (no packing, no hand-written micro-kernel). */
#define DIRECT_GEMM_FRACTION 0.5

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
bool
pl_cal_conv_desc (const PlNode *conv, PlConvDesc *c)
{
  g_autofree char *why = NULL;
  if (conv == NULL || conv->op != PL_OP_Conv || !pl_conv_desc_from_node (conv, c, &why))
    return false;
  return c->n == 2;
}

char *
pl_cal_conv_key (const PlConvDesc *c, PlLayout layout, PlConvImpl impl)
{
  g_autofree char *shape = conv_shape_text (c);
  return g_strdup_printf ("conv %s %s %s", shape, pl_layout_name (layout), impl_name (impl));
}

static guint32
direct_source_hash (const PlConvDesc *c, PlLayout layout)
{
  PlConvDesc d = *c;
  d.x_layout = d.y_layout = layout;
  d.impl = PL_CONV_IMPL_DIRECT;
  memset (d.tile, 0, sizeof d.tile);
  return pl_conv_direct_source_hash (&d);
}

char *
pl_cal_tile_key (const char *key, const PlConvDesc *c, PlLayout layout, const int64_t tile[3])
{
  return g_strdup_printf ("%s tile %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT " src %08x", key, tile[0],
                          tile[1], tile[2], direct_source_hash (c, layout));
}

char *
pl_calibration_conv_key (const PlNode *conv, PlLayout layout, PlConvImpl impl)
{
  PlConvDesc c;
  return pl_cal_conv_desc (conv, &c) ? pl_cal_conv_key (&c, layout, impl) : NULL;
}

bool
pl_cal_value_dims4 (const PlValue *v, int64_t *d)
{
  return v && v->shape.rank == 4 && pl_shape_get_dims (&v->shape, d);
}

char *
pl_cal_transform_key_dims (const int64_t *d, PlDType dtype, PlLayout from, PlLayout to)
{
  g_autofree char *ds = dims_text (4, d);
  return g_strdup_printf ("transform %s %s %s>%s", ds, pl_dtype_name (dtype), pl_layout_name (from),
                          pl_layout_name (to));
}

char *
pl_calibration_transform_key (const PlValue *v, PlLayout from, PlLayout to)
{
  int64_t d[PL_MAX_RANK];
  return pl_cal_value_dims4 (v, d) ? pl_cal_transform_key_dims (d, v->dtype, from, to) : NULL;
}

/* A 2-d pool with static shapes that the runtime generates (the only kind with layout choices). */
bool
pl_cal_pool_desc (const PlNode *pool, PlPoolDesc *d)
{
  g_autofree char *why = NULL;
  return pool && pl_pool_desc_from_node (pool, d, &why) && d->n == 2;
}

/* "pool max 1x64x112x112 k3x3 s2,2 p1,1,1,1 d1,1 o56x56 f32 NHWC", "pool global-avg 1x512x7x7 f32 NHWC";
 * an average that counts its pads is "avg-pads". */
char *
pl_cal_pool_key (const PlPoolDesc *d, PlLayout layout)
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
  return pl_cal_pool_desc (pool, &d) ? pl_cal_pool_key (&d, layout) : NULL;
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

/* "cuda NVIDIA H100 80GB HBM3, 132 SMs" (the emulator: "cuda passlab CUDA emulator (CPU), 4 SMs"). */
static char *
cuda_machine (GError **error)
{
  PlCudaContext *cuda = pl_cuda_get (error);
  return cuda ? g_strdup_printf ("cuda %s, %d SMs", pl_cuda_device_name (cuda), pl_cuda_sm_count (cuda)) : NULL;
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

/* Every line of the file: "machine\tbackend\tkey" -> "ms" (a line from
 * before measurements came in rounds) or "ms\trounds". */
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
      guint n = g_strv_length (f);
      if ((n != 4 && n != 5) || lines[i][0] == '#')
        continue;   /* a damaged or foreign line: ignored, rewritten without it */
      char *end = NULL;
      double ms = g_ascii_strtod (f[3], &end);
      if (end == f[3] || *end || !(ms >= 0) || isinf (ms))
        continue;
      guint64 rounds = 1;
      if (n == 5 && (!g_ascii_string_to_unsigned (f[4], 10, 1, 100, &rounds, NULL)))
        continue;
      g_hash_table_insert (all, g_strdup_printf ("%s\t%s\t%s", f[0], f[1], f[2]),
                           n == 5 ? g_strdup_printf ("%s\t%s", f[3], f[4]) : g_strdup (f[3]));
    }
  return all;
}

/* "machine \t backend \t key" -> Entry*: the process's view of the cache,
 * every entry it read from the file or measured. */
static GMutex seen_here_lock;
static GHashTable *seen_here;

static char *
full_key (const PlCalibration *cal, const char *key)
{
  return g_strdup_printf ("%s\t%s\t%s", cal->machine, pl_backend_name (cal->backend), key);
}

static GHashTable *
seen_here_table (void)
{
  if (!seen_here)
    seen_here = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  return seen_here;
}

static void
remember_measured (const PlCalibration *cal, const char *key, const Entry *e)
{
  g_mutex_lock (&seen_here_lock);
  g_hash_table_replace (seen_here_table (), full_key (cal, key), g_memdup2 (e, sizeof *e));
  g_mutex_unlock (&seen_here_lock);
}

/* The file's entries (just read into cal) that this process has not seen
 * join its view; then its view replaces what the file says: a value this
 * process read or measured once stays its value, though another process may
 * have rewritten the file since. */
static void
adopt_process_view (PlCalibration *cal)
{
  g_autofree char *prefix = full_key (cal, "");
  g_mutex_lock (&seen_here_lock);
  GHashTable *seen = seen_here_table ();
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init (&it, cal->entries);
  while (g_hash_table_iter_next (&it, &k, &v))
    {
      g_autofree char *full = full_key (cal, k);
      if (!g_hash_table_contains (seen, full))
        g_hash_table_insert (seen, g_steal_pointer (&full), g_memdup2 (v, sizeof (Entry)));
    }
  g_hash_table_iter_init (&it, seen);
  while (g_hash_table_iter_next (&it, &k, &v))
    if (g_str_has_prefix (k, prefix))
      g_hash_table_replace (cal->entries, g_strdup ((char *) k + strlen (prefix)), g_memdup2 (v, sizeof (Entry)));
  g_mutex_unlock (&seen_here_lock);
}

void
pl_calibration_forget_process_view (void)
{
  g_mutex_lock (&seen_here_lock);
  g_clear_pointer (&seen_here, g_hash_table_unref);
  g_mutex_unlock (&seen_here_lock);
}

static void
load_cache (PlCalibration *cal)
{
  g_autoptr (GHashTable) all = read_cache_lines (cal->path);
  g_autofree char *prefix = full_key (cal, "");
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init (&it, all);
  while (g_hash_table_iter_next (&it, &k, &v))
    if (g_str_has_prefix (k, prefix))
      {
        Entry *e = g_new0 (Entry, 1);
        char *end = NULL;
        e->ms = g_ascii_strtod (v, &end);
        e->rounds = *end == '\t' ? atoi (end + 1) : 1;
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
bool
pl_cal_save_cache (PlCalibration *cal, GError **error)
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
      if (e->source != PL_COST_MEASURED || !isfinite (e->ms) || e->in_context)
        continue;
      char buf[G_ASCII_DTOSTR_BUF_SIZE];
      g_hash_table_insert (all, full_key (cal, k),
                           g_strdup_printf ("%s\t%d", g_ascii_formatd (buf, sizeof buf, "%.6g", e->ms),
                                            MAX (e->rounds, 1)));
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
void
pl_cal_set_measured (PlCalibration *cal, const char *key, double ms)
{
  pl_cal_set_measured_rounds (cal, key, ms, PL_CAL_ROUNDS);
}

void
pl_cal_set_measured_rounds (PlCalibration *cal, const char *key, double ms, int rounds)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  Entry *e = g_new0 (Entry, 1);
  e->ms = g_ascii_strtod (g_ascii_formatd (buf, sizeof buf, "%.6g", ms), NULL);
  e->source = PL_COST_MEASURED;
  e->rounds = MAX (rounds, 1);
  e->this_process = true;
  g_hash_table_replace (cal->entries, g_strdup (key), e);
  g_hash_table_remove (cal->unsupported, key);
  remember_measured (cal, key, e);
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
      machine = g_strdup_printf ("cpu %s, %d threads, %s", model, cpu_threads (), pl_cpu_blas_name ());
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
  cal->spreads = g_array_new (FALSE, FALSE, sizeof (double));
  cal->layouts = (1u << PL_LAYOUT_COUNT) - 1;
  cal->impls = (1u << PL_CONV_IMPL_GEMM) | (1u << PL_CONV_IMPL_DIRECT);
  cal->llc_bytes = pl_cpu_last_level_cache_bytes ();
  load_cache (cal);
  adopt_process_view (cal);
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
  g_array_unref (cal->spreads);
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
  Entry *e = g_new0 (Entry, 1);
  e->ms = ms;
  e->source = source;
  e->rounds = source == PL_COST_MEASURED ? PL_CAL_ROUNDS : 0;
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
  double rate = pl_cal_gemm_rate (cal);
  if (impl == PL_CONV_IMPL_DIRECT)
    rate *= DIRECT_GEMM_FRACTION;
  else if (!conv_is_pointwise (c))
    {
      /* im2col: written, then read by the GEMM; the read hits the cache when the matrix fits */
      double per_image = esz * c->c_in * c->kernel[0] * c->kernel[1] * c->out[0] * c->out[1];
      double at_once = layout == PL_LAYOUT_NCHW ? per_image : per_image * c->batch;
      bytes += per_image * c->batch * (at_once <= cal->llc_bytes ? 1 : 2);
    }
  return MAX (flops / rate, bytes / pl_cal_bandwidth (cal));
}

/* --- costs --------------------------------------------------------------------------- */

bool
pl_cal_direct_supported (const PlConvDesc *c, PlLayout layout)
{
  PlConvDesc d = *c;
  d.x_layout = d.y_layout = layout;
  d.impl = PL_CONV_IMPL_DIRECT;
  g_autofree char *why = NULL;
  return pl_conv_direct_supported (&d, &why);
}

GArray *
pl_cal_direct_tiles (const PlCalibration *cal, const char *key, const PlConvDesc *c, PlLayout layout)
{
  GArray *tiles = g_array_new (FALSE, FALSE, sizeof (PlCalTile));
  g_autofree char *prefix = g_strdup_printf ("%s tile ", key);
  const guint32 now = direct_source_hash (c, layout);
  GHashTableIter it;
  gpointer k;
  g_hash_table_iter_init (&it, cal->entries);
  while (g_hash_table_iter_next (&it, &k, NULL))
    {
      PlCalTile t = { .key = k };
      unsigned int src;
      if (g_str_has_prefix (k, prefix) &&
          sscanf ((char *) k + strlen (prefix), "%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT " src %x",
                  &t.tile[0], &t.tile[1], &t.tile[2], &src) == 4 && src == now)
        g_array_append_val (tiles, t);
    }
  return tiles;
}

/* A direct conv's entries (c in layout). On the cpu each measured one
 * names its tile and kernel, "<key> tile XxYxZ src H": the pebble rule's,
 * a tuned one (tuned_target), or one an earlier rule chose — every one a
 * measurement on this machine, counted while H is the kernel the generator
 * writes now; the plain "<key>" counts only from a table (any tile: the
 * pebble rule's). On cuda the plain key is the kernel with its own tile.
 * The fastest known; its tile in tile[] (0s: the pebble rule's). NULL when
 * none. */
static const Entry *
best_direct (const PlCalibration *cal, const char *key, const PlConvDesc *c, PlLayout layout, int64_t tile[3])
{
  const Entry *best = lookup (cal, key);
  if (best && cal->backend == PL_BACKEND_CPU && best->source != PL_COST_TABLE)
    best = NULL;   /* a measured entry of a cache from before tiles were named: which kernel is unknown */
  tile[0] = tile[1] = tile[2] = 0;
  if (cal->backend != PL_BACKEND_CPU)
    return best;
  g_autoptr (GArray) tiles = pl_cal_direct_tiles (cal, key, c, layout);
  for (guint i = 0; i < tiles->len; i++)
    {
      const PlCalTile *t = &g_array_index (tiles, PlCalTile, i);
      const Entry *e = lookup (cal, t->key);
      if (e && (!best || e->ms < best->ms))
        {
          best = e;
          memcpy (tile, t->tile, sizeof t->tile);
        }
    }
  return best;
}

PlCost
pl_calibration_conv (PlCalibration *cal, const PlNode *conv, PlLayout layout, PlConvImpl impl)
{
  PlConvDesc c;
  if (!pl_cal_conv_desc (conv, &c))
    {
      /* not a 2-d conv with static shapes: it can only run as it is (NCHW, gemm); its cost is not modelled */
      return (PlCost) { layout == PL_LAYOUT_NCHW && impl == PL_CONV_IMPL_GEMM ? 0 : INFINITY, PL_COST_ANALYTIC };
    }
  g_autofree char *key = pl_cal_conv_key (&c, layout, impl);
  int64_t tile[3];
  const Entry *e = impl == PL_CONV_IMPL_DIRECT ? best_direct (cal, key, &c, layout, tile) : lookup (cal, key);
  if (e)
    return (PlCost) { e->ms, e->source };
  if (cal->measure && g_hash_table_contains (cal->unsupported, key))
    return (PlCost) { INFINITY, PL_COST_MEASURED };
  if (impl == PL_CONV_IMPL_DIRECT && !pl_cal_direct_supported (&c, layout))
    return (PlCost) { INFINITY, PL_COST_ANALYTIC };
  return (PlCost) { analytic_conv (cal, &c, layout, impl), PL_COST_ANALYTIC };
}

PlCost
pl_calibration_transform (PlCalibration *cal, const PlValue *v, PlLayout from, PlLayout to)
{
  int64_t d[PL_MAX_RANK];
  if (from == to)
    return (PlCost) { 0, PL_COST_ANALYTIC };
  if (!pl_cal_value_dims4 (v, d))
    return (PlCost) { INFINITY, PL_COST_ANALYTIC };
  g_autofree char *key = pl_cal_transform_key_dims (d, v->dtype, from, to);
  const Entry *e = lookup (cal, key);
  if (e)
    return (PlCost) { e->ms, e->source };
  if (cal->measure && g_hash_table_contains (cal->unsupported, key))
    return (PlCost) { INFINITY, PL_COST_MEASURED };
  int64_t bytes = (int64_t) pl_dtype_size (v->dtype) * d[0] * d[1] * d[2] * d[3];
  return (PlCost) { 2.0 * (double) bytes / pl_cal_bandwidth (cal), PL_COST_ANALYTIC };
}

/* The Conv a kernel runs: its node, or the one in its fusion body. */
static const PlNode *
kernel_conv (const PlNode *n)
{
  if (n->op == PL_OP_Conv)
    return n;
  for (guint i = 0; n->body && i < n->body->nodes->len; i++)
    {
      const PlNode *b = kernel_conv (n->body->nodes->pdata[i]);
      if (b)
        return b;
    }
  return NULL;
}

bool
pl_calibration_predict_kernel (PlCalibration *cal, const PlNode *node, PlCost *cost, const char **what, char **how)
{
  const PlNode *conv = node ? kernel_conv (node) : NULL;
  if (conv && conv->outputs[0])
    {
      PlConvDesc d;
      g_autofree char *why = NULL;
      if (!pl_conv_desc_from_node (conv, &d, &why))
        return false;
      *cost = pl_calibration_conv (cal, conv, d.y_layout, d.impl);
      *what = node->body ? "Conv+epilogue" : "Conv";
      *how = g_strdup_printf ("%s %s", pl_layout_name (d.y_layout), impl_name (d.impl));
      return true;
    }
  if (node && node->op == PL_OP_LayoutTransform && node->inputs[0] && node->outputs[0])
    {
      PlLayout from = node->inputs[0]->layout, to = node->outputs[0]->layout;
      *cost = pl_calibration_transform (cal, node->inputs[0], from, to);
      *what = "LayoutTransform";
      *how = g_strdup_printf ("%s>%s", pl_layout_name (from), pl_layout_name (to));
      return true;
    }
  return false;
}

PlCost
pl_calibration_pool (PlCalibration *cal, const PlNode *pool, PlLayout layout)
{
  PlPoolDesc d;
  if (!pl_cal_pool_desc (pool, &d))
    return (PlCost) { layout == PL_LAYOUT_NCHW ? 0 : INFINITY, PL_COST_ANALYTIC };
  g_autofree char *key = pl_cal_pool_key (&d, layout);
  const Entry *e = lookup (cal, key);
  if (e)
    return (PlCost) { e->ms, e->source };
  if (cal->measure && g_hash_table_contains (cal->unsupported, key))
    return (PlCost) { INFINITY, PL_COST_MEASURED };
  return (PlCost) { (double) pl_pool_bytes (&d) / pl_cal_bandwidth (cal), PL_COST_ANALYTIC };
}

void
pl_calibration_conv_tile (PlCalibration *cal, const PlNode *conv, PlLayout layout, int64_t tile[3])
{
  PlConvDesc c;
  tile[0] = tile[1] = tile[2] = 0;
  if (cal->backend != PL_BACKEND_CPU || !pl_cal_conv_desc (conv, &c))
    return;   /* cuda: the kernel's own pebble tile for a block */
  g_autofree char *key = pl_cal_conv_key (&c, layout, PL_CONV_IMPL_DIRECT);
  if (best_direct (cal, key, &c, layout, tile) && tile[0] > 0)
    return;   /* a tuned tile measured faster than the pebble rule's */
  c.x_layout = c.y_layout = layout;
  pl_conv_cpu_pebble_tile (&c, 0, tile);
}


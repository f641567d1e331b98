/* calibrate-measure.c — measuring for the calibration (see calibrate.h and
 * the top of calibrate.c): the machine's ceilings (memcpy, sgemm and the
 * FMA peak on the cpu, memcpy and GEMM through the runtime on cuda), the one calibration graph of
 * everything the cache lacks (a branch per conv, pool and transform), and
 * the tuned tiles of direct convolutions (layout.tune). */
#define G_LOG_DOMAIN "passlab"
#include "calibrate-private.h"

#include "backend.h"
#include "conv-direct.h"
#include "cpu-machine.h"
#include "interp.h"
#include "stats.h"
#include "tune.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#define REPEATS 5

/* --- ceilings ------------------------------------------------------------------------ */

static double
now_ms (void)
{
  return g_get_monotonic_time () / 1000.0;
}

static bool round_is_calm (double steal_ms, double others_ms, double wall_ms);

/* A ceiling on the cpu is the best run of its work in calm rounds, like
 * the calibration's entries: a round runs the work `reps` times (enough
 * for the round to span several /proc/stat ticks, so that a process
 * beside us shows), after one warm-up run; rounds in which the hypervisor
 * or other processes took CPU time run again, up to CEILING_MAX_ROUNDS.
 * A ceiling measured beside a build would be low and make every share of
 * it look high (a conv at 107% of an FMA peak measured so). */
#define CEILING_ROUNDS     PL_CAL_ROUNDS
#define CEILING_MAX_ROUNDS 6

typedef struct {
  double (*run) (gpointer data);   /* one run of the work: its ms */
  gpointer data;
  int      reps;
} CeilingWork;

/* The best run's ms over the calm rounds; *calm: whether any round was
 * (else the best over all rounds). */
static double
ceiling_best (const CeilingWork *w, bool *calm)
{
  w->run (w->data);
  double best_calm = INFINITY, best_any = INFINITY;
  int n_calm = 0;
  for (int r = 0; r < CEILING_MAX_ROUNDS && n_calm < CEILING_ROUNDS; r++)
    {
      double s0 = pl_cpu_steal_ms (), o0 = pl_cpu_others_ms (), t0 = now_ms (), best = INFINITY;
      for (int k = 0; k < w->reps; k++)
        best = MIN (best, w->run (w->data));
      double s1 = pl_cpu_steal_ms (), o1 = pl_cpu_others_ms ();
      best_any = MIN (best_any, best);
      if (round_is_calm (s0 >= 0 && s1 >= 0 ? s1 - s0 : -1, o0 >= 0 && o1 >= 0 ? o1 - o0 : -1, now_ms () - t0))
        {
          n_calm++;
          best_calm = MIN (best_calm, best);
        }
    }
  *calm = n_calm > 0;
  return n_calm > 0 ? best_calm : best_any;
}

typedef struct {
  char *a, *b;
} CopyWork;

static double
run_copy (gpointer data)
{
  CopyWork *w = data;
  double t = now_ms ();
  memcpy (w->b, w->a, CEILING_COPY_BYTES);
  return now_ms () - t;
}

typedef struct {
  float *x, *y, *z;
} GemmWork;

static double
run_gemm (gpointer data)
{
  GemmWork *w = data;
  int n = CEILING_GEMM_N;
  double t = now_ms ();
  cblas_sgemm (CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, w->x, n, w->y, n, 0.0f, w->z, n);
  return now_ms () - t;
}

/* The best 256 MiB memcpy and 1024^3 sgemm on this cpu (rounds of ~50 ms);
 * *calm: whether both had a calm round. */
static void
measure_cpu_ceilings (double *copy_ms, double *gemm_ms, bool *calm)
{
  CopyWork copy = { g_malloc (CEILING_COPY_BYTES), g_malloc (CEILING_COPY_BYTES) };
  memset (copy.a, 1, CEILING_COPY_BYTES);
  memset (copy.b, 2, CEILING_COPY_BYTES);
  bool copy_calm, gemm_calm;
  *copy_ms = ceiling_best (&(CeilingWork) { run_copy, &copy, 3 }, &copy_calm);
  g_free (copy.a);
  g_free (copy.b);
  int n = CEILING_GEMM_N;
  GemmWork gemm = { g_new (float, (gsize) n * n), g_new (float, (gsize) n * n), g_new0 (float, (gsize) n * n) };
  for (int i = 0; i < n * n; i++)
    gemm.x[i] = gemm.y[i] = (float) (i % 17) / 17.0f;
  /* the warm-up run wakes BLAS's threads */
  *gemm_ms = ceiling_best (&(CeilingWork) { run_gemm, &gemm, 5 }, &gemm_calm);
  g_free (gemm.x);
  g_free (gemm.y);
  g_free (gemm.z);
  *calm = copy_calm && gemm_calm;
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

/* The peak kernel: each thread runs 12 independent chains of vector FMAs
 * (enough to hide an FMA's latency on two pipes) in the widest vectors the
 * compiler targets, and returns the FLOPs done; the sums keep the chains
 * alive. Compiled like the generated kernels (-O3 -march=native). */
static const char fma_peak_source[] =
  "#include <stdint.h>\n"
  "#if defined(__AVX512F__)\n#define VB 64\n#elif defined(__AVX__)\n#define VB 32\n#else\n#define VB 16\n#endif\n"
  "typedef float pl_v __attribute__ ((vector_size (VB)));\n"
  "double pl_fma_peak (int64_t iters)\n"
  "{\n"
  "  double flops = 0;\n"
  "#pragma omp parallel reduction(+ : flops)\n"
  "  {\n"
  "    pl_v a[12], m = (pl_v) {} + 0.999f, b = (pl_v) {} + 0.001f;\n"
  "    for (int j = 0; j < 12; j++)\n"
  "      a[j] = (pl_v) {} + (float) j;\n"
  "    for (int64_t i = 0; i < iters; i++)\n"
  "      for (int j = 0; j < 12; j++)\n"
  "        a[j] = a[j] * m + b;\n"
  "    float sum = 0;\n"
  "    for (int j = 0; j < 12; j++)\n"
  "      for (int l = 0; l < VB / 4; l++)\n"
  "        sum += a[j][l];\n"
  "    flops += 2.0 * 12 * (VB / 4) * (double) iters + (sum == -1.0f);\n"
  "  }\n"
  "  return flops;\n"
  "}\n";

typedef struct {
  double (*peak) (int64_t iters);
  int64_t iters;   /* for CEILING_FMA_FLOPS on the whole team */
  double  flops;   /* what the last run did */
} FmaWork;

static double
run_fma (gpointer data)
{
  FmaWork *w = data;
  double t = now_ms ();
  w->flops = w->peak (w->iters);
  return (now_ms () - t) * CEILING_FMA_FLOPS / w->flops;
}

/* ms for CEILING_FMA_FLOPS at the peak (rounds of three ~20 ms runs), or 0
 * when the kernel could not be built; *calm as ceiling_best's. */
static double
measure_cpu_fma (const char *kernel_dir, bool *calm)
{
  g_autoptr (GError) error = NULL;
  *calm = false;
  PlCpuModule *m = pl_cpu_module_compile (fma_peak_source, kernel_dir, NULL, &error);
  if (!m)
    {
      g_debug ("calibration: the peak kernel: %s", error->message);
      return 0;
    }
  FmaWork w = { (double (*) (int64_t)) pl_cpu_module_symbol (m, "pl_fma_peak"), 1000, 0 };
  double ms = 0;
  if (w.peak)
    {
      /* iterations for CEILING_FMA_FLOPS, from the FLOPs of a short run */
      w.iters = (int64_t) (CEILING_FMA_FLOPS / (w.peak (w.iters) / (double) w.iters));
      ms = ceiling_best (&(CeilingWork) { run_fma, &w, 3 }, calm);
    }
  pl_cpu_module_free (m);
  return isfinite (ms) ? ms : 0;
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

/* The kernels' cache directory of a calibration (NULL: the default one). */
static char *
kernel_dir (PlCalibration *cal)
{
  return g_getenv ("PASSLAB_CACHE_DIR") ? g_build_filename (cal->dir, "kernels", NULL) : NULL;
}

/* A ceiling's cache entry, when it serves: given by a table, or measured
 * in calm rounds (one measured while the machine stayed busy is measured
 * again, like any entry) and not to be measured again (remeasure). */
static const Entry *
ceiling_entry (PlCalibration *cal, const char *key)
{
  const Entry *e = g_hash_table_lookup (cal->entries, key);
  if (!e || e->ms <= 0)
    return NULL;
  return PL_CAL_ENTRY_UNSETTLED (cal, e) ? NULL : e;
}

/* Enters a ceiling measured now (as of one round when no round was calm,
 * so the next process measures it again); returns its ms. */
static double
set_ceiling (PlCalibration *cal, const char *key, double ms, bool calm)
{
  pl_cal_set_measured_rounds (cal, key, ms, calm ? PL_CAL_ROUNDS : 1);
  if (!calm)
    cal->n_unsettled++;
  return ((const Entry *) g_hash_table_lookup (cal->entries, key))->ms;
}

static void
save_ceilings (PlCalibration *cal)
{
  g_autoptr (GError) save_error = NULL;
  if (!pl_cal_save_cache (cal, &save_error))
    g_debug ("calibration: %s", save_error->message);
}

/* The cpu's peak from the cache, else measured now and cached. */
static void
ensure_fma (PlCalibration *cal)
{
  if (cal->backend != PL_BACKEND_CPU)
    return;
  const Entry *f = ceiling_entry (cal, KEY_FMA);
  if (f)
    {
      cal->fma_ms = f->ms;
      return;
    }
  g_autofree char *kernels = kernel_dir (cal);
  bool calm;
  double ms = measure_cpu_fma (kernels, &calm);
  if (ms <= 0)
    return;
  cal->fma_ms = set_ceiling (cal, KEY_FMA, ms, calm);
  save_ceilings (cal);
}

/* The ceilings from the cache, else measured now and cached. The cache keeps
 * them whichever mode this calibration is in (they are facts of the machine). */
static void
ensure_ceilings (PlCalibration *cal)
{
  if (cal->have_ceilings)
    return;
  ensure_fma (cal);
  const Entry *c = ceiling_entry (cal, KEY_COPY), *m = ceiling_entry (cal, KEY_GEMM);
  if (c && m)
    {
      cal->copy_ms = c->ms;
      cal->gemm_ms = m->ms;
      cal->have_ceilings = true;
      return;
    }
  double copy_ms = 0, gemm_ms = 0;
  bool calm = true;
  g_autoptr (GError) error = NULL;
  cal->have_ceilings = true;
  if (cal->backend == PL_BACKEND_CPU)
    measure_cpu_ceilings (&copy_ms, &gemm_ms, &calm);
  else if (!measure_runtime_ceilings (cal, &copy_ms, &gemm_ms, &error))
    {
      /* nothing measured: an H100's order of magnitude (2.5 TB/s, 50 TFLOP/s), not cached */
      g_free (cal->last_error);
      cal->last_error = g_strdup_printf ("ceilings: %s", error->message);
      cal->copy_ms = 2.0 * CEILING_COPY_BYTES / 2.5e9;
      cal->gemm_ms = 2.0 * CEILING_GEMM_N * CEILING_GEMM_N * (double) CEILING_GEMM_N / 5e10;
      return;
    }
  cal->copy_ms = set_ceiling (cal, KEY_COPY, copy_ms, calm);
  cal->gemm_ms = set_ceiling (cal, KEY_GEMM, gemm_ms, calm);
  save_ceilings (cal);
}

/* Bytes (read + written) per ms, and FLOPs per ms. */
double
pl_cal_bandwidth (PlCalibration *cal)
{
  ensure_ceilings (cal);
  return 2.0 * CEILING_COPY_BYTES / cal->copy_ms;
}

double
pl_cal_gemm_rate (PlCalibration *cal)
{
  ensure_ceilings (cal);
  return 2.0 * CEILING_GEMM_N * CEILING_GEMM_N * (double) CEILING_GEMM_N / cal->gemm_ms;
}

double
pl_calibration_fma_peak (PlCalibration *cal)
{
  ensure_ceilings (cal);
  return cal->fma_ms > 0 ? CEILING_FMA_FLOPS / cal->fma_ms / 1e6 : 0;
}

void
pl_calibration_ceilings (PlCalibration *cal, double *gbps, double *gflops)
{
  if (gbps)
    *gbps = pl_cal_bandwidth (cal) / 1e6;
  if (gflops)
    *gflops = pl_cal_gemm_rate (cal) / 1e6;
}

PlCost
pl_calibration_bytes (PlCalibration *cal, int64_t bytes)
{
  return (PlCost) { (double) bytes / pl_cal_bandwidth (cal), PL_COST_ANALYTIC };
}

/* --- measuring ----------------------------------------------------------------------- */

/* The graph runs in rounds (each a warm-up and REPEATS timed runs) and a
 * kernel's time is the least of its rounds' medians: on a shared machine
 * other work only ever lengthens a run, and a single round caught in a burst
 * of it was cached for good (the ResNet stack's first conv, NHWC direct,
 * stood at 4.8 ms in a cache where it runs in 2.3-2.5). A round in which the
 * hypervisor took time from our CPUs (steal, /proc/stat), or another process
 * of this machine ran beside us (a build: ResNet-18's 56x56 convs cached at
 * 1.59 ms that run in 0.88), does not count and runs again, up to MAX_ROUNDS
 * rounds in all; then every round counts, and the entries are cached as of
 * one round, to be measured again next time. */
#define ROUNDS PL_CAL_ROUNDS
#define MAX_ROUNDS 6
#define STEAL_TOLERANCE_MS 20.0   /* two ticks of /proc/stat */

/* Whether a round of wall_ms was left alone: the hypervisor took under two
 * ticks, and other processes under two ticks plus a tenth of the round
 * (daemons wake now and then). Unknown readings (-1) count as calm.
 * PASSLAB_CALIBRATE_IGNORE_LOAD (set by the test suite, whose programs run
 * beside each other) leaves the other processes out. */
static bool
round_is_calm (double steal_ms, double others_ms, double wall_ms)
{
  if (g_getenv ("PASSLAB_CALIBRATE_IGNORE_LOAD"))
    others_ms = -1;
  return steal_ms < STEAL_TOLERANCE_MS && others_ms < STEAL_TOLERANCE_MS + 0.1 * wall_ms;
}

/* One round: the report, and whether it was left alone (round_is_calm). */
static PlRunReport *
run_round (PlExecutable *e, const PlGraph *g, PlTensor **inputs, gboolean *calm, GError **error)
{
  double s0 = pl_cpu_steal_ms (), o0 = pl_cpu_others_ms ();
  gint64 t0 = g_get_monotonic_time ();
  PlRunReport *report = NULL;
  PlTensor **outs = pl_executable_run (e, inputs, REPEATS, &report, error);
  double s1 = pl_cpu_steal_ms (), o1 = pl_cpu_others_ms ();
  *calm = round_is_calm (s0 >= 0 && s1 >= 0 ? s1 - s0 : -1, o0 >= 0 && o1 >= 0 ? o1 - o0 : -1,
                         (double) (g_get_monotonic_time () - t0) / 1000.0);
  if (!outs)
    {
      g_clear_pointer (&report, pl_run_report_free);
      return NULL;
    }
  pl_interp_free_outputs (outs, (int) g->outputs->len);
  return report;
}

/* Runs g's kernels in rounds (above): the report of the first counted round
 * with each kernel's median the least of the counted rounds', and, when
 * spread is not NULL, spread[k] (g_free it) the largest of kernel k's over
 * that least; *n_settled (when not NULL): the undisturbed rounds, 0 when
 * every round was disturbed (and so counted). */
static PlRunReport *
run_graph_spread (PlCalibration *cal, const PlGraph *g, double **spread, int *n_settled, GError **error)
{
  PlCompileOptions o;
  pl_compile_options_init (&o, cal->backend);
  g_autofree char *kernels = kernel_dir (cal);
  o.cache_dir = kernels;
  PlExecutable *e = pl_executable_new (g, &o, error);
  if (!e)
    return NULL;
  PlTensor **inputs = g->inputs->len ? pl_random_inputs (g, 1, 1, error) : NULL;
  g_autoptr (GPtrArray) rounds = g_ptr_array_new_with_free_func ((GDestroyNotify) pl_run_report_free);
  g_autoptr (GArray) calm = g_array_new (FALSE, FALSE, sizeof (gboolean));
  int n_calm = 0;
  bool ok = inputs || g->inputs->len == 0;
  while (ok && n_calm < ROUNDS && (int) rounds->len < MAX_ROUNDS)
    {
      gboolean counts = TRUE;
      PlRunReport *r = run_round (e, g, inputs, &counts, error);
      if ((ok = r != NULL))
        {
          g_ptr_array_add (rounds, r);
          g_array_append_val (calm, counts);
          n_calm += counts;
          cal->n_disturbed_rounds += !counts;
        }
    }
  if (inputs)
    pl_interp_free_outputs (inputs, (int) g->inputs->len);
  pl_executable_free (e);
  if (!ok)
    return NULL;
  /* every round counts when none was calm */
  guint base = 0;
  while (n_calm && !g_array_index (calm, gboolean, base))
    base++;
  PlRunReport *best = g_steal_pointer (&rounds->pdata[base]);
  double *hi = g_new (double, MAX (best->n_kernels, 1));
  for (int k = 0; k < best->n_kernels; k++)
    hi[k] = best->kernels[k].median_ms;
  for (guint i = base + 1; i < rounds->len; i++)
    {
      const PlRunReport *r = rounds->pdata[i];
      if ((n_calm && !g_array_index (calm, gboolean, i)) || r->n_kernels != best->n_kernels)
        continue;
      for (int k = 0; k < best->n_kernels; k++)
        if (r->kernels[k].node_id == best->kernels[k].node_id)
          {
            best->kernels[k].median_ms = MIN (best->kernels[k].median_ms, r->kernels[k].median_ms);
            hi[k] = MAX (hi[k], r->kernels[k].median_ms);
          }
    }
  for (int k = 0; k < best->n_kernels; k++)
    hi[k] = best->kernels[k].median_ms > 0 ? hi[k] / best->kernels[k].median_ms : 1.0;
  if (spread)
    *spread = hi;
  else
    g_free (hi);
  if (n_settled)
    *n_settled = n_calm;
  return best;
}

static PlRunReport *
run_graph (PlCalibration *cal, const PlGraph *g, GError **error)
{
  return run_graph_spread (cal, g, NULL, NULL, error);
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
  if (layout == PL_LAYOUT_NCHW || !pl_cal_value_dims4 (xin, xd) || !pl_cal_value_dims4 (y, yd))
    return;
  g_ptr_array_add (nodes, xin->producer);
  g_ptr_array_add (keys, pl_cal_transform_key_dims (xd, xin->dtype, PL_LAYOUT_NCHW, layout));
  g_ptr_array_add (nodes, y->producer);
  g_ptr_array_add (keys, pl_cal_transform_key_dims (yd, y->dtype, layout, PL_LAYOUT_NCHW));
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
        pl_conv_cpu_pebble_tile (&d, 0, tile);
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
  g_autofree double *spread = NULL;
  int calm_rounds = 0;
  g_autoptr (PlRunReport) r = run_graph_spread (cal, g, &spread, &calm_rounds, error);
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
          pl_cal_set_measured_rounds (cal, key, k->median_ms, calm_rounds);
          cal->n_measured++;
          cal->n_unsettled += calm_rounds == 0;
          double sp = spread[k - r->kernels];
          g_array_append_val (cal->spreads, sp);
        }
    }
  return true;
}

/* Whether the calibration has key: a table's entry, or a measured one in
 * full rounds or by this process, unless in remeasure mode. */
static bool
has_entry (const PlCalibration *cal, const char *key)
{
  const Entry *e = g_hash_table_lookup (cal->entries, key);
  return e && !PL_CAL_ENTRY_UNSETTLED (cal, e);
}

/* Adds t unless a planned branch has it, or the cache has it and again is
 * false; planned owns its keys. */
static void
add_target (PlCalibration *cal, GPtrArray *targets, GHashTable *planned, Target *t, bool again)
{
  if ((!again && has_entry (cal, t->key)) || g_hash_table_contains (planned, t->key))
    {
      target_free (t);
      return;
    }
  g_hash_table_add (planned, g_strdup (t->key));
  if ((t->conv || t->pool) && t->layout != PL_LAYOUT_NCHW)
    {
      /* its branch measures the transforms into and out of its layout too */
      g_hash_table_add (planned, pl_cal_transform_key_dims (t->dims, t->dtype, PL_LAYOUT_NCHW, t->layout));
      g_hash_table_add (planned, pl_cal_transform_key_dims (t->out_dims, t->dtype, t->layout, PL_LAYOUT_NCHW));
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
  pl_cal_value_dims4 (node->inputs[0], t->dims);
  pl_cal_value_dims4 (node->outputs[0], t->out_dims);
  return t;
}

/* With tuning on (cpu): the pruned tile search (tune.h) for the direct conv
 * of target t (the pebble tile's, "<key> tile <pebble>"), unless the cache
 * says it was searched ("tuned <key> tile <pebble>", the trials). Its
 * TUNED_CANDIDATES fastest tiles other than the pebble rule's are measured
 * in the batch like every other kernel, as "<key> tile XxYxZ", so they and
 * the pebble tile compete on the same footing: a trial is one quick timing,
 * and on a shared machine the search's own best was often not the best (the
 * stack's 64-channel 56x56 convs: 8x14x64 chosen at 2.26 ms where 32x4x64,
 * also in the space, runs in 1.65). */
#define TUNED_CANDIDATES 3

static gint
compare_trials (gconstpointer a, gconstpointer b)
{
  double x = ((const PlTuneTrial *) a)->ms, y = ((const PlTuneTrial *) b)->ms;
  return (x > y) - (x < y);
}

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
  pl_cal_set_measured (cal, marker, cal->tune_trials);
  g_autoptr (GArray) order = g_array_copy (r->pruned);
  g_array_sort (order, compare_trials);
  g_autofree char *key = pl_cal_conv_key (&t->desc, t->layout, PL_CONV_IMPL_DIRECT);
  for (guint i = 0, n = 0; i < order->len && n < TUNED_CANDIDATES; i++)
    {
      const int64_t *b = g_array_index (order, PlTuneTrial, i).tile;
      if (memcmp (b, r->pebble_tile, sizeof r->pebble_tile) == 0)
        continue;
      Target *tt = g_memdup2 (t, sizeof *t);
      tt->key = pl_cal_tile_key (key, &t->desc, t->layout, b);
      memcpy (tt->tile, b, sizeof tt->tile);
      add_target (cal, targets, planned, tt, false);
      n++;
    }
}

/* In remeasure mode, or when its conv is measured again (missing_targets):
 * every tile the cache measured for the direct conv of target t (the
 * current kernel's; tuned ones too), measured again. */
static void
measured_tiles_again (PlCalibration *cal, GPtrArray *targets, GHashTable *planned, const Target *t, const char *key)
{
  g_autoptr (GArray) tiles = pl_cal_direct_tiles (cal, key, &t->desc, t->layout);
  for (guint i = 0; i < tiles->len; i++)
    {
      const PlCalTile *ct = &g_array_index (tiles, PlCalTile, i);
      Target *tt = g_memdup2 (t, sizeof *t);
      tt->key = g_strdup (ct->key);
      memcpy (tt->tile, ct->tile, sizeof tt->tile);
      add_target (cal, targets, planned, tt, true);
    }
}

void
pl_calibration_set_remeasure (PlCalibration *cal, bool remeasure)
{
  cal->remeasure = remeasure;
}

bool
pl_calibration_round_spread (const PlCalibration *cal, double *median, double *max)
{
  guint n = cal->spreads->len;
  if (n == 0)
    return false;
  g_autofree double *v = g_memdup2 (cal->spreads->data, n * sizeof (double));
  *median = pl_median_sort (v, (int) n);
  *max = v[n - 1];
  return true;
}

int
pl_calibration_n_disturbed_rounds (const PlCalibration *cal)
{
  return cal->n_disturbed_rounds;
}

int
pl_calibration_n_unsettled (const PlCalibration *cal)
{
  return cal->n_unsettled;
}

void
pl_calibration_set_tuning (PlCalibration *cal, int trials)
{
  cal->tune_trials = MAX (trials, 0);
}

/* Whether a node's targets (one per layout, and impl) are to be measured:
 * one of them has no entry. Then all of them are, in one batch: costs
 * measured at different times are not comparable here (two calibrations of
 * ResNeXt-50's convs at batch 8, 70 minutes apart: the later one's entries
 * 0.65-0.91x the earlier's, median 0.81x, and the ratio of NHWC's to CHWN's
 * cost within 5% for most shapes), and the pass compares a node's layouts
 * with each other; so when a new kernel (a generator's change) or a new
 * layout needs measuring, the layouts it is compared with come along. */
static bool
group_stale (PlCalibration *cal, GPtrArray *group)
{
  for (guint i = 0; i < group->len; i++)
    if (!has_entry (cal, ((Target *) group->pdata[i])->key))
      return true;
  return false;
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
      g_autoptr (GPtrArray) group = g_ptr_array_new ();   /* the node's targets, stolen by add_target */
      if (pl_cal_pool_desc (node, &pd))
        {
          g_ptr_array_add (values, node->inputs[0]);
          g_ptr_array_add (values, node->outputs[0]);
          for (int l = 0; l < PL_LAYOUT_COUNT; l++)
            if (cal->layouts & (1u << l))
              {
                Target *t = node_target (pl_cal_pool_key (&pd, l), node, l);
                t->pool = true;
                t->pool_desc = pd;
                g_ptr_array_add (group, t);
              }
          bool stale = group_stale (cal, group);
          for (guint k = 0; k < group->len; k++)
            add_target (cal, targets, planned, group->pdata[k], stale);
        }
      else if (node->op == PL_OP_Conv && pl_cal_conv_desc (node, &c))
        {
          g_ptr_array_add (values, node->inputs[0]);
          g_ptr_array_add (values, node->outputs[0]);
          for (int l = 0; l < PL_LAYOUT_COUNT; l++)
            for (int m = 0; m <= PL_CONV_IMPL_DIRECT; m++)
              {
                if (!(cal->layouts & (1u << l)) || !(cal->impls & (1u << m)))
                  continue;
                if (m == PL_CONV_IMPL_DIRECT && !pl_cal_direct_supported (&c, l))
                  continue;
                g_autofree char *key = pl_cal_conv_key (&c, l, m);
                int64_t pebble[3] = { 0, 0, 0 };
                if (m == PL_CONV_IMPL_DIRECT && cal->backend == PL_BACKEND_CPU)
                  {
                    PlConvDesc d = c;
                    d.x_layout = d.y_layout = l;
                    pl_conv_cpu_pebble_tile (&d, 0, pebble);
                  }
                Target *t = node_target (pebble[0] > 0 ? pl_cal_tile_key (key, &c, l, pebble) : g_strdup (key), node, l);
                t->conv = true;
                t->desc = c;
                t->impl = m;
                memcpy (t->tile, pebble, sizeof pebble);
                g_ptr_array_add (group, t);
              }
          bool stale = group_stale (cal, group);
          for (guint k = 0; k < group->len; k++)
            {
              Target *t = group->pdata[k];
              if (t->impl == PL_CONV_IMPL_DIRECT)
                {
                  tuned_target (cal, targets, planned, node, t);
                  if ((cal->remeasure || stale) && cal->backend == PL_BACKEND_CPU)
                    {
                      g_autofree char *key = pl_cal_conv_key (&c, t->layout, t->impl);
                      measured_tiles_again (cal, targets, planned, t, key);
                    }
                }
              add_target (cal, targets, planned, t, stale);
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
      if (!pl_cal_value_dims4 (v, d) || (v->dtype != PL_DTYPE_F32 && v->dtype != PL_DTYPE_F64))
        continue;
      for (int a = 0; a < PL_LAYOUT_COUNT; a++)
        for (int b = 0; b < PL_LAYOUT_COUNT; b++)
          {
            if (a == b || !(cal->layouts & (1u << a)) || !(cal->layouts & (1u << b)))
              continue;
            Target *t = g_new0 (Target, 1);
            *t = (Target) { .key = pl_cal_transform_key_dims (d, v->dtype, a, b), .from = a, .layout = b, .dtype = v->dtype };
            memcpy (t->dims, d, sizeof t->dims);
            add_target (cal, targets, planned, t, false);
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
  return pl_cal_save_cache (cal, error);
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


/* --- in context ------------------------------------------------------------------------ */

/* The cost key of what node computes in g as it stands (its layouts, impl
 * and tile), or NULL: a Conv, a pool or a LayoutTransform. */
static char *
key_in_graph (const PlCalibration *cal, const PlNode *node)
{
  PlConvDesc c;
  PlPoolDesc pd;
  int64_t d[4];
  if (node->op == PL_OP_LayoutTransform && pl_cal_value_dims4 (node->inputs[0], d))
    return pl_cal_transform_key_dims (d, node->inputs[0]->dtype, node->inputs[0]->layout, node->outputs[0]->layout);
  if (pl_cal_pool_desc (node, &pd))
    return pl_cal_pool_key (&pd, node->outputs[0]->layout);
  if (node->op != PL_OP_Conv || !pl_cal_conv_desc (node, &c) || node->inputs[0]->layout != node->outputs[0]->layout)
    return NULL;
  PlLayout layout = node->outputs[0]->layout;
  bool direct = g_strcmp0 (pl_node_attr_string (node, "impl", "gemm"), "direct") == 0;
  char *key = pl_cal_conv_key (&c, layout, direct ? PL_CONV_IMPL_DIRECT : PL_CONV_IMPL_GEMM);
  if (!direct || cal->backend != PL_BACKEND_CPU)
    return key;
  const int64_t *t;
  int n;
  int64_t tile[3];
  if (pl_node_attr_ints (node, "tile", &t, &n) && n == 3)
    memcpy (tile, t, sizeof tile);
  else
    {
      c.x_layout = c.y_layout = layout;
      pl_conv_cpu_pebble_tile (&c, 0, tile);
    }
  char *tiled = pl_cal_tile_key (key, &c, layout, tile);
  g_free (key);
  return tiled;
}

int
pl_calibration_measure_graph (PlCalibration *cal, const PlGraph *g, GError **error)
{
  g_autoptr (PlRunReport) r = run_graph (cal, g, error);
  if (!r)
    return -1;
  int n = 0;
  for (guint i = 0; i < g->nodes->len; i++)
    {
      const PlNode *node = g->nodes->pdata[i];
      g_autofree char *key = key_in_graph (cal, node);
      const PlKernelTiming *k = key ? timing_of (r, node) : NULL;
      if (!k || k->fallback)
        continue;
      Entry *e = g_new0 (Entry, 1);
      e->ms = k->median_ms;
      e->source = PL_COST_MEASURED;
      e->in_context = true;
      g_hash_table_replace (cal->entries, g_strdup (key), e);
      n++;
    }
  cal->n_in_context += n;
  return n;
}

int
pl_calibration_n_in_context (const PlCalibration *cal)
{
  return cal->n_in_context;
}

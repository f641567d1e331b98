/* tune.c — the autotuner of the direct convolution's tile (seed 003; see
 * tune.h and conv-direct.h).
 *
 * The spaces. Along x (<= OW), y (<= OH) and z (<= K/group) a tile size is
 * a divisor of the dim (no ragged edge) or a power of two (what one tries
 * for vectors and caches); the full space is the product of the three
 * lists, a few hundred tiles for a ResNet layer. The pruned space keeps the
 * tiles within a factor F of both pebble equations, xy = R z and xyz = S
 * (conv-direct.c defines S and R), and those as near xy = R z whose working
 * set fits the L1 (pruned_space); F = 2, doubled until at least 8 tiles
 * (or the whole space) are in, and the rule's own tile is always in.
 *
 * The searches. The kernel is compiled once (the tile is a run-time
 * argument); each search walks its space in a seeded random order (the
 * pruned one starts at the pebble tile), and a trial is one warm-up run
 * plus `repeat` timed runs, of which the fastest counts: a direct conv does
 * the same work every run, so time above the fastest is interference (on a
 * shared machine a descheduled thread doubles a run), and a median of three
 * lets one unlucky stretch rank a tile wrongly. The two searches
 * alternate trial by trial so that a change in the machine's load hits
 * both alike. A trial whose warm-up already takes 8 times the search's best
 * (before the first: the pebble tile's checking run) is not repeated: it
 * cannot win, and tiny tiles can be very slow.
 *
 * Correctness: the output is compared with a plain reference sum at every
 * output (small convs) or at 4096 sampled ones, with the pebble tile before
 * the searches and with every trial's tile after its runs.
 */
#define G_LOG_DOMAIN "passlab"
#include "tune.h"

#include <math.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "conv-direct.h"
#include "kernel-plan.h"
#include "stats.h"

#define PRUNE_FACTOR 2.0
#define PRUNE_MIN_TILES 8
#define SAMPLES 4096
#define GIVE_UP_FACTOR 8.0

typedef void (*DirectFn) (const void *x, const void *wp, void *y, int64_t tx, int64_t ty, int64_t tz);

/* --- the spaces --------------------------------------------------------------------- */

/* Divisors of dim and powers of two up to it, ascending. */
static GArray *
axis_values (int64_t dim)
{
  GArray *a = g_array_new (FALSE, FALSE, sizeof (int64_t));
  for (int64_t t = 1; t <= dim; t++)
    if (dim % t == 0 || (t & (t - 1)) == 0)
      g_array_append_val (a, t);
  return a;
}

/* The NHWC kernels whose task holds every channel of its points (depthwise,
 * small groups: conv-direct.h) ignore a tile's z: it stays 1. */
static bool
whole_channels (const PlConvDesc *c)
{
  return pl_conv_direct_nhwc_depthwise (c) || pl_conv_direct_nhwc_grouped (c);
}

static void
full_space (const PlConvDesc *c, GArray *out)
{
  g_autoptr (GArray) xs = axis_values (c->out[1]);
  g_autoptr (GArray) ys = axis_values (c->out[0]);
  g_autoptr (GArray) zs = axis_values (whole_channels (c) ? 1 : c->c_out / c->group);
  for (guint i = 0; i < xs->len; i++)
    for (guint j = 0; j < ys->len; j++)
      for (guint k = 0; k < zs->len; k++)
        {
          PlTuneTile t = { { g_array_index (xs, int64_t, i), g_array_index (ys, int64_t, j),
                             g_array_index (zs, int64_t, k) } };
          g_array_append_val (out, t);
        }
}

static bool
within (double v, double target, double f)
{
  return v >= target / f && v <= target * f;
}

static bool
same_tile (const int64_t *a, const int64_t *b)
{
  return a[0] == b[0] && a[1] == b[1] && a[2] == b[2];
}

/* Tiles the output splits into (the units of parallel work; CHWN keeps the
 * batch inside a tile). */
static int64_t
tile_count (const PlConvDesc *c, const int64_t tile[3])
{
  int64_t kg = c->c_out / c->group;
  int64_t n = (c->out[1] + tile[0] - 1) / tile[0] * ((c->out[0] + tile[1] - 1) / tile[1]);
  if (!whole_channels (c))
    n *= (kg + tile[2] - 1) / tile[2] * c->group;
  return c->x_layout == PL_LAYOUT_CHWN ? n : n * c->batch;
}

/* The tiles near both pebble equations that still give every one of the
 * Np parallel units a tile (the rule's S/Np is per unit: a tile holding the
 * whole output leaves the other units idle), at two levels of the cache:
 * the rule's own, xyz ~ S of the L2 (factor F, widened until there are
 * enough tiles), and the L1, where the kernel's working set for a step of
 * input channels (accumulators, staged windows, weights) ~ the L1's
 * elements (factor 2): each step re-reads the whole tile of accumulators,
 * so a tile that also fits the L1 trades more I/O from the L2 for cheaper
 * steps. Both with xy ~ R z. CHWN's pointwise kernel takes tiles that
 * span the width, as its pebble tile does (a narrower tile's rows end in
 * part vectors). Pruned to such tiles, the pruned search's best ran at
 * 100-107% of the speed of the full search's (32 trials) in 8-12 trials on
 * four of ResNeXt's 1x1 convs at batch 8 and 16; before, at 93% on one. */
static void
pruned_space (const PlConvDesc *c, int units, const GArray *full, double S, double R, const int64_t pebble[3],
              GArray *out)
{
  const double s1 = (double) pl_cpu_l1_bytes () / (double) pl_dtype_size (c->dtype);
  for (double f = PRUNE_FACTOR;; f *= 2)
    {
      g_array_set_size (out, 0);
      for (guint i = 0; i < full->len; i++)
        {
          const PlTuneTile *t = &g_array_index (full, PlTuneTile, i);
          double xy = (double) (t->tile[0] * t->tile[1]), z = (double) t->tile[2];
          if (pl_conv_direct_chwn_pointwise (c) && t->tile[0] != c->out[1] && !same_tile (t->tile, pebble))
            continue;
          bool busy = tile_count (c, t->tile) >= units;
          bool l2 = within (xy * z, S, f), l1 = within ((double) pl_conv_direct_working_set (c, t->tile), s1, PRUNE_FACTOR);
          if ((busy && within (xy, R * z, f) && (l2 || l1)) || same_tile (t->tile, pebble))
            g_array_append_val (out, *t);
        }
      if (out->len >= MIN (PRUNE_MIN_TILES, full->len) || f > 1e9)
        break;
    }
}

/* The desc of conv in layout, checked for the direct kernel. */
static bool
tune_desc (const PlNode *conv, PlLayout layout, PlConvDesc *c, GError **error)
{
  if (conv->op != PL_OP_Conv)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "%s is a %s, not a Conv", conv->name, conv->op_type);
      return false;
    }
  g_autofree char *why = NULL;
  if (!pl_conv_desc_from_node (conv, c, &why))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "%s: %s", conv->name, why);
      return false;
    }
  c->x_layout = c->y_layout = layout;
  c->impl = PL_CONV_IMPL_DIRECT;
  memset (c->tile, 0, sizeof c->tile);
  if (!pl_conv_direct_supported (c, &why))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "%s: %s", conv->name, why);
      return false;
    }
  return true;
}

/* The spaces and the pebble terms of c on this machine. */
static void
spaces (const PlConvDesc *c, GArray *full, GArray *pruned, int64_t pebble[3], double *S, double *R)
{
  const int units = pl_cpu_parallel_units ();
  pl_conv_cpu_pebble_tile (c, units, pebble);
  pl_conv_cpu_pebble_terms (c, units, S, R);
  full_space (c, full);
  pruned_space (c, units, full, *S, *R, pebble, pruned);
}

bool
pl_tune_spaces (const PlNode *conv, PlLayout layout, GArray **full, GArray **pruned, int64_t pebble_tile[3],
                GError **error)
{
  g_return_val_if_fail (conv != NULL && full != NULL && pruned != NULL, false);
  PlConvDesc c;
  if (!tune_desc (conv, layout, &c, error))
    return false;
  double S, R;
  int64_t pebble[3];
  *full = g_array_new (FALSE, FALSE, sizeof (PlTuneTile));
  *pruned = g_array_new (FALSE, FALSE, sizeof (PlTuneTile));
  spaces (&c, *full, *pruned, pebble, &S, &R);
  if (pebble_tile)
    memcpy (pebble_tile, pebble, sizeof pebble);
  return true;
}

/* --- data and the reference ----------------------------------------------------------- */

typedef struct {
  const PlConvDesc *c;
  PlDType   dtype;
  void     *x, *w, *wp, *y;          /* x and y in the layout; w OIHW; wp packed */
  int64_t   xs[4], ys[4];            /* element strides of the logical dims */
  int64_t   n_samples;
  int64_t  *sample;                  /* logical output index (n, k, oy, ox) linearized */
  double   *ref, *scale;             /* reference value and sum of |terms| per sample */
} Bench;

static double
get (const void *buf, PlDType dt, int64_t i)
{
  return dt == PL_DTYPE_F32 ? ((const float *) buf)[i] : ((const double *) buf)[i];
}

static void
set (void *buf, PlDType dt, int64_t i, double v)
{
  if (dt == PL_DTYPE_F32)
    ((float *) buf)[i] = (float) v;
  else
    ((double *) buf)[i] = v;
}

static int64_t
out_elems (const PlConvDesc *c)
{
  return c->batch * c->c_out * c->out[0] * c->out[1];
}

/* The reference at logical output (n, k, oy, ox): sum and sum of |terms|. */
static void
reference_at (const Bench *b, int64_t idx, double *sum, double *abs_sum)
{
  const PlConvDesc *c = b->c;
  const int64_t OW = c->out[1], OH = c->out[0], K = c->c_out;
  const int64_t ox = idx % OW, oy = idx / OW % OH, k = idx / (OW * OH) % K, n = idx / (OW * OH * K);
  const int64_t CG = c->c_in / c->group, KG = c->c_out / c->group, g = k / KG;
  double s = 0, a = 0;
  for (int64_t ch = 0; ch < CG; ch++)
    for (int64_t kh = 0; kh < c->kernel[0]; kh++)
      {
        int64_t ih = oy * c->strides[0] - c->pads[0] + kh * c->dilations[0];
        if (ih < 0 || ih >= c->in[0])
          continue;
        for (int64_t kw = 0; kw < c->kernel[1]; kw++)
          {
            int64_t iw = ox * c->strides[1] - c->pads[1] + kw * c->dilations[1];
            if (iw < 0 || iw >= c->in[1])
              continue;
            double xv = get (b->x, b->dtype, n * b->xs[0] + (g * CG + ch) * b->xs[1] + ih * b->xs[2] + iw * b->xs[3]);
            double wv = get (b->w, b->dtype, ((k * CG + ch) * c->kernel[0] + kh) * c->kernel[1] + kw);
            s += xv * wv;
            a += fabs (xv * wv);
          }
      }
  *sum = s;
  *abs_sum = a;
}

static void
bench_init (Bench *b, const PlConvDesc *c, guint32 seed)
{
  memset (b, 0, sizeof *b);
  b->c = c;
  b->dtype = c->dtype;
  const size_t es = pl_dtype_size (c->dtype);
  const int64_t nx = c->batch * c->c_in * c->in[0] * c->in[1];
  const int64_t nw = c->c_out * (c->c_in / c->group) * c->kernel[0] * c->kernel[1];
  const int64_t ny = out_elems (c);
  b->x = g_malloc (nx * es);
  b->w = g_malloc (nw * es);
  b->wp = g_malloc (pl_conv_direct_packed_size (c) * es);
  b->y = g_malloc (ny * es);
  g_autoptr (GRand) rand = g_rand_new_with_seed (seed);
  for (int64_t i = 0; i < nx; i++)
    set (b->x, b->dtype, i, g_rand_double_range (rand, -1, 1));
  for (int64_t i = 0; i < nw; i++)
    set (b->w, b->dtype, i, g_rand_double_range (rand, -1, 1));
  pl_conv_direct_pack (c, b->w, b->wp);
  int64_t xd[4] = { c->batch, c->c_in, c->in[0], c->in[1] }, yd[4] = { c->batch, c->c_out, c->out[0], c->out[1] };
  pl_layout_strides (c->x_layout, 4, xd, b->xs);
  pl_layout_strides (c->y_layout, 4, yd, b->ys);

  b->n_samples = MIN (ny, SAMPLES);
  b->sample = g_new (int64_t, b->n_samples);
  b->ref = g_new (double, b->n_samples);
  b->scale = g_new (double, b->n_samples);
  for (int64_t i = 0; i < b->n_samples; i++)
    {
      b->sample[i] = ny <= SAMPLES ? i : (int64_t) (g_rand_double (rand) * (double) ny);
      b->sample[i] = MIN (b->sample[i], ny - 1);
      reference_at (b, b->sample[i], &b->ref[i], &b->scale[i]);
    }
}

static void
bench_clear (Bench *b)
{
  g_free (b->x);
  g_free (b->w);
  g_free (b->wp);
  g_free (b->y);
  g_free (b->sample);
  g_free (b->ref);
  g_free (b->scale);
}

/* Compares y with the reference at the samples; false with an error naming
 * the first output that differs. */
static bool
bench_check (const Bench *b, const char *conv, const int64_t tile[3], GError **error)
{
  const PlConvDesc *c = b->c;
  const double rtol = b->dtype == PL_DTYPE_F32 ? 1e-4 : 1e-10;
  for (int64_t i = 0; i < b->n_samples; i++)
    {
      const int64_t idx = b->sample[i], OW = c->out[1], OH = c->out[0];
      const int64_t ox = idx % OW, oy = idx / OW % OH, k = idx / (OW * OH) % c->c_out, n = idx / (OW * OH * c->c_out);
      double got = get (b->y, b->dtype, n * b->ys[0] + k * b->ys[1] + oy * b->ys[2] + ox * b->ys[3]);
      if (!(fabs (got - b->ref[i]) <= rtol * b->scale[i] + 1e-30))
        {
          g_set_error (error, PL_ERROR, PL_ERROR_EXEC,
                       "%s: the direct conv in %s with tile %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
                       " differs from the reference at y[%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
                       ",%" G_GINT64_FORMAT "]: %.9g, expected %.9g",
                       conv, pl_layout_name (c->x_layout), tile[0], tile[1], tile[2], n, k, oy, ox, got, b->ref[i]);
          return false;
        }
    }
  return true;
}

/* --- timing ---------------------------------------------------------------------------- */

static double
now_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec * 1e-6;
}

/* One trial: a warm-up run and `repeat` timed runs; the fastest. A warm-up
 * over GIVE_UP_FACTOR times best (> 0) counts as the trial's time. */
static double
time_tile (DirectFn fn, const Bench *b, const int64_t tile[3], int repeat, double best)
{
  double t0 = now_ms ();
  fn (b->x, b->wp, b->y, tile[0], tile[1], tile[2]);
  double first = now_ms () - t0;
  if (best > 0 && first > GIVE_UP_FACTOR * best)
    return first;
  double times[64];
  repeat = CLAMP (repeat, 1, (int) G_N_ELEMENTS (times));
  for (int r = 0; r < repeat; r++)
    {
      t0 = now_ms ();
      fn (b->x, b->wp, b->y, tile[0], tile[1], tile[2]);
      times[r] = now_ms () - t0;
    }
  qsort (times, repeat, sizeof (double), pl_compare_doubles);
  return times[0];
}

/* A search in progress: its order of tiles and its trials. */
typedef struct {
  GArray *order;     /* PlTuneTile */
  GArray *trials;    /* PlTuneTrial */
  double  best;
  int64_t best_tile[3];
  double  give_up;   /* before the first trial: the time that counts as best for giving up */
} Search;

static void
search_init (Search *s, const GArray *space, GRand *rand, const int64_t *first, int max_trials)
{
  s->order = g_array_sized_new (FALSE, FALSE, sizeof (PlTuneTile), space->len);
  g_array_append_vals (s->order, space->data, space->len);
  /* Fisher-Yates */
  for (guint i = s->order->len; i > 1; i--)
    {
      guint j = (guint) g_rand_int_range (rand, 0, (gint32) i);
      PlTuneTile t = g_array_index (s->order, PlTuneTile, i - 1);
      g_array_index (s->order, PlTuneTile, i - 1) = g_array_index (s->order, PlTuneTile, j);
      g_array_index (s->order, PlTuneTile, j) = t;
    }
  for (guint i = 0; first && i < s->order->len; i++)
    if (same_tile (g_array_index (s->order, PlTuneTile, i).tile, first))
      {
        PlTuneTile t = g_array_index (s->order, PlTuneTile, i);
        g_array_remove_index (s->order, i);
        g_array_prepend_val (s->order, t);
        break;
      }
  if (max_trials > 0 && s->order->len > (guint) max_trials)
    g_array_set_size (s->order, max_trials);
  s->trials = g_array_new (FALSE, FALSE, sizeof (PlTuneTrial));
  s->best = s->give_up = 0;
}

static bool
search_step (Search *s, guint i, DirectFn fn, const Bench *b, int repeat, const char *conv, GError **error)
{
  if (i >= s->order->len)
    return true;
  PlTuneTrial t = { { 0 } };
  memcpy (t.tile, g_array_index (s->order, PlTuneTile, i).tile, sizeof t.tile);
  t.ms = time_tile (fn, b, t.tile, repeat, s->best > 0 ? s->best : s->give_up);
  if (!bench_check (b, conv, t.tile, error))
    return false;
  if (s->best == 0 || t.ms < s->best)
    {
      s->best = t.ms;
      memcpy (s->best_tile, t.tile, sizeof t.tile);
    }
  t.best_ms = s->best;
  g_array_append_val (s->trials, t);
  return true;
}

/* Times the two searches' best tiles side by side (see tune.h): per round
 * both tiles, in alternating order, each its fastest of `repeat` runs; the
 * medians over the rounds. One tile (the searches agree) is timed alone. */
static void
head_to_head (PlTuneResult *r, DirectFn fn, const Bench *b, int repeat, int rounds, const int64_t full_tile[3],
              const int64_t pruned_tile[3])
{
  const bool same = same_tile (full_tile, pruned_tile);
  rounds = CLAMP (rounds, 1, 64);
  double tf[64], tp[64];
  for (int k = 0; k < rounds; k++)
    {
      if (same)
        tf[k] = tp[k] = time_tile (fn, b, full_tile, repeat, 0);
      else if (k % 2 == 0)
        {
          tf[k] = time_tile (fn, b, full_tile, repeat, 0);
          tp[k] = time_tile (fn, b, pruned_tile, repeat, 0);
        }
      else
        {
          tp[k] = time_tile (fn, b, pruned_tile, repeat, 0);
          tf[k] = time_tile (fn, b, full_tile, repeat, 0);
        }
    }
  r->head_full_ms = pl_median_sort (tf, rounds);
  r->head_pruned_ms = pl_median_sort (tp, rounds);
  r->rounds = rounds;
}

/* --- the tuner ------------------------------------------------------------------------- */

static char *
shape_text (const PlConvDesc *c)
{
  GString *s = g_string_new (NULL);
  g_string_append_printf (s, "%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
                          " -> %" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT " k%" G_GINT64_FORMAT
                          "x%" G_GINT64_FORMAT, c->batch, c->c_in, c->in[0], c->in[1], c->c_out, c->out[0],
                          c->out[1], c->kernel[0], c->kernel[1]);
  if (c->strides[0] == c->strides[1])
    g_string_append_printf (s, " s%" G_GINT64_FORMAT, c->strides[0]);
  else
    g_string_append_printf (s, " s%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT, c->strides[0], c->strides[1]);
  if (c->dilations[0] != 1 || c->dilations[1] != 1)
    g_string_append_printf (s, " d%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT, c->dilations[0], c->dilations[1]);
  if (c->group != 1)
    g_string_append_printf (s, " g%" G_GINT64_FORMAT, c->group);
  if (c->dtype != PL_DTYPE_F32)
    g_string_append_printf (s, " %s", pl_dtype_name (c->dtype));
  return g_string_free (s, FALSE);
}

PlTuneResult *
pl_tune_conv (const PlNode *conv, PlLayout layout, const PlTuneOptions *opts, GError **error)
{
  g_return_val_if_fail (conv != NULL && opts != NULL, NULL);
  PlConvDesc c;
  if (!tune_desc (conv, layout, &c, error))
    return NULL;

  GString *src = g_string_new (NULL);
  pl_conv_direct_emit_c (src, &c, "pl_tune_direct");
  g_autofree char *source = g_string_free (src, FALSE);
  PlCpuModule *m = pl_cpu_module_compile (source, opts->cache_dir, NULL, error);
  if (!m)
    return NULL;
  DirectFn fn = (DirectFn) pl_cpu_module_symbol (m, "pl_tune_direct");
  if (!fn)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "%s: the compiled kernel lacks pl_tune_direct", conv->name);
      pl_cpu_module_free (m);
      return NULL;
    }

  g_autoptr (PlTuneResult) r = g_new0 (PlTuneResult, 1);
  r->conv = g_strdup (conv->name);
  r->layout = layout;
  r->shape = shape_text (&c);
  r->gflop = 2e-9 * (double) out_elems (&c) * (double) (c.c_in / c.group) * (double) (c.kernel[0] * c.kernel[1]);
  g_autoptr (GArray) full = g_array_new (FALSE, FALSE, sizeof (PlTuneTile));
  g_autoptr (GArray) pruned = g_array_new (FALSE, FALSE, sizeof (PlTuneTile));
  spaces (&c, full, pruned, r->pebble_tile, &r->fast_mem_s, &r->reuse_r);
  r->full_space = (int) full->len;
  r->pruned_space = (int) pruned->len;

  Bench b;
  bench_init (&b, &c, opts->seed);
  r->verified = b.n_samples == out_elems (&c) ? g_strdup_printf ("all %" G_GINT64_FORMAT " outputs", b.n_samples)
                                              : g_strdup_printf ("%" G_GINT64_FORMAT " sampled outputs", b.n_samples);
  const double t0 = now_ms ();
  fn (b.x, b.wp, b.y, r->pebble_tile[0], r->pebble_tile[1], r->pebble_tile[2]);
  const double first_ms = now_ms () - t0;
  bool ok = bench_check (&b, conv->name, r->pebble_tile, error);

  const int repeat = opts->repeat > 0 ? opts->repeat : 3;
  g_autoptr (GRand) rand = g_rand_new_with_seed (opts->seed);
  Search sf, sp;
  search_init (&sf, full, rand, NULL, opts->max_trials);
  if (opts->pruned_only)
    g_array_set_size (sf.order, 0);
  search_init (&sp, pruned, rand, r->pebble_tile, opts->max_trials);
  sf.give_up = sp.give_up = first_ms;
  for (guint i = 0; ok && (i < sf.order->len || i < sp.order->len); i++)
    ok = search_step (&sf, i, fn, &b, repeat, conv->name, error)
         && search_step (&sp, i, fn, &b, repeat, conv->name, error);

  if (ok && sf.trials->len > 0 && sp.trials->len > 0)
    head_to_head (r, fn, &b, repeat, opts->rounds > 0 ? opts->rounds : 7, sf.best_tile, sp.best_tile);

  r->full = sf.trials;
  r->pruned = sp.trials;
  r->best_full_ms = sf.best;
  r->best_pruned_ms = sp.best;
  memcpy (r->best_full_tile, sf.best_tile, sizeof sf.best_tile);
  memcpy (r->best_pruned_tile, sp.best_tile, sizeof sp.best_tile);
  g_array_unref (sf.order);
  g_array_unref (sp.order);
  bench_clear (&b);
  pl_cpu_module_free (m);
  return ok ? g_steal_pointer (&r) : NULL;
}

void
pl_tune_result_free (PlTuneResult *r)
{
  if (!r)
    return;
  g_free (r->conv);
  g_free (r->shape);
  g_free (r->verified);
  g_clear_pointer (&r->full, g_array_unref);
  g_clear_pointer (&r->pruned, g_array_unref);
  g_free (r);
}

/* --- JSON ------------------------------------------------------------------------------ */

static void
json_string (GString *s, const char *v)
{
  g_string_append_c (s, '"');
  for (const char *p = v; *p; p++)
    {
      unsigned char ch = (unsigned char) *p;
      if (ch == '"' || ch == '\\')
        g_string_append_printf (s, "\\%c", ch);
      else if (ch < 0x20)
        g_string_append_printf (s, "\\u%04x", ch);
      else
        g_string_append_c (s, (char) ch);
    }
  g_string_append_c (s, '"');
}

static void
json_tile (GString *s, const int64_t t[3])
{
  g_string_append_printf (s, "[%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT "]", t[0], t[1], t[2]);
}

static void
json_trials (GString *s, const char *key, const GArray *trials)
{
  g_string_append_printf (s, ",\"%s\":[", key);
  for (guint i = 0; trials && i < trials->len; i++)
    {
      const PlTuneTrial *t = &g_array_index (trials, PlTuneTrial, i);
      g_string_append (s, i ? ",{\"tile\":" : "{\"tile\":");
      json_tile (s, t->tile);
      g_string_append_printf (s, ",\"ms\":%.6g,\"best_ms\":%.6g}", t->ms, t->best_ms);
    }
  g_string_append_c (s, ']');
}

char *
pl_tune_result_json (const PlTuneResult *r)
{
  g_return_val_if_fail (r != NULL, NULL);
  GString *s = g_string_new ("{\"conv\":");
  json_string (s, r->conv);
  g_string_append_printf (s, ",\"layout\":\"%s\",\"shape\":", pl_layout_name (r->layout));
  json_string (s, r->shape);
  g_string_append_printf (s, ",\"gflop\":%.6g,\"S\":%.6g,\"R\":%.6g,\"pebble_tile\":", r->gflop, r->fast_mem_s,
                          r->reuse_r);
  json_tile (s, r->pebble_tile);
  g_string_append_printf (s, ",\"full_space\":%d,\"pruned_space\":%d,\"best_full\":{\"tile\":", r->full_space,
                          r->pruned_space);
  json_tile (s, r->best_full_tile);
  g_string_append_printf (s, ",\"ms\":%.6g},\"best_pruned\":{\"tile\":", r->best_full_ms);
  json_tile (s, r->best_pruned_tile);
  g_string_append_printf (s, ",\"ms\":%.6g},\"head_to_head\":{\"rounds\":%d,\"full_ms\":%.6g,\"pruned_ms\":%.6g},"
                          "\"verified\":", r->best_pruned_ms, r->rounds, r->head_full_ms, r->head_pruned_ms);
  json_string (s, r->verified ? r->verified : "");
  json_trials (s, "full", r->full);
  json_trials (s, "pruned", r->pruned);
  g_string_append_c (s, '}');
  return g_string_free (s, FALSE);
}

/* plan-sample.c — the ops whose element is a weighted sum of neighbours
 * picked by a coordinate: linear and cubic Resize (the coordinate a
 * rational function of the output's, pl_resize_sample_form), GridSample
 * (the coordinate a loaded value: a gather) and RoiAlign (bilinear samples
 * in a loaded box). As in plan-select.c, every tap is computed and its read
 * clamped into the input, so reads stay in bounds; a tap outside weighs 0
 * where the op says so (exclude_outside, GridSample's zeros padding,
 * RoiAlign's samples beyond the edge). GridSample and RoiAlign compute in
 * f64 as their references do, and recompute their coordinates for every
 * channel; looping the channels innermost, so that the compiler hoists the
 * coordinates out, timed no faster (128 rois of 2x256x50x50: 18-25 ms
 * either way): the gathered reads, not the arithmetic, take the time.
 */
#define G_LOG_DOMAIN "passlab"
#include "kernel-plan-private.h"

#include "ops-util.h"

#include <math.h>
#include <string.h>

/* The cubic kernel of coefficient a at distance t (0 <= t <= 2), as the
 * reference's pl_cubic_weights: (a+2)|t|^3 - (a+3)|t|^2 + 1 within 1,
 * a|t|^3 - 5a|t|^2 + 8a|t| - 4a beyond. t is a value of type dtype. */
int
pl_lower_cubic_weight (PlLower *L, PlDType dtype, double a, int t, bool near)
{
  int k0 = pl_lower_const (L, dtype, near ? a + 2 : a), k1 = pl_lower_const (L, dtype, near ? a + 3 : 5 * a);
  int w = pl_lower_binary (L, PL_SOP_SUB, pl_lower_binary (L, PL_SOP_MUL, k0, t), k1);   /* k0 t - k1 */
  if (near)
    return pl_lower_binary (L, PL_SOP_ADD, pl_lower_binary (L, PL_SOP_MUL, pl_lower_binary (L, PL_SOP_MUL, w, t), t),
                            pl_lower_const (L, dtype, 1));
  w = pl_lower_binary (L, PL_SOP_ADD, pl_lower_binary (L, PL_SOP_MUL, w, t), pl_lower_const (L, dtype, 8 * a));
  return pl_lower_binary (L, PL_SOP_SUB, pl_lower_binary (L, PL_SOP_MUL, w, t), pl_lower_const (L, dtype, 4 * a));
}

/* Resize, linear and cubic (pl_resize_sample_form: x = (a o + b) / c along
 * each axis): with u = a o + b - 1 + K c (K the fewest steps of c that make
 * it >= 0), q = u / c - K and r = (u mod c + 1) / c: linear's taps q and
 * q + 1 weighted 1 - r and r, cubic's q - 1 .. q + 2 weighted by the cubic
 * kernel (pl_lower_cubic_weight) at 1 + r, r, 1 - r, 2 - r, clamped into the input
 * (with exclude_outside, a tap outside weighs 0 and the others are divided
 * by their sum); the sum over the corners of the resized axes of the
 * products of their weights (2^n or 4^n loads). An axis with c = 1 has
 * r = 1: the tap q + 1 alone, of weight 1 in both modes. */
#define MAX_TAPS 4

int
pl_lower_resize_sample (PlLower *L, const PlNode *node, const PlValue *v, const PlIdx *const *idx)
{
  PlResizeSampleAxis f[PL_MAX_RANK];
  PlValue *in = node->inputs[0];
  int64_t id[PL_MAX_RANK];
  int rank = v->shape.rank;
  if ((v->dtype != PL_DTYPE_F32 && v->dtype != PL_DTYPE_F64) || !pl_resize_sample_form (node, f) || !pl_shape_get_dims (&in->shape, id))
    return pl_lower_fail (L, "%s: not a linear or cubic Resize of constant scales and a float type", node->name);
  const bool cubic = strcmp (pl_node_attr_string (node, "mode", "nearest"), "cubic") == 0;
  const bool exclude = cubic && pl_node_attr_int (node, "exclude_outside", 0);
  const double ca = pl_node_attr_float (node, "cubic_coeff_a", -0.75f);
  const PlDType dt = v->dtype;
  PlIdxArena *A = L->arena;
  const PlIdx *tap[PL_MAX_RANK][MAX_TAPS];
  int weight[PL_MAX_RANK][MAX_TAPS], n_taps[PL_MAX_RANK];
  for (int k = 0; k < rank; k++)
    {
      n_taps[k] = 1;
      weight[k][0] = -1;
      if (f[k].a == f[k].c && f[k].b == 0)   /* not resized */
        {
          tap[k][0] = idx[k];
          continue;
        }
      int64_t c = f[k].c, lift = f[k].b >= 1 ? 0 : (c - f[k].b) / c;   /* ceil ((1 - b) / c) */
      const PlIdx *u = pl_idx_add (A, pl_idx_mul (A, idx[k], f[k].a), pl_idx_const (A, f[k].b - 1 + lift * c));
      const PlIdx *q = pl_idx_div (A, u, c);
      if (c == 1)
        {
          tap[k][0] = pl_idx_clamp (A, q, lift - 1, id[k]);
          continue;
        }
      int r = pl_lower_index_value (L, pl_idx_add (A, pl_idx_mod (A, u, c), pl_idx_const (A, 1)));
      r = pl_lower_binary (L, PL_SOP_MUL, pl_lower_cast (L, r, dt), pl_lower_const (L, dt, 1.0 / (double) c));
      int one = pl_lower_const (L, dt, 1), s = pl_lower_binary (L, PL_SOP_SUB, one, r);   /* 1 - r */
      if (!cubic)
        {
          n_taps[k] = 2;
          tap[k][0] = pl_idx_clamp (A, q, lift, id[k]);
          tap[k][1] = pl_idx_clamp (A, q, lift - 1, id[k]);
          weight[k][0] = s;
          weight[k][1] = r;
          continue;
        }
      n_taps[k] = 4;
      for (int j = 0; j < 4; j++)
        tap[k][j] = pl_idx_clamp (A, q, lift + 1 - j, id[k]);
      weight[k][0] = pl_lower_cubic_weight (L, dt, ca, pl_lower_binary (L, PL_SOP_ADD, one, r), false);
      weight[k][1] = pl_lower_cubic_weight (L, dt, ca, r, true);
      weight[k][2] = pl_lower_cubic_weight (L, dt, ca, s, true);
      weight[k][3] = pl_lower_cubic_weight (L, dt, ca, pl_lower_binary (L, PL_SOP_ADD, one, s), false);
      if (exclude)
        {
          /* tap j is q - lift - 1 + j before the clamp: inside when 0 <= it < n */
          int qv = pl_lower_index_value (L, q), sum = -1;
          for (int j = 0; j < 4; j++)
            {
              int64_t shift = lift + 1 - j;
              int lo = pl_lower_binary (L, PL_SOP_GE, qv, pl_lower_const (L, PL_DTYPE_I64, (double) shift));
              int hi = pl_lower_binary (L, PL_SOP_LT, qv, pl_lower_const (L, PL_DTYPE_I64, (double) (id[k] + shift)));
              weight[k][j] = pl_lower_select (L, pl_lower_binary (L, PL_SOP_AND, lo, hi), weight[k][j],
                                              pl_lower_const (L, dt, 0));
              sum = sum < 0 ? weight[k][j] : pl_lower_binary (L, PL_SOP_ADD, sum, weight[k][j]);
            }
          /* as the reference: divided only by a sum that is not 0 */
          int nonzero = pl_lower_binary (L, PL_SOP_GT, pl_lower_unary (L, PL_SOP_ABS, sum), pl_lower_const (L, dt, 0));
          for (int j = 0; j < 4; j++)
            weight[k][j] = pl_lower_select (L, nonzero, pl_lower_binary (L, PL_SOP_DIV, weight[k][j], sum), weight[k][j]);
        }
    }
  /* every corner: a tap per axis */
  int sum = -1, pick[PL_MAX_RANK] = { 0 };
  for (;;)
    {
      const PlIdx *ii[PL_MAX_RANK];
      int w = -1;
      for (int k = 0; k < rank; k++)
        {
          ii[k] = tap[k][pick[k]];
          if (n_taps[k] > 1)
            w = w < 0 ? weight[k][pick[k]] : pl_lower_binary (L, PL_SOP_MUL, w, weight[k][pick[k]]);
        }
      int x = pl_lower_value (L, in, ii);
      if (x < 0)
        return x;
      int term = w < 0 ? x : pl_lower_binary (L, PL_SOP_MUL, w, x);
      sum = sum < 0 ? term : pl_lower_binary (L, PL_SOP_ADD, sum, term);
      int k = rank - 1;
      for (; k >= 0; k--)
        {
          if (++pick[k] < n_taps[k])
            break;
          pick[k] = 0;
        }
      if (k < 0)
        break;
    }
  return sum;
}

/* --- GridSample ------------------------------------------------------------------------ */

typedef enum { PAD_ZEROS, PAD_BORDER, PAD_REFLECTION } GridPadding;

/* x (f64) reflected off lo and hi until it lies between them, as the
 * reference's reflect: beyond an edge by dx, n = floor (dx / range) whole
 * crossings and r = dx - n range; an even n lands r inside the edge it
 * crossed, an odd one r inside the other. */
static int
reflect (PlLower *L, int x, double lo, double hi)
{
  const PlDType f = PL_DTYPE_F64;
  double range = hi - lo;
  if (!(range > 0))
    return pl_lower_const (L, f, lo);
  int flo = pl_lower_const (L, f, lo), fhi = pl_lower_const (L, f, hi);
  int below = pl_lower_binary (L, PL_SOP_LT, x, flo);
  int inside = pl_lower_binary (L, PL_SOP_AND, pl_lower_unary (L, PL_SOP_NOT, below),
                                pl_lower_binary (L, PL_SOP_LE, x, fhi));
  int dx = pl_lower_select (L, below, pl_lower_binary (L, PL_SOP_SUB, flo, x), pl_lower_binary (L, PL_SOP_SUB, x, fhi));
  int n = pl_lower_unary (L, PL_SOP_FLOOR, pl_lower_binary (L, PL_SOP_MUL, dx, pl_lower_const (L, f, 1 / range)));
  int r = pl_lower_binary (L, PL_SOP_SUB, dx, pl_lower_binary (L, PL_SOP_MUL, n, pl_lower_const (L, f, range)));
  int half = pl_lower_unary (L, PL_SOP_FLOOR, pl_lower_binary (L, PL_SOP_MUL, n, pl_lower_const (L, f, 0.5)));
  int even = pl_lower_binary (L, PL_SOP_EQ, n, pl_lower_binary (L, PL_SOP_MUL, half, pl_lower_const (L, f, 2)));
  /* (x < lo) == even: from lo; else from hi */
  int from_lo = pl_lower_unary (L, PL_SOP_NOT, pl_lower_binary (L, PL_SOP_XOR, below, even));
  int out = pl_lower_select (L, from_lo, pl_lower_binary (L, PL_SOP_ADD, flo, r), pl_lower_binary (L, PL_SOP_SUB, fhi, r));
  return pl_lower_select (L, inside, x, out);
}

/* The taps of one grid coordinate g (f64) along an axis of d pixels, as the
 * reference's grid_taps: the pixel coordinate v (align_corners: the
 * corners' centres span [-1, 1], else their outer edges), rounded to even
 * for nearest; outside the image, border clamps v into it, reflection
 * reflects it (and each tap's index, as a coordinate) and zeros keeps it
 * near enough for the casts; the taps floor (v) (- 1 for cubic) on,
 * weighted as Resize's; each tap's index clamped into the axis for the
 * read, and with zeros padding a flag whether it lies inside. A NaN
 * coordinate computes with 0 here: the caller makes the element NaN; an
 * infinite one, which makes the reference's reflection undefined, is
 * taken as 1e9 first. */
typedef struct {
  int n;
  int index[4];   /* i64, clamped into [0, d) */
  int weight[4];  /* f64; -1: the single tap of nearest, weight 1 */
  int inside[4];  /* bool; -1: always (border padding) */
} Taps;

static void
grid_axis_taps (PlLower *L, int g, int64_t d, bool align, const char *mode, GridPadding pad, Taps *t)
{
  const PlDType f = PL_DTYPE_F64, i = PL_DTYPE_I64;
  double lo = align ? 0 : -0.5, hi = align ? (double) d - 1 : (double) d - 0.5;
  int one = pl_lower_const (L, f, 1);
  int v = align ? pl_lower_binary (L, PL_SOP_MUL, pl_lower_binary (L, PL_SOP_ADD, g, one),
                                   pl_lower_const (L, f, ((double) d - 1) / 2))
                : pl_lower_binary (L, PL_SOP_SUB,
                                   pl_lower_binary (L, PL_SOP_MUL, pl_lower_binary (L, PL_SOP_ADD, g, one),
                                                    pl_lower_const (L, f, (double) d / 2)),
                                   pl_lower_const (L, f, 0.5));
  v = pl_lower_select (L, pl_lower_unary (L, PL_SOP_ISNAN, v), pl_lower_const (L, f, 0), v);
  bool nearest = strcmp (mode, "nearest") == 0, cubic = strcmp (mode, "bicubic") == 0;
  if (nearest)
    v = pl_lower_unary (L, PL_SOP_ROUND, v);   /* rint: ties to even */
  int outside = pl_lower_binary (L, PL_SOP_OR, pl_lower_binary (L, PL_SOP_LT, v, pl_lower_const (L, f, lo)),
                                 pl_lower_binary (L, PL_SOP_GT, v, pl_lower_const (L, f, hi)));
  const bool zeros = pad == PAD_ZEROS;
  if (pad == PAD_REFLECTION)
    {
      int big = pl_lower_const (L, f, 1e9);
      v = reflect (L, pl_lower_binary (L, PL_SOP_MIN, pl_lower_binary (L, PL_SOP_MAX, v, pl_lower_unary (L, PL_SOP_NEG, big)), big),
                   lo, hi);
    }
  else
    {
      double clo = zeros ? -8 : 0, chi = zeros ? (double) d + 8 : (double) d - 1;
      int clamped = pl_lower_binary (L, PL_SOP_MIN, pl_lower_binary (L, PL_SOP_MAX, v, pl_lower_const (L, f, clo)),
                                     pl_lower_const (L, f, chi));
      v = pl_lower_select (L, outside, clamped, v);
    }
  int fl = pl_lower_unary (L, PL_SOP_FLOOR, v), r = pl_lower_binary (L, PL_SOP_SUB, v, fl);
  int base = pl_lower_cast (L, nearest ? v : fl, i);
  t->n = nearest ? 1 : cubic ? 4 : 2;
  if (cubic)
    base = pl_lower_binary (L, PL_SOP_SUB, base, pl_lower_const (L, i, 1));
  int s = pl_lower_binary (L, PL_SOP_SUB, one, r);
  if (nearest)
    t->weight[0] = -1;
  else if (!cubic)
    {
      t->weight[0] = s;
      t->weight[1] = r;
    }
  else
    {
      const double a = -0.75;   /* the reference's, as PyTorch's */
      t->weight[0] = pl_lower_cubic_weight (L, f, a, pl_lower_binary (L, PL_SOP_ADD, one, r), false);
      t->weight[1] = pl_lower_cubic_weight (L, f, a, r, true);
      t->weight[2] = pl_lower_cubic_weight (L, f, a, s, true);
      t->weight[3] = pl_lower_cubic_weight (L, f, a, pl_lower_binary (L, PL_SOP_ADD, one, s), false);
    }
  int zero = pl_lower_const (L, i, 0), last = pl_lower_const (L, i, (double) (d - 1));
  for (int j = 0; j < t->n; j++)
    {
      int k = j ? pl_lower_binary (L, PL_SOP_ADD, base, pl_lower_const (L, i, j)) : base;
      if (pad == PAD_REFLECTION)   /* the index reflected as a coordinate, then truncated */
        k = pl_lower_cast (L, reflect (L, pl_lower_cast (L, k, f), lo, hi), i);
      t->index[j] = pl_lower_binary (L, PL_SOP_MIN, pl_lower_binary (L, PL_SOP_MAX, k, zero), last);
      t->inside[j] = zeros ? pl_lower_binary (L, PL_SOP_AND, pl_lower_binary (L, PL_SOP_GE, k, zero),
                                              pl_lower_binary (L, PL_SOP_LE, k, last))
                           : -1;
    }
}

/* GridSample, X [N, C, H, W] in memory in the default layout, grid
 * [N, H_out, W_out, 2]: output (n, c, h, w) is the sum over the taps of
 * grid (n, h, w)'s coordinates (grid_axis_taps: x along W, y along H) of
 * their weights' product times X (n, c, y, x) — zero for a tap outside
 * with zeros padding — computed in f64 as the reference does, so that a
 * coordinate on a rounding edge picks the same pixels; NaN where a
 * coordinate is NaN. */
int
pl_lower_grid_sample (PlLower *L, const PlNode *node, const PlValue *v, const PlIdx *const *idx)
{
  PlValue *x = node->inputs[0], *grid = node->inputs[1];
  int64_t xd[4];
  if (v->shape.rank != 4 || !pl_shape_get_dims (&x->shape, xd) || !pl_shape_is_static (&grid->shape))
    return pl_lower_fail (L, "%s without static shapes", node->name);
  if (!pl_lower_gathers_from (L, node, x, "X"))
    return -1;
  const char *mode = pl_node_attr_string (node, "mode", "bilinear");
  const char *padding = pl_node_attr_string (node, "padding_mode", "zeros");
  bool align = pl_node_attr_int (node, "align_corners", 0) != 0;
  GridPadding pad = strcmp (padding, "zeros") == 0 ? PAD_ZEROS : strcmp (padding, "border") == 0 ? PAD_BORDER
                                                                                                 : PAD_REFLECTION;
  if ((pad == PAD_REFLECTION && strcmp (padding, "reflection") != 0)
      || (strcmp (mode, "bilinear") != 0 && strcmp (mode, "nearest") != 0 && strcmp (mode, "bicubic") != 0))
    return pl_lower_fail (L, "%s: mode '%s', padding_mode '%s'", node->name, mode, padding);
  const PlDType f = PL_DTYPE_F64, i = PL_DTYPE_I64;
  PlIdxArena *A = L->arena;
  int g[2];
  for (int k = 0; k < 2; k++)
    {
      const PlIdx *gi[4] = { idx[0], idx[2], idx[3], pl_idx_const (A, k) };
      g[k] = pl_lower_cast (L, pl_lower_value (L, grid, gi), f);
      if (g[k] < 0)
        return -1;
    }
  Taps tx, ty;
  grid_axis_taps (L, g[0], xd[3], align, mode, pad, &tx);
  grid_axis_taps (L, g[1], xd[2], align, mode, pad, &ty);
  /* X (n, c, 0, 0) plus y W + x, a gathered read */
  const PlIdx *plane[4] = { idx[0], idx[1], pl_idx_const (A, 0), pl_idx_const (A, 0) };
  const PlIdx *base = pl_lower_offset (L, x, plane);
  int slot = pl_lower_slot (L, x), width = pl_lower_const (L, i, (double) xd[3]), sum = -1;
  for (int a = 0; a < ty.n; a++)
    for (int b = 0; b < tx.n; b++)
      {
        int at = pl_lower_binary (L, PL_SOP_ADD, pl_lower_binary (L, PL_SOP_MUL, ty.index[a], width), tx.index[b]);
        int val = pl_lower_cast (L, pl_lower_gather_load (L, slot, x->dtype, base, at, 1), f);
        int in = ty.inside[a] < 0 ? tx.inside[b] : tx.inside[b] < 0 ? ty.inside[a]
                                                    : pl_lower_binary (L, PL_SOP_AND, ty.inside[a], tx.inside[b]);
        if (in >= 0)
          val = pl_lower_select (L, in, val, pl_lower_const (L, f, 0));
        int w = ty.weight[a] < 0 ? tx.weight[b] : tx.weight[b] < 0 ? ty.weight[a]
                                                  : pl_lower_binary (L, PL_SOP_MUL, ty.weight[a], tx.weight[b]);
        int term = w < 0 ? val : pl_lower_binary (L, PL_SOP_MUL, w, val);
        sum = sum < 0 ? term : pl_lower_binary (L, PL_SOP_ADD, sum, term);
      }
  int nan = pl_lower_binary (L, PL_SOP_OR, pl_lower_unary (L, PL_SOP_ISNAN, g[0]), pl_lower_unary (L, PL_SOP_ISNAN, g[1]));
  sum = pl_lower_select (L, nan, pl_lower_const (L, f, NAN), sum);
  return pl_lower_cast (L, sum, v->dtype);
}

/* --- RoiAlign -------------------------------------------------------------------------- */

/* One bilinear sample at (y, x) (f64) of an h x w plane, as the
 * reference's roi_sample: more than a pixel outside, four zero weights at
 * offset 0; else the point clamped to the plane, its corners' offsets
 * (y0 w + x0, ...) and weights. */
static void
roi_sample (PlLower *L, int y, int x, int64_t h, int64_t w, int pos[4], int weight[4])
{
  const PlDType f = PL_DTYPE_F64, i = PL_DTYPE_I64;
  int zero = pl_lower_const (L, f, 0), one = pl_lower_const (L, f, 1), minus = pl_lower_const (L, f, -1);
  int out = pl_lower_binary (L, PL_SOP_OR,
                             pl_lower_binary (L, PL_SOP_OR, pl_lower_binary (L, PL_SOP_LT, y, minus),
                                              pl_lower_binary (L, PL_SOP_GT, y, pl_lower_const (L, f, (double) h))),
                             pl_lower_binary (L, PL_SOP_OR, pl_lower_binary (L, PL_SOP_LT, x, minus),
                                              pl_lower_binary (L, PL_SOP_GT, x, pl_lower_const (L, f, (double) w))));
  int c[2], l[2], lo[2], hi[2];
  const int p[2] = { y, x };
  const int64_t n[2] = { h, w };
  for (int a = 0; a < 2; a++)
    {
      /* v = max (v, 0) as the reference's MAX (a NaN gives 0, and the cast
       * stays defined); v0 = (int) v; at the last pixel or beyond,
       * v = v0 = v1 = n - 1 */
      int v = pl_lower_select (L, pl_lower_binary (L, PL_SOP_GT, p[a], zero), p[a], zero);
      v = pl_lower_select (L, out, zero, v);   /* keeps the cast defined; its weights are zero */
      int v0 = pl_lower_cast (L, v, i), last = pl_lower_const (L, i, (double) (n[a] - 1));
      int edge = pl_lower_binary (L, PL_SOP_GE, v0, last);
      lo[a] = pl_lower_select (L, edge, last, v0);
      hi[a] = pl_lower_select (L, edge, last, pl_lower_binary (L, PL_SOP_ADD, v0, pl_lower_const (L, i, 1)));
      v = pl_lower_select (L, edge, pl_lower_const (L, f, (double) (n[a] - 1)), v);
      l[a] = pl_lower_binary (L, PL_SOP_SUB, v, pl_lower_cast (L, lo[a], f));
      c[a] = pl_lower_binary (L, PL_SOP_SUB, one, l[a]);
    }
  int wc = pl_lower_const (L, i, (double) w);
  for (int k = 0; k < 4; k++)
    {
      int ry = k < 2 ? lo[0] : hi[0], rx = k % 2 ? hi[1] : lo[1];
      int wy = k < 2 ? c[0] : l[0], wx = k % 2 ? l[1] : c[1];
      int at = pl_lower_binary (L, PL_SOP_ADD, pl_lower_binary (L, PL_SOP_MUL, ry, wc), rx);
      pos[k] = pl_lower_select (L, out, pl_lower_const (L, i, 0), at);
      weight[k] = pl_lower_select (L, out, zero, pl_lower_binary (L, PL_SOP_MUL, wy, wx));
    }
}

/* RoiAlign with a fixed sampling_ratio s (0, adaptive, makes the sample
 * count a loaded value: the reference): output (r, c, ph, pw) is the mean
 * (or the max of the largest weighted corners) of s x s bilinear samples
 * (roi_sample) of X (batch_indices[r], c) in bin (ph, pw) of roi r, in f64
 * as the reference. A batch index outside X's batch fails the run, as the
 * reference's does, and reads image 0. */
int
pl_lower_roi_align (PlLower *L, const PlNode *node, const PlValue *v, const PlIdx *const *idx)
{
  PlValue *x = node->inputs[0], *rois = node->inputs[1], *bi = node->inputs[2];
  int64_t xd[4];
  PlRoiAlignAttrs ra;
  g_autoptr (GError) why = NULL;
  if (v->shape.rank != 4 || !pl_shape_get_dims (&x->shape, xd) || !pl_shape_is_static (&rois->shape)
      || !pl_shape_is_static (&bi->shape))
    return pl_lower_fail (L, "%s without static shapes", node->name);
  if (!pl_lower_gathers_from (L, node, x, "X"))
    return -1;
  if (!pl_roi_align_attrs (node, &ra, &why))
    return pl_lower_fail (L, "%s: %s", node->name, why->message);
  if (ra.sampling_ratio <= 0 || ra.sampling_ratio > 8)
    return pl_lower_fail (L, "%s: sampling_ratio %" G_GINT64_FORMAT " (adaptive or above 8: the reference)", node->name,
                          ra.sampling_ratio);
  const PlDType f = PL_DTYPE_F64, i = PL_DTYPE_I64;
  PlIdxArena *A = L->arena;
  int box[4];
  for (int k = 0; k < 4; k++)
    {
      const PlIdx *ri[2] = { idx[0], pl_idx_const (A, k) };
      box[k] = pl_lower_binary (L, PL_SOP_MUL, pl_lower_cast (L, pl_lower_value (L, rois, ri), f),
                                pl_lower_const (L, f, ra.spatial_scale));
      if (ra.half_pixel)
        box[k] = pl_lower_binary (L, PL_SOP_SUB, box[k], pl_lower_const (L, f, 0.5));
    }
  /* x0, y0, the roi's width and height (output_half_pixel: at least 1), the bins' */
  int rw = pl_lower_binary (L, PL_SOP_SUB, box[2], box[0]), rh = pl_lower_binary (L, PL_SOP_SUB, box[3], box[1]);
  if (!ra.half_pixel)
    {
      /* the reference's MAX: a NaN size becomes 1 */
      int one = pl_lower_const (L, f, 1);
      rw = pl_lower_select (L, pl_lower_binary (L, PL_SOP_GT, rw, one), rw, one);
      rh = pl_lower_select (L, pl_lower_binary (L, PL_SOP_GT, rh, one), rh, one);
    }
  int bw = pl_lower_binary (L, PL_SOP_DIV, rw, pl_lower_const (L, f, (double) ra.width));
  int bh = pl_lower_binary (L, PL_SOP_DIV, rh, pl_lower_const (L, f, (double) ra.height));
  /* the batch index, checked like Gather's */
  const PlIdx *bidx[1] = { idx[0] };
  int b = pl_lower_value (L, bi, bidx);
  if (b < 0)
    return -1;
  if (bi->dtype != i)
    b = pl_lower_cast (L, b, i);
  g_autofree char *what = g_strdup_printf ("batch index %%I of RoiAlign '%s' is outside the batch of %" G_GINT64_FORMAT,
                                           node->name, xd[0]);
  b = pl_lower_checked_range (L, b, xd[0] - 1, what);
  /* X (0, c, 0, 0) plus b C H W + the sample's offset, a gathered read */
  const PlIdx *plane[4] = { pl_idx_const (A, 0), idx[1], pl_idx_const (A, 0), pl_idx_const (A, 0) };
  const PlIdx *base = pl_lower_offset (L, x, plane);
  int image = pl_lower_binary (L, PL_SOP_MUL, b, pl_lower_const (L, i, (double) (xd[1] * xd[2] * xd[3])));
  int slot = pl_lower_slot (L, x);
  int ph = pl_lower_cast (L, pl_lower_index_value (L, idx[2]), f), pw = pl_lower_cast (L, pl_lower_index_value (L, idx[3]), f);
  int ystart = pl_lower_binary (L, PL_SOP_ADD, box[1], pl_lower_binary (L, PL_SOP_MUL, ph, bh));
  int xstart = pl_lower_binary (L, PL_SOP_ADD, box[0], pl_lower_binary (L, PL_SOP_MUL, pw, bw));
  const int64_t s = ra.sampling_ratio;
  int acc = -1;
  for (int64_t iy = 0; iy < s; iy++)
    for (int64_t ix = 0; ix < s; ix++)
      {
        /* y0 + ph bh + (iy + 0.5) bh / s, as the reference orders it */
        int sy = pl_lower_binary (L, PL_SOP_ADD, ystart,
                                  pl_lower_binary (L, PL_SOP_DIV, pl_lower_binary (L, PL_SOP_MUL, pl_lower_const (L, f, (double) iy + 0.5), bh),
                                                   pl_lower_const (L, f, (double) s)));
        int sx = pl_lower_binary (L, PL_SOP_ADD, xstart,
                                  pl_lower_binary (L, PL_SOP_DIV, pl_lower_binary (L, PL_SOP_MUL, pl_lower_const (L, f, (double) ix + 0.5), bw),
                                                   pl_lower_const (L, f, (double) s)));
        int pos[4], w[4], m = -1;
        roi_sample (L, sy, sx, xd[2], xd[3], pos, w);
        for (int k = 0; k < 4; k++)
          {
            int val = pl_lower_cast (L, pl_lower_gather_load (L, slot, x->dtype, base,
                                                              pl_lower_binary (L, PL_SOP_ADD, image, pos[k]), 1), f);
            int term = pl_lower_binary (L, PL_SOP_MUL, w[k], val);
            if (ra.avg)
              acc = acc < 0 ? term : pl_lower_binary (L, PL_SOP_ADD, acc, term);
            else
              m = m < 0 ? term : pl_lower_binary (L, PL_SOP_MAX, m, term);
          }
        if (!ra.avg)
          acc = acc < 0 ? m : pl_lower_binary (L, PL_SOP_MAX, acc, m);
      }
  if (ra.avg)
    acc = pl_lower_binary (L, PL_SOP_DIV, acc, pl_lower_const (L, f, (double) (s * s)));
  return pl_lower_cast (L, acc, v->dtype);
}

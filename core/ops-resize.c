/* ops-resize.c — Resize: nearest, linear and cubic sampling with every
 * coordinate_transformation_mode up to opset 19's half_pixel_symmetric,
 * the opset 10 form (X, scales) and opset 11+ (X, roi, scales, sizes).
 * Registered through pl_ops_register_shape (ops-shape.c).
 *
 * It follows the ONNX reference (onnx/backend/test/case/node/resize.py):
 * each output coordinate maps to an input coordinate x by the coordinate
 * transform, then to 1 (nearest), 2 (linear) or 4 (cubic) neighbours with
 * weights, neighbours past the edge clamped to it (or, with
 * exclude_outside, dropped and the weights renormalized); the n-D result is
 * the separable product of the per-axis weights. Nearest copies elements
 * exactly; linear and cubic compute in double.
 */
#define G_LOG_DOMAIN "passlab"

#include <math.h>
#include <string.h>

#include "ops-shape-private.h"

/* --- Resize --------------------------------------------------------------- */

typedef struct {
  const char *mode;       /* nearest | linear | cubic */
  const char *coord;      /* coordinate_transformation_mode */
  const char *nearest;    /* nearest_mode */
  double      cubic_a;
  bool        exclude_outside;
  double      extrapolation;
} ResizeAttrs;

static bool
one_of (const char *s, const char *const *names)
{
  for (; *names != NULL; names++)
    if (strcmp (s, *names) == 0)
      return true;
  return false;
}

static bool
resize_attrs (const PlNode *node, ResizeAttrs *ra, GError **error)
{
  static const char *const modes[] = { "nearest", "linear", "cubic", NULL };
  static const char *const coords[] = { "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                                        "align_corners", "asymmetric", "tf_half_pixel_for_nn",
                                        "tf_crop_and_resize", NULL };
  static const char *const nearests[] = { "round_prefer_floor", "round_prefer_ceil", "floor",
                                          "ceil", NULL };
  bool v10 = pl_node_opset (node) < 11;

  /* opset 10 Resize samples like Upsample: asymmetric, nearest rounds down */
  ra->mode = pl_node_attr_string (node, "mode", "nearest");
  ra->coord = pl_node_attr_string (node, "coordinate_transformation_mode",
                                   v10 ? "asymmetric" : "half_pixel");
  ra->nearest = pl_node_attr_string (node, "nearest_mode", v10 ? "floor" : "round_prefer_floor");
  ra->cubic_a = pl_node_attr_float (node, "cubic_coeff_a", -0.75f);
  ra->exclude_outside = pl_node_attr_int (node, "exclude_outside", 0) != 0;
  ra->extrapolation = pl_node_attr_float (node, "extrapolation_value", 0.0f);
  if (!one_of (ra->mode, modes) || !one_of (ra->coord, coords) || !one_of (ra->nearest, nearests))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "mode '%s', coordinate transform "
                   "'%s', nearest mode '%s'", ra->mode, ra->coord, ra->nearest);
      return false;
    }
  return true;
}

/* Where Resize's roi, scales and sizes are: opset 10 has (X, scales). */
static int
resize_input (const PlNode *node, int which)
{
  if (pl_node_opset (node) < 11)
    return which == 2 ? 1 : -1;
  return which;
}

/* A Resize input's data: at run time from inputs, at inference when
 * constant. *state: 0 absent or empty, 1 known, -1 present but unknown. */
static const PlTensor *
resize_tensor (const PlNode *node, PlTensor *const *inputs, int which, int *state)
{
  int i = resize_input (node, which);
  PlValue *v = i >= 0 ? pl_input (node, i) : NULL;
  const PlTensor *t;

  *state = 0;
  if (v == NULL)
    return NULL;
  t = inputs != NULL ? inputs[i] : pl_input_constant (node, i);
  if (t == NULL)
    {
      /* an input known to be empty counts as absent (opset 11 needs placeholders) */
      if (inputs == NULL && !(v->shape.rank == 1 && pl_dim_is_static (v->shape.dims[0])
                              && v->shape.dims[0].size == 0))
        *state = -1;
      return NULL;
    }
  if (t->numel == 0)
    return NULL;
  *state = 1;
  return t;
}

/* Output shape and per-axis scales. Returns 1 when computed, 0 when the
 * scales/sizes are unknown (inference only), -1 on error. */
static int
resize_shape (const PlNode *node, PlTensor *const *inputs, const PlShape *in, double *scales,
              double *roi, PlShape *out, GError **error)
{
  int ss, zs, rs;
  const PlTensor *sc = resize_tensor (node, inputs, 2, &ss);
  const PlTensor *sz = resize_tensor (node, inputs, 3, &zs);
  const PlTensor *ro = resize_tensor (node, inputs, 1, &rs);
  int r = in->rank;
  const PlTensor *given = sz != NULL ? sz : sc;
  ResizeAttrs ra;

  if (!resize_attrs (node, &ra, error))
    return -1;
  if (strcmp (ra.coord, "tf_crop_and_resize") != 0)
    ro = NULL;  /* roi only matters for tf_crop_and_resize */
  if (ss == -1 || zs == -1 || (rs == -1 && strcmp (ra.coord, "tf_crop_and_resize") == 0))
    return 0;
  if (given == NULL || (sc != NULL && sz != NULL) || given->numel != r
      || (ro != NULL && ro->numel != 2 * r))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, given == NULL || (sc != NULL && sz != NULL)
                   ? "exactly one of scales and sizes must be given"
                   : "scales, sizes or roi do not match the input rank %d", r);
      return -1;
    }
  *out = *in;
  for (int k = 0; k < r; k++)
    {
      double lo = ro != NULL ? pl_tensor_get_f64 (ro, k) : 0, hi = ro != NULL ? pl_tensor_get_f64 (ro, r + k) : 1;
      PlDim d = in->dims[k];
      roi[k] = lo;
      roi[r + k] = hi;
      if (sz != NULL)
        {
          int64_t n = pl_tensor_get_i64 (sz, k);
          if (n < 0 || n > PL_MAX_NUMEL)
            goto bad;
          out->dims[k] = pl_dim_static (n);
          scales[k] = pl_dim_is_static (d) ? (double) n / (double) d.size : 0;
          if (pl_dim_is_static (d) && d.size == 0 && n > 0)
            goto bad;
        }
      else
        {
          double s = pl_tensor_get_f64 (sc, k), n;
          if (!(s > 0))
            goto bad;
          scales[k] = s;
          if (!pl_dim_is_static (d))
            {
              if (s != 1 || lo != 0 || hi != 1)
                out->dims[k] = pl_dim_unknown ();
              continue;
            }
          n = floor ((double) d.size * (hi - lo) * s);
          if (!(n >= 0 && n <= (double) PL_MAX_NUMEL))
            goto bad;
          out->dims[k] = pl_dim_static ((int64_t) n);
        }
    }
  return 1;
bad:
  g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "invalid scales or sizes");
  return -1;
}

static bool
infer_resize (PlNode *node, GError **error)
{
  PlValue *x = pl_input (node, 0);
  double scales[PL_MAX_RANK], roi[2 * PL_MAX_RANK];
  PlShape out = pl_shape_unknown ();

  if (x->shape.rank != PL_RANK_UNKNOWN)
    {
      int found = resize_shape (node, NULL, &x->shape, scales, roi, &out, error);
      if (found < 0)
        return false;
      if (found == 0)
        {
          out.rank = x->shape.rank;
          for (int k = 0; k < out.rank; k++)
            out.dims[k] = pl_dim_unknown ();
        }
    }
  pl_set_output (node, 0, x->dtype, &out);
  return true;
}

/* One output coordinate's neighbours along an axis: up to 4 (index, weight). */
typedef struct {
  int     n;
  bool    outside;    /* tf_crop_and_resize: extrapolate */
  int64_t idx[4];
  double  w[4];
} Taps;

static double
resize_source_coord (const ResizeAttrs *ra, int64_t o, int64_t in, int64_t out, double scale,
                     double lo, double hi, bool *outside)
{
  /* the reference uses scale * in, not the integer output size */
  double width = scale * (double) in, x;
  const char *c = ra->coord;

  *outside = false;
  if (strcmp (c, "asymmetric") == 0)
    return o / scale;
  if (strcmp (c, "tf_half_pixel_for_nn") == 0)
    return (o + 0.5) / scale;
  if (strcmp (c, "align_corners") == 0)
    return width == 1 ? 0 : o * (double) (in - 1) / (width - 1);
  if (strcmp (c, "pytorch_half_pixel") == 0)
    return width == 1 ? -0.5 : (o + 0.5) / scale - 0.5;
  if (strcmp (c, "half_pixel_symmetric") == 0)
    {
      double adj = (double) out / width;
      return (double) in / 2 * (1 - adj) + (o + 0.5) / scale - 0.5;
    }
  if (strcmp (c, "tf_crop_and_resize") == 0)
    {
      x = width == 1 ? (hi - lo) * (in - 1) / 2 : o * (hi - lo) * (in - 1) / (width - 1);
      x += lo * (in - 1);
      *outside = x < 0 || x > in - 1;
      return x;
    }
  return (o + 0.5) / scale - 0.5;  /* half_pixel */
}

void
pl_cubic_weights (double ratio, double a, double *w)
{
  double r1 = ratio + 1, q = 1 - ratio, q1 = q + 1;

  w[0] = ((a * r1 - 5 * a) * r1 + 8 * a) * r1 - 4 * a;
  w[1] = ((a + 2) * ratio - (a + 3)) * ratio * ratio + 1;
  w[2] = ((a + 2) * q - (a + 3)) * q * q + 1;
  w[3] = ((a * q1 - 5 * a) * q1 + 8 * a) * q1 - 4 * a;
}

static void
resize_taps (const ResizeAttrs *ra, double x, int64_t in, Taps *t)
{
  double c = ceil (x), ratio;
  int64_t base;

  if (strcmp (ra->mode, "nearest") == 0)
    {
      double f = floor (x), frac = x - f;
      bool up;
      if (frac == 0)
        up = false;
      else if (strcmp (ra->nearest, "round_prefer_ceil") == 0)
        up = frac >= 0.5;
      else if (strcmp (ra->nearest, "floor") == 0)
        up = false;
      else if (strcmp (ra->nearest, "ceil") == 0)
        up = true;
      else
        up = frac > 0.5;
      t->n = 1;
      t->idx[0] = CLAMP ((int64_t) f + up, 0, in - 1);
      t->w[0] = 1;
      return;
    }
  /* the n nearest neighbours, ties to the left: ratio in (0, 1] */
  ratio = x - (c - 1);
  if (strcmp (ra->mode, "linear") == 0)
    {
      t->n = 2;
      base = (int64_t) c - 1;
      t->w[0] = 1 - ratio;
      t->w[1] = ratio;
    }
  else
    {
      t->n = 4;
      base = (int64_t) c - 2;
      pl_cubic_weights (ratio, ra->cubic_a, t->w);
    }
  if (ra->exclude_outside)
    {
      double sum = 0;
      for (int j = 0; j < t->n; j++)
        {
          if (base + j < 0 || base + j >= in)
            t->w[j] = 0;
          sum += t->w[j];
        }
      for (int j = 0; j < t->n && sum != 0; j++)
        t->w[j] /= sum;
    }
  for (int j = 0; j < t->n; j++)
    t->idx[j] = CLAMP (base + j, 0, in - 1);
}

/* Linear and cubic: the separable sum over every axis' taps. */
static void
resize_interpolate (PlTensor *y, const PlTensor *x, Taps *const *taps, double extrapolation)
{
  int rank = x->rank;
  int64_t strides[PL_MAX_RANK], pos[PL_MAX_RANK] = { 0 };
  g_autofree double *xd = g_new (double, MAX (x->numel, 1));

  for (int64_t i = 0; i < x->numel; i++)
    xd[i] = pl_tensor_get_f64 (x, i);
  pl_strides (rank, x->dims, strides);
  for (int64_t i = 0; i < y->numel; i++)
    {
      const Taps *t[PL_MAX_RANK];
      int c[PL_MAX_RANK] = { 0 };
      bool outside = false;
      double acc = 0;
      int k;

      for (k = 0; k < rank; k++)
        {
          t[k] = &taps[k][pos[k]];
          outside |= t[k]->outside;
        }
      while (!outside)
        {
          double w = 1;
          int64_t off = 0;
          for (k = 0; k < rank; k++)
            {
              w *= t[k]->w[c[k]];
              off += t[k]->idx[c[k]] * strides[k];
            }
          acc += w * xd[off];
          for (k = rank - 1; k >= 0; k--)
            {
              if (++c[k] < t[k]->n)
                break;
              c[k] = 0;
            }
          if (k < 0)
            break;
        }
      pl_tensor_set_f64 (y, i, outside ? extrapolation : acc);
      for (k = rank - 1; k >= 0; k--)
        {
          if (++pos[k] < y->dims[k])
            break;
          pos[k] = 0;
        }
    }
}

static bool
eval_resize (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0];
  PlShape in = pl_tensor_shape (x), out;
  double scales[PL_MAX_RANK], roi[2 * PL_MAX_RANK];
  Taps *taps[PL_MAX_RANK] = { NULL };
  ResizeAttrs ra;
  int r = x->rank;

  if (!resize_attrs (node, &ra, error) || resize_shape (node, inputs, &in, scales, roi, &out, error) != 1)
    return pl_exec_error (error);
  outputs[0] = pl_tensor_new_shape (x->dtype, &out, error);
  if (outputs[0] == NULL)
    return false;
  for (int k = 0; k < r; k++)
    {
      int64_t n = outputs[0]->dims[k];
      taps[k] = g_new0 (Taps, MAX (n, 1));
      for (int64_t o = 0; o < n; o++)
        {
          double xo = resize_source_coord (&ra, o, x->dims[k], n, scales[k], roi[k], roi[r + k],
                                           &taps[k][o].outside);
          resize_taps (&ra, xo, x->dims[k], &taps[k][o]);
        }
    }
  if (strcmp (ra.mode, "nearest") == 0)
    {
      int64_t *maps[PL_MAX_RANK];
      guint8 fill[8];
      for (int k = 0; k < r; k++)
        {
          maps[k] = g_new (int64_t, MAX (outputs[0]->dims[k], 1));
          for (int64_t o = 0; o < outputs[0]->dims[k]; o++)
            maps[k][o] = taps[k][o].outside ? -1 : taps[k][o].idx[0];
        }
      pl_scalar_bytes (x->dtype, NULL, ra.extrapolation, fill);
      pl_gather_axis_maps (outputs[0], x, maps, fill);
      for (int k = 0; k < r; k++)
        g_free (maps[k]);
    }
  else
    resize_interpolate (outputs[0], x, taps, ra.extrapolation);
  for (int k = 0; k < r; k++)
    g_free (taps[k]);
  return true;
}

/* maps[k][o]: the input element along axis k that output coordinate o of a
 * nearest Resize copies (g_malloc'd per axis); false (nothing allocated)
 * when not known at compile time or when some output falls outside the
 * input (tf_crop_and_resize's extrapolation). */
static bool
nearest_maps (const PlNode *node, int64_t **maps)
{
  const PlValue *x = node->op == PL_OP_Resize && node->n_inputs > 0 ? node->inputs[0] : NULL;
  double scales[PL_MAX_RANK], roi[2 * PL_MAX_RANK];
  PlShape out;
  ResizeAttrs ra;

  if (!x || !pl_shape_is_static (&x->shape) || !resize_attrs (node, &ra, NULL) || strcmp (ra.mode, "nearest") != 0
      || resize_shape (node, NULL, &x->shape, scales, roi, &out, NULL) != 1)
    return false;
  int r = x->shape.rank;
  for (int k = 0; k < r; k++)
    maps[k] = NULL;
  for (int k = 0; k < r; k++)
    {
      int64_t in = x->shape.dims[k].size, n = out.dims[k].size;
      maps[k] = g_new (int64_t, MAX (n, 1));
      for (int64_t o = 0; o < n; o++)
        {
          Taps t;
          double xo = resize_source_coord (&ra, o, in, n, scales[k], roi[k], roi[r + k], &t.outside);
          resize_taps (&ra, xo, in, &t);
          if (t.outside || in == 0)
            {
              for (int j = 0; j <= k; j++)
                g_clear_pointer (&maps[j], g_free);
              return false;
            }
          maps[k][o] = t.idx[0];
        }
    }
  return true;
}

/* Whether map[i] = b + (m i + o) / q for i < n, with m >= 0, 0 <= o < q:
 * a Resize by an integer factor down (q 1) or up (m 1), or none. */
static bool
index_form (const int64_t *map, int64_t n, int64_t in, PlResizeAxis *f)
{
  f->b = map[0];
  f->m = n > 1 ? map[1] - map[0] : 0;
  f->o = 0;
  f->q = 1;
  bool ok = f->m >= 0;
  for (int64_t i = 0; ok && i < n; i++)
    ok = map[i] == f->b + f->m * i;
  if (ok)
    return true;
  f->m = 1;
  for (f->q = MAX (n / MAX (in, 1), 2); f->q <= n / MAX (in, 1) + 1; f->q++)
    for (f->o = 0; f->o < f->q; f->o++)
      {
        ok = true;
        for (int64_t i = 0; ok && i < n; i++)
          ok = map[i] == f->b + (i + f->o) / f->q;
        if (ok)
          return true;
      }
  return false;
}

bool
pl_resize_nearest_form (const PlNode *node, PlResizeAxis *axes)
{
  int64_t *maps[PL_MAX_RANK];
  if (!nearest_maps (node, maps))
    return false;
  bool ok = true;
  const PlValue *x = node->inputs[0], *y = node->outputs[0];
  for (int k = 0; k < x->shape.rank; k++)
    {
      ok = ok && y && pl_dim_is_static (y->shape.dims[k])
           && index_form (maps[k], y->shape.dims[k].size, x->shape.dims[k].size, &axes[k]);
      g_free (maps[k]);
    }
  return ok;
}

/* Whether x[o] = (a o + b) / c for o < n, for some c in 1..PL_RESIZE_MAX_DENOM
 * (the smallest): a rational coordinate transform, as every one is for a
 * static size (half_pixel up by s: (2 o + 1 - s) / 2s; align_corners:
 * o (in - 1) / (out - 1)). */
#define PL_RESIZE_MAX_DENOM 4096

static bool
rational_form (const double *x, int64_t n, PlResizeSampleAxis *f)
{
  for (int64_t c = 1; c <= PL_RESIZE_MAX_DENOM; c++)
    {
      double p0 = x[0] * (double) c, p1 = n > 1 ? x[1] * (double) c : p0;
      if (fabs (p0 - round (p0)) > 1e-6 || fabs (p1 - round (p1)) > 1e-6)
        continue;
      f->b = (int64_t) round (p0);
      f->a = (int64_t) round (p1) - f->b;
      f->c = c;
      bool ok = f->a >= 0;
      for (int64_t o = 0; ok && o < n; o++)
        ok = fabs (x[o] * (double) c - (double) (f->a * o + f->b)) <= 1e-6 * MAX (1.0, fabs (x[o] * (double) c));
      if (ok)
        return true;
    }
  return false;
}

bool
pl_resize_sample_form (const PlNode *node, PlResizeSampleAxis *axes)
{
  const PlValue *x = node->op == PL_OP_Resize && node->n_inputs > 0 ? node->inputs[0] : NULL;
  double scales[PL_MAX_RANK], roi[2 * PL_MAX_RANK];
  PlShape out;
  ResizeAttrs ra;

  if (!x || !pl_shape_is_static (&x->shape) || !resize_attrs (node, &ra, NULL)
      || (strcmp (ra.mode, "linear") != 0 && strcmp (ra.mode, "cubic") != 0)
      || (ra.exclude_outside && strcmp (ra.mode, "linear") == 0)
      || strcmp (ra.coord, "tf_crop_and_resize") == 0 || pl_node_attr_int (node, "antialias", 0)
      || resize_shape (node, NULL, &x->shape, scales, roi, &out, NULL) != 1)
    return false;
  bool ok = true;
  for (int k = 0; ok && k < x->shape.rank; k++)
    {
      int64_t in = x->shape.dims[k].size, n = out.dims[k].size;
      if (in == 0 || n == 0)
        return false;
      g_autofree double *xs = g_new (double, n);
      bool outside;
      for (int64_t o = 0; o < n; o++)
        xs[o] = resize_source_coord (&ra, o, in, n, scales[k], roi[k], roi[x->shape.rank + k], &outside);
      ok = rational_form (xs, n, &axes[k]);
    }
  return ok;
}

/* --- registration --------------------------------------------------------- */

void
pl_ops_register_resize (void)
{
  static const PlOpEntry entries[] = {
    { PL_OP_Resize, 1, 4, 1, 1, infer_resize, eval_resize },
    /* Upsample (deprecated since opset 10) is opset-10 Resize: (X, scales) */
    { PL_OP_Upsample, 2, 2, 1, 1, infer_resize, eval_resize },
  };
  pl_ops_register (entries, G_N_ELEMENTS (entries));
}

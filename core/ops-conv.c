/* ops-conv.c — shape inference and reference evaluation of the sliding-window
 * ops: Conv, ConvTranspose, MaxPool, AveragePool, LpPool, GlobalAveragePool
 * and GlobalMaxPool (ONNX semantics up to opset 17).
 *
 * One description of the window (kernel, strides, dilations, pads, auto_pad,
 * ceil_mode) serves every op: window_read() reads the attributes and
 * window_shape() resolves them against an input shape into the output shape
 * and, when the spatial dims are static, a Geo — the geometry padded in
 * front to three spatial dims, so one 3-D loop nest runs 1-D, 2-D and 3-D
 * windows alike. Inference and evaluation go through the same plan
 * functions, so they cannot disagree about shapes.
 *
 * Kernels accumulate in double. Conv loops over (output channel, input
 * channel, kernel tap) and sweeps whole output rows for each tap, so the
 * inner loop is a branch-free axpy over contiguous memory.
 */
#define G_LOG_DOMAIN "passlab"

#include <math.h>
#include <string.h>

#include "ops-nn-private.h"

#define MAX_SPATIAL 3

typedef enum { AUTO_PAD_NOTSET, AUTO_PAD_SAME_UPPER, AUTO_PAD_SAME_LOWER, AUTO_PAD_VALID } AutoPad;

/* A sliding window over n spatial dims, as the attributes say. */
typedef struct {
  int            n;
  int64_t        kernel[PL_MAX_RANK];          /* -1: unknown (a weight with symbolic dims) */
  int64_t        strides[PL_MAX_RANK];
  int64_t        dilations[PL_MAX_RANK];
  int64_t        pads[2 * PL_MAX_RANK];        /* begins, then ends, as ONNX orders them */
  int64_t        output_padding[PL_MAX_RANK];  /* ConvTranspose */
  const int64_t *output_shape;                 /* ConvTranspose: n spatial sizes, or NULL */
  AutoPad        auto_pad;
  bool           ceil_mode;
  bool           transpose;                    /* ConvTranspose's output arithmetic */
} Window;

/* The resolved geometry, spatial dims right-aligned in 3 (leading ones neutral). */
typedef struct {
  int64_t in[MAX_SPATIAL], out[MAX_SPATIAL], k[MAX_SPATIAL], s[MAX_SPATIAL], d[MAX_SPATIAL];
  int64_t pb[MAX_SPATIAL], pe[MAX_SPATIAL];
  bool    complete;   /* every spatial dim static and resolved */
} Geo;

/* --- attributes ----------------------------------------------------------------- */

/* Reads an INTS attribute of exactly `len` values >= min into out, or fills
 * it with def when absent. */
static bool
read_ints (const PlNode *node, const char *name, int len, int64_t def, int64_t min,
           int64_t *out, GError **error)
{
  const int64_t *v;
  int n;

  if (!pl_node_attr_ints (node, name, &v, &n))
    {
      for (int i = 0; i < len; i++)
        out[i] = def;
      return true;
    }
  if (n != len)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "'%s' has %d values, expected %d", name, n, len);
      return false;
    }
  for (int i = 0; i < len; i++)
    {
      if (v[i] < min)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "'%s' value %" G_GINT64_FORMAT " is below %"
                       G_GINT64_FORMAT, name, v[i], min);
          return false;
        }
      out[i] = v[i];
    }
  return true;
}

/* Reads the window attributes for n spatial dims. w, when given, is the
 * weight's shape: the kernel comes from its spatial dims unless kernel_shape
 * says it (and then they must agree). */
static bool
window_read (const PlNode *node, int n, const PlShape *w, bool transpose, Window *win, GError **error)
{
  const char *auto_pad = pl_node_attr_string (node, "auto_pad", "NOTSET");
  const int64_t *os;
  int n_os;

  memset (win, 0, sizeof *win);
  win->n = n;
  win->transpose = transpose;
  win->ceil_mode = pl_node_attr_int (node, "ceil_mode", 0) != 0;
  if (g_str_equal (auto_pad, "NOTSET"))
    win->auto_pad = AUTO_PAD_NOTSET;
  else if (g_str_equal (auto_pad, "SAME_UPPER"))
    win->auto_pad = AUTO_PAD_SAME_UPPER;
  else if (g_str_equal (auto_pad, "SAME_LOWER"))
    win->auto_pad = AUTO_PAD_SAME_LOWER;
  else if (g_str_equal (auto_pad, "VALID"))
    win->auto_pad = AUTO_PAD_VALID;
  else
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "unknown auto_pad '%s'", auto_pad);
      return false;
    }

  if (pl_node_attr (node, "kernel_shape"))
    {
      if (!read_ints (node, "kernel_shape", n, 1, 1, win->kernel, error))
        return false;
      for (int i = 0; w && w->rank == n + 2 && i < n; i++)
        if (pl_dim_is_static (w->dims[2 + i]) && w->dims[2 + i].size != win->kernel[i])
          {
            g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "kernel_shape does not match the weight's "
                         "spatial dims (%" G_GINT64_FORMAT " vs %" G_GINT64_FORMAT ")",
                         win->kernel[i], w->dims[2 + i].size);
            return false;
          }
    }
  else if (w)
    {
      for (int i = 0; i < n; i++)
        win->kernel[i] = w->rank == n + 2 && pl_dim_is_static (w->dims[2 + i]) ? w->dims[2 + i].size : -1;
    }
  else
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "the 'kernel_shape' attribute is required");
      return false;
    }

  if (!read_ints (node, "strides", n, 1, 1, win->strides, error)
      || !read_ints (node, "dilations", n, 1, 1, win->dilations, error)
      || !read_ints (node, "pads", 2 * n, 0, 0, win->pads, error))
    return false;
  if (transpose)
    {
      if (!read_ints (node, "output_padding", n, 0, 0, win->output_padding, error))
        return false;
      if (pl_node_attr_ints (node, "output_shape", &os, &n_os))
        {
          /* Spatial sizes only, or the full shape (N, C, spatial...). */
          if (n_os != n && n_os != n + 2)
            {
              g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "'output_shape' has %d values for %d spatial dims",
                           n_os, n);
              return false;
            }
          win->output_shape = os + (n_os - n);
          for (int i = 0; i < n; i++)
            if (win->output_shape[i] < 0)
              {
                g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "'output_shape' has a negative size");
                return false;
              }
        }
    }
  return true;
}

/* --- output arithmetic ------------------------------------------------------------ */

static int64_t
ceil_div (int64_t a, int64_t b)
{
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

static void
window_fit_error (GError **error, int i, int64_t in, int64_t dk, int64_t pb, int64_t pe)
{
  g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "the window (dilated size %" G_GINT64_FORMAT
               ") does not fit spatial dim %d of size %" G_GINT64_FORMAT " with pads %"
               G_GINT64_FORMAT "+%" G_GINT64_FORMAT, dk, i, in, pb, pe);
}

/* Conv and pooling: output size of spatial dim i for input size `in`, and
 * the begin/end pads that auto_pad resolves to. -1 with an error when the
 * window does not fit. */
static int64_t
window_out (const Window *w, int i, int64_t in, int64_t *pb, int64_t *pe, GError **error)
{
  int64_t s = w->strides[i], dk = (w->kernel[i] - 1) * w->dilations[i] + 1, out, span;

  if (w->auto_pad == AUTO_PAD_SAME_UPPER || w->auto_pad == AUTO_PAD_SAME_LOWER)
    {
      int64_t total;

      out = ceil_div (in, s);
      total = MAX (0, (out - 1) * s + dk - in);
      /* SAME_UPPER puts the odd pad at the end, SAME_LOWER at the beginning. */
      *pb = w->auto_pad == AUTO_PAD_SAME_UPPER ? total / 2 : total - total / 2;
      *pe = total - *pb;
      return out;
    }
  *pb = w->auto_pad == AUTO_PAD_VALID ? 0 : w->pads[i];
  *pe = w->auto_pad == AUTO_PAD_VALID ? 0 : w->pads[w->n + i];
  span = in + *pb + *pe - dk;
  if (span < 0)
    {
      window_fit_error (error, i, in, dk, *pb, *pe);
      return -1;
    }
  out = (w->ceil_mode ? ceil_div (span, s) : span / s) + 1;
  /* ceil_mode: the last window must start inside the input or its left pad
   * (PyTorch's rule, adopted by ONNX). */
  if (w->ceil_mode && (out - 1) * s >= in + *pb)
    out--;
  return out;
}

/* ConvTranspose: output size of spatial dim i, and its pads. Where the
 * output size is given (output_shape, or auto_pad SAME: in * stride) the
 * pads follow from it; a negative total pads the end with zeros. */
static int64_t
convt_out (const Window *w, int i, int64_t in, int64_t *pb, int64_t *pe, GError **error)
{
  int64_t s = w->strides[i], dk = (w->kernel[i] - 1) * w->dilations[i] + 1;
  int64_t full = s * (in - 1) + w->output_padding[i] + dk, out, total;

  if (w->output_shape)
    out = w->output_shape[i];
  else if (w->auto_pad == AUTO_PAD_SAME_UPPER || w->auto_pad == AUTO_PAD_SAME_LOWER)
    out = in * s;
  else
    {
      *pb = w->auto_pad == AUTO_PAD_VALID ? 0 : w->pads[i];
      *pe = w->auto_pad == AUTO_PAD_VALID ? 0 : w->pads[w->n + i];
      out = full - *pb - *pe;
      if (out < 0)
        window_fit_error (error, i, in, dk, *pb, *pe);
      return out < 0 ? -1 : out;
    }
  total = full - out;
  if (total < 0)
    {
      *pb = 0;
      *pe = total;
      return out;
    }
  *pb = w->auto_pad == AUTO_PAD_SAME_UPPER ? total / 2 : total - total / 2;
  *pe = total - *pb;
  return out;
}

/* Whether spatial dim i keeps its size whatever it is (so a symbolic dim
 * can pass through). */
static bool
window_keeps_size (const Window *w, int i)
{
  bool same = w->auto_pad == AUTO_PAD_SAME_UPPER || w->auto_pad == AUTO_PAD_SAME_LOWER;
  bool unpadded = w->auto_pad == AUTO_PAD_VALID || (w->pads[i] == 0 && w->pads[w->n + i] == 0);

  if (w->strides[i] != 1 || w->output_shape)
    return false;
  if (same && !w->transpose)
    return true;
  return w->kernel[i] == 1 && unpadded && w->output_padding[i] == 0;
}

/* Sets out->dims[2..] from x's spatial dims, and geo where they are static. */
static bool
window_shape (const Window *w, const PlShape *x, PlShape *out, Geo *geo, GError **error)
{
  const int lead = MAX_SPATIAL - w->n;

  for (int j = 0; j < MAX_SPATIAL; j++)
    {
      geo->in[j] = geo->out[j] = geo->k[j] = geo->s[j] = geo->d[j] = 1;
      geo->pb[j] = geo->pe[j] = 0;
    }
  geo->complete = true;
  for (int i = 0; i < w->n; i++)
    {
      PlDim xd = x->dims[2 + i];
      int j = lead + i;
      int64_t o;

      if (!pl_dim_is_static (xd) || w->kernel[i] < 0)
        {
          geo->complete = false;
          if (w->output_shape)
            out->dims[2 + i] = pl_dim_static (w->output_shape[i]);
          else
            out->dims[2 + i] = window_keeps_size (w, i) ? xd : pl_dim_unknown ();
          continue;
        }
      o = w->transpose ? convt_out (w, i, xd.size, &geo->pb[j], &geo->pe[j], error)
                       : window_out (w, i, xd.size, &geo->pb[j], &geo->pe[j], error);
      if (o < 0)
        return false;
      out->dims[2 + i] = pl_dim_static (o);
      geo->in[j] = xd.size;
      geo->out[j] = o;
      geo->k[j] = w->kernel[i];
      geo->s[j] = w->strides[i];
      geo->d[j] = w->dilations[i];
    }
  return true;
}

/* Checks x is [N, C, spatial...] with 1 to 3 spatial dims. */
static bool
require_spatial (const PlShape *x, GError **error)
{
  g_autofree char *s = NULL;

  if (x->rank >= 3 && x->rank <= 2 + MAX_SPATIAL)
    return true;
  s = pl_shape_to_string (x);
  g_set_error (error, PL_ERROR, x->rank < 3 ? PL_ERROR_SHAPE : PL_ERROR_UNSUPPORTED,
               "the input %s must be [N, C, spatial...] with 1 to %d spatial dims", s, MAX_SPATIAL);
  return false;
}

/* --- convolutions ----------------------------------------------------------------- */

/* Conv: X [N, C, D...], W [M, C/group, k...], B [M] -> [N, M, O...].
 * ConvTranspose: X [N, C, D...], W [C, M/group, k...], B [M] -> [N, M, O...].
 * Sets *out (unknown when X's rank is) and, when static, *geo. */
static bool
conv_plan (const PlNode *node, const PlShape *x, const PlShape *w, const PlShape *b,
           PlShape *out, Geo *geo, GError **error)
{
  const bool transpose = node->op == PL_OP_ConvTranspose;
  int64_t group = pl_node_attr_int (node, "group", 1);
  PlDim c = x->rank >= 2 ? x->dims[1] : pl_dim_unknown (), m = pl_dim_unknown ();
  Window win;

  geo->complete = false;
  *out = pl_shape_unknown ();
  if (group < 1)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "group %" G_GINT64_FORMAT " must be >= 1", group);
      return false;
    }
  if (x->rank == PL_RANK_UNKNOWN)
    return true;
  if (!require_spatial (x, error))
    return false;
  if (w->rank != PL_RANK_UNKNOWN)
    {
      PlDim w0 = w->dims[0], w1 = w->dims[1];

      if (w->rank != x->rank)
        return pl_nn_shape_error (error, x, w, "input and weight ranks differ");
      if (!transpose)
        {
          if (pl_dim_is_static (c) && pl_dim_is_static (w1) && c.size != w1.size * group)
            return pl_nn_shape_error (error, x, w, "input channels %" G_GINT64_FORMAT " != weight dim 1 (%"
                                      G_GINT64_FORMAT ") * group %" G_GINT64_FORMAT " for input and weight",
                                      c.size, w1.size, group);
          if (pl_dim_is_static (w0) && w0.size % group != 0)
            return pl_nn_shape_error (error, x, w, "output channels %" G_GINT64_FORMAT " are not divisible"
                                      " by group %" G_GINT64_FORMAT, w0.size, group);
          m = w0;
        }
      else
        {
          if (pl_dim_is_static (c) && pl_dim_is_static (w0) && c.size != w0.size)
            return pl_nn_shape_error (error, x, w, "input channels %" G_GINT64_FORMAT " != weight dim 0 (%"
                                      G_GINT64_FORMAT ") for input and weight", c.size, w0.size);
          if (pl_dim_is_static (c) && c.size % group != 0)
            return pl_nn_shape_error (error, x, w, "input channels %" G_GINT64_FORMAT " are not divisible"
                                      " by group %" G_GINT64_FORMAT, c.size, group);
          m = pl_dim_is_static (w1) ? pl_dim_static (w1.size * group) : group == 1 ? w1 : pl_dim_unknown ();
        }
    }
  if (b && b->rank != PL_RANK_UNKNOWN)
    {
      PlShape ms = { .rank = 1, .dims = { m } };

      if (b->rank != 1 || (pl_dim_is_static (b->dims[0]) && pl_dim_is_static (m) && b->dims[0].size != m.size))
        return pl_nn_shape_error (error, b, &ms, "the bias must have one value per output channel");
      if (!pl_dim_is_static (m))
        m = b->dims[0];
    }

  if (!window_read (node, x->rank - 2, w, transpose, &win, error))
    return false;
  out->rank = x->rank;
  out->dims[0] = x->dims[0];
  out->dims[1] = m;
  return window_shape (&win, x, out, geo, error);
}

static const PlDType conv_types[] = {
  PL_DTYPE_F16, PL_DTYPE_BF16, PL_DTYPE_F32, PL_DTYPE_F64, PL_DTYPE_UNDEFINED
};
static const PlDType maxpool_types[] = {
  PL_DTYPE_F16, PL_DTYPE_BF16, PL_DTYPE_F32, PL_DTYPE_F64, PL_DTYPE_I8, PL_DTYPE_U8, PL_DTYPE_UNDEFINED
};

static bool
conv_infer (PlNode *node, GError **error)
{
  PlValue *x = pl_input (node, 0), *w = pl_input (node, 1), *b = pl_input (node, 2);
  PlShape out;
  Geo geo;

  if (!pl_require_dtype (node, 0, conv_types, error) || !pl_require_dtype (node, 1, conv_types, error)
      || (b && !pl_require_dtype (node, 2, conv_types, error)))
    return false;
  if (!conv_plan (node, &x->shape, &w->shape, b ? &b->shape : NULL, &out, &geo, error))
    return false;
  pl_set_output (node, 0, x->dtype, &out);
  return true;
}

bool
pl_conv_resolved_pads (const PlNode *node, int64_t *pads, GError **error)
{
  PlValue *x = pl_input (node, 0), *w = pl_input (node, 1), *b = pl_input (node, 2);
  PlShape out;
  Geo geo;

  g_return_val_if_fail (node->op == PL_OP_Conv || node->op == PL_OP_ConvTranspose, false);
  if (!x || !w || !conv_plan (node, &x->shape, &w->shape, b ? &b->shape : NULL, &out, &geo, error))
    return false;
  if (!geo.complete)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "%s: the window's shapes are not static", node->name);
      return false;
    }
  const int n = x->shape.rank - 2, lead = MAX_SPATIAL - n;
  for (int i = 0; i < n; i++)
    {
      pads[i] = geo.pb[lead + i];
      pads[n + i] = geo.pe[lead + i];
    }
  return true;
}

/* The t in [0, count) with 0 <= t*s + off < limit, as [*lo, *hi). */
static void
index_range (int64_t count, int64_t s, int64_t off, int64_t limit, int64_t *lo, int64_t *hi)
{
  int64_t a = off >= 0 ? 0 : (-off + s - 1) / s;
  int64_t z = limit - 1 - off < 0 ? 0 : (limit - 1 - off) / s + 1;

  *lo = MIN (a, count);
  *hi = MAX (MIN (z, count), *lo);
}

/* y[n, m] = b[m] + sum over the group's input channels and kernel taps. */
static void
conv_run (const Geo *g, int64_t N, int64_t C, int64_t M, int64_t group,
          const double *x, const double *w, const double *b, double *y)
{
  const int64_t Cg = C / group, Mg = M / group;
  const int64_t isz = g->in[0] * g->in[1] * g->in[2], osz = g->out[0] * g->out[1] * g->out[2];
  const int64_t ksz = g->k[0] * g->k[1] * g->k[2];

  for (int64_t n = 0; n < N; n++)
    for (int64_t m = 0; m < M; m++)
      {
        double *acc = y + (n * M + m) * osz;

        for (int64_t o = 0; o < osz; o++)
          acc[o] = b ? b[m] : 0.0;
        for (int64_t cg = 0; cg < Cg; cg++)
          {
            const double *xp = x + (n * C + (m / Mg) * Cg + cg) * isz;
            const double *wp = w + (m * Cg + cg) * ksz;

            for (int64_t k0 = 0; k0 < g->k[0]; k0++)
              for (int64_t k1 = 0; k1 < g->k[1]; k1++)
                for (int64_t k2 = 0; k2 < g->k[2]; k2++)
                  {
                    const double wv = *wp++;
                    const int64_t off0 = k0 * g->d[0] - g->pb[0], off1 = k1 * g->d[1] - g->pb[1];
                    const int64_t off2 = k2 * g->d[2] - g->pb[2], s2 = g->s[2];
                    int64_t lo0, hi0, lo1, hi1, lo2, hi2;

                    index_range (g->out[0], g->s[0], off0, g->in[0], &lo0, &hi0);
                    index_range (g->out[1], g->s[1], off1, g->in[1], &lo1, &hi1);
                    index_range (g->out[2], s2, off2, g->in[2], &lo2, &hi2);
                    for (int64_t o0 = lo0; o0 < hi0; o0++)
                      for (int64_t o1 = lo1; o1 < hi1; o1++)
                        {
                          const int64_t i0 = o0 * g->s[0] + off0, i1 = o1 * g->s[1] + off1;
                          const int64_t xbase = (i0 * g->in[1] + i1) * g->in[2] + off2;
                          double *row = acc + (o0 * g->out[1] + o1) * g->out[2];

                          if (s2 == 1)
                            for (int64_t o2 = lo2; o2 < hi2; o2++)
                              row[o2] += wv * xp[xbase + o2];
                          else
                            for (int64_t o2 = lo2; o2 < hi2; o2++)
                              row[o2] += wv * xp[xbase + o2 * s2];
                        }
                  }
          }
      }
}

/* Scatters each input element through the kernel into y (zeroed), then adds b. */
static void
convt_run (const Geo *g, int64_t N, int64_t C, int64_t M, int64_t group,
           const double *x, const double *w, const double *b, double *y)
{
  const int64_t Cg = C / group, Mg = M / group;
  const int64_t isz = g->in[0] * g->in[1] * g->in[2], osz = g->out[0] * g->out[1] * g->out[2];
  const int64_t ksz = g->k[0] * g->k[1] * g->k[2];

  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < C; c++)
      {
        const double *xp = x + (n * C + c) * isz;

        for (int64_t mg = 0; mg < Mg; mg++)
          {
            const int64_t m = (c / Cg) * Mg + mg;
            double *acc = y + (n * M + m) * osz;
            const double *wp = w + (c * Mg + mg) * ksz;

            for (int64_t k0 = 0; k0 < g->k[0]; k0++)
              for (int64_t k1 = 0; k1 < g->k[1]; k1++)
                for (int64_t k2 = 0; k2 < g->k[2]; k2++)
                  {
                    const double wv = *wp++;
                    const int64_t off0 = k0 * g->d[0] - g->pb[0], off1 = k1 * g->d[1] - g->pb[1];
                    const int64_t off2 = k2 * g->d[2] - g->pb[2], s2 = g->s[2];
                    int64_t lo0, hi0, lo1, hi1, lo2, hi2;

                    index_range (g->in[0], g->s[0], off0, g->out[0], &lo0, &hi0);
                    index_range (g->in[1], g->s[1], off1, g->out[1], &lo1, &hi1);
                    index_range (g->in[2], s2, off2, g->out[2], &lo2, &hi2);
                    for (int64_t i0 = lo0; i0 < hi0; i0++)
                      for (int64_t i1 = lo1; i1 < hi1; i1++)
                        {
                          const int64_t o0 = i0 * g->s[0] + off0, o1 = i1 * g->s[1] + off1;
                          const int64_t ybase = (o0 * g->out[1] + o1) * g->out[2] + off2;
                          const double *row = xp + (i0 * g->in[1] + i1) * g->in[2];

                          for (int64_t i2 = lo2; i2 < hi2; i2++)
                            acc[ybase + i2 * s2] += wv * row[i2];
                        }
                  }
          }
      }
  if (b)
    for (int64_t n = 0; n < N; n++)
      for (int64_t m = 0; m < M; m++)
        for (int64_t o = 0; o < osz; o++)
          y[(n * M + m) * osz + o] += b[m];
}

bool
pl_conv_shape (const PlNode *node, const PlShape *x, const PlShape *w, PlShape *out, GError **error)
{
  Geo geo;
  return conv_plan (node, x, w, NULL, out, &geo, error);
}

static bool
conv_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  /* inputs holds n_inputs slots: an omitted trailing input is not there. */
  return pl_conv_eval_f64 (node, inputs[0], inputs[1], node->n_inputs > 2 ? inputs[2] : NULL, outputs, error);
}

bool
pl_conv_eval_f64 (const PlNode *node, const PlTensor *x, const PlTensor *w, const PlTensor *b, PlTensor **y,
                  GError **error)
{
  PlShape sx = pl_tensor_shape (x), sw = pl_tensor_shape (w), sb = pl_shape_unknown (), so;
  int64_t dims[PL_MAX_RANK];
  g_autofree double *xv = NULL, *wv = NULL, *bv = NULL, *yv = NULL;
  Geo geo;

  if (b)
    sb = pl_tensor_shape (b);
  if (!conv_plan (node, &sx, &sw, b ? &sb : NULL, &so, &geo, error))
    return false;
  pl_shape_get_dims (&so, dims);
  *y = pl_out_new (x->dtype, so.rank, dims, error);
  if (!*y)
    return false;

  xv = pl_nn_load_f64 (x);
  wv = pl_nn_load_f64 (w);
  bv = b ? pl_nn_load_f64 (b) : NULL;
  yv = g_new0 (double, MAX ((*y)->numel, 1));
  if (node->op == PL_OP_ConvTranspose)
    convt_run (&geo, x->dims[0], x->dims[1], dims[1], pl_node_attr_int (node, "group", 1), xv, wv, bv, yv);
  else
    conv_run (&geo, x->dims[0], x->dims[1], dims[1], pl_node_attr_int (node, "group", 1), xv, wv, bv, yv);
  pl_nn_store_f64 (*y, yv);
  return true;
}

/* --- pooling --------------------------------------------------------------------- */

typedef enum { POOL_MAX, POOL_AVERAGE, POOL_LP } PoolKind;

/* A pool's output shape; with transpose, the shape a pool of this window
 * maps back from (MaxUnpool: ConvTranspose's arithmetic without dilation). */
static bool
pool_plan (const PlNode *node, const PlShape *x, bool transpose, PlShape *out, Geo *geo, GError **error)
{
  Window win;

  geo->complete = false;
  *out = pl_shape_unknown ();
  if (x->rank == PL_RANK_UNKNOWN)
    return true;
  if (!require_spatial (x, error) || !window_read (node, x->rank - 2, NULL, transpose, &win, error))
    return false;
  out->rank = x->rank;
  out->dims[0] = x->dims[0];
  out->dims[1] = x->dims[1];
  return window_shape (&win, x, out, geo, error);
}

bool
pl_unpool_shape (const PlNode *node, const PlShape *x, PlShape *out, GError **error)
{
  Geo geo;
  return pool_plan (node, x, true, out, &geo, error);
}

static bool
pool_infer (PlNode *node, GError **error)
{
  PlValue *x = pl_input (node, 0);
  PlShape out;
  Geo geo;

  if (!pl_require_dtype (node, 0, node->op == PL_OP_MaxPool ? maxpool_types : conv_types, error))
    return false;
  if (node->op == PL_OP_MaxPool && pl_node_attr_int (node, "storage_order", 0) > 1)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "storage_order must be 0 or 1");
      return false;
    }
  if (!pool_plan (node, &x->shape, false, &out, &geo, error))
    return false;
  pl_set_output (node, 0, x->dtype, &out);
  pl_set_output (node, 1, PL_DTYPE_I64, &out);
  return true;
}

/* One output element per window over each [N, C] plane. Padding never
 * wins a max and adds 0 to an Lp sum; an average divides by the input
 * elements of the window, or with count_pad by those plus its pad elements
 * (never the part past the end pad that ceil_mode may add). Indices count
 * into the whole input, row-major or (col_major) column-major within a plane. */
static void
pool_run (PoolKind kind, const Geo *g, int64_t planes, const double *x, double *y, int64_t *indices,
          bool count_pad, double p, bool col_major)
{
  const int64_t isz = g->in[0] * g->in[1] * g->in[2];
  int64_t o = 0;

  for (int64_t plane = 0; plane < planes; plane++)
    for (int64_t o0 = 0; o0 < g->out[0]; o0++)
      for (int64_t o1 = 0; o1 < g->out[1]; o1++)
        for (int64_t o2 = 0; o2 < g->out[2]; o2++, o++)
          {
            double acc = kind == POOL_MAX ? -INFINITY : 0.0;
            int64_t count = 0, best = -1;

            for (int64_t k0 = 0; k0 < g->k[0]; k0++)
              for (int64_t k1 = 0; k1 < g->k[1]; k1++)
                for (int64_t k2 = 0; k2 < g->k[2]; k2++)
                  {
                    const int64_t i[3] = { o0 * g->s[0] - g->pb[0] + k0 * g->d[0],
                                           o1 * g->s[1] - g->pb[1] + k1 * g->d[1],
                                           o2 * g->s[2] - g->pb[2] + k2 * g->d[2] };
                    bool inside = true, padded = true;
                    double v;

                    for (int j = 0; j < 3; j++)
                      {
                        inside = inside && i[j] >= 0 && i[j] < g->in[j];
                        padded = padded && i[j] >= -g->pb[j] && i[j] < g->in[j] + g->pe[j];
                      }
                    if (!inside)
                      {
                        count += count_pad && padded;
                        continue;
                      }
                    v = x[plane * isz + (i[0] * g->in[1] + i[1]) * g->in[2] + i[2]];
                    count++;
                    if (kind == POOL_AVERAGE)
                      acc += v;
                    else if (kind == POOL_LP)
                      acc += pow (fabs (v), p);
                    else if (v > acc || best < 0)
                      {
                        acc = v;
                        best = col_major ? i[0] + i[1] * g->in[0] + i[2] * g->in[0] * g->in[1]
                                         : (i[0] * g->in[1] + i[1]) * g->in[2] + i[2];
                      }
                  }
            if (kind == POOL_AVERAGE)
              acc /= (double) count;
            else if (kind == POOL_LP)
              acc = pow (acc, 1.0 / p);
            y[o] = acc;
            if (indices)
              indices[o] = best < 0 ? -1 : plane * isz + best;
          }
}

static bool
pool_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0];
  PlShape sx = pl_tensor_shape (x), so;
  int64_t dims[PL_MAX_RANK];
  g_autofree double *xv = NULL, *yv = NULL;
  g_autofree int64_t *iv = NULL;
  PoolKind kind = node->op == PL_OP_MaxPool ? POOL_MAX : node->op == PL_OP_AveragePool ? POOL_AVERAGE : POOL_LP;
  const PlAttr *pa = pl_node_attr (node, "p");
  /* LpPool's p is an int since opset 11, a float before. */
  double p = !pa ? 2.0 : pa->type == PL_ATTR_FLOAT ? pa->f : (double) pa->i;
  bool want_indices = kind == POOL_MAX && node->n_outputs > 1 && node->outputs[1];
  Geo geo;

  if (!pool_plan (node, &sx, false, &so, &geo, error))
    return false;
  pl_shape_get_dims (&so, dims);
  outputs[0] = pl_out_new (x->dtype, so.rank, dims, error);
  if (!outputs[0])
    return false;
  if (want_indices)
    {
      outputs[1] = pl_out_new (PL_DTYPE_I64, so.rank, dims, error);
      if (!outputs[1])
        {
          g_clear_pointer (&outputs[0], pl_tensor_unref);
          return false;
        }
      iv = g_new0 (int64_t, MAX (outputs[1]->numel, 1));
    }
  xv = pl_nn_load_f64 (x);
  yv = g_new0 (double, MAX (outputs[0]->numel, 1));
  pool_run (kind, &geo, x->dims[0] * x->dims[1], xv, yv, iv,
            pl_node_attr_int (node, "count_include_pad", 0) != 0, p,
            pl_node_attr_int (node, "storage_order", 0) == 1);
  pl_nn_store_f64 (outputs[0], yv);
  if (want_indices)
    memcpy (outputs[1]->data, iv, outputs[1]->numel * sizeof (int64_t));
  return true;
}

/* --- global pooling -------------------------------------------------------------- */

/* [N, C, d...] -> [N, C, 1...]: the mean or max of each plane. */
static bool
global_pool_shape (const PlShape *x, PlShape *out, GError **error)
{
  *out = *x;
  if (x->rank == PL_RANK_UNKNOWN)
    return true;
  if (x->rank < 2)
    {
      g_autofree char *s = pl_shape_to_string (x);

      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "the input %s must be [N, C, spatial...]", s);
      return false;
    }
  for (int i = 2; i < x->rank; i++)
    out->dims[i] = pl_dim_static (1);
  return true;
}

static bool
global_pool_infer (PlNode *node, GError **error)
{
  PlValue *x = pl_input (node, 0);
  PlShape out;

  if (!pl_require_dtype (node, 0, conv_types, error) || !global_pool_shape (&x->shape, &out, error))
    return false;
  pl_set_output (node, 0, x->dtype, &out);
  return true;
}

static bool
global_pool_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0];
  PlShape sx = pl_tensor_shape (x), so;
  int64_t dims[PL_MAX_RANK], planes, size;
  g_autofree double *xv = NULL, *yv = NULL;
  bool is_max = node->op == PL_OP_GlobalMaxPool;

  if (!global_pool_shape (&sx, &so, error))
    return false;
  pl_shape_get_dims (&so, dims);
  outputs[0] = pl_out_new (x->dtype, so.rank, dims, error);
  if (!outputs[0])
    return false;
  planes = x->dims[0] * x->dims[1];
  size = planes ? x->numel / planes : 0;
  xv = pl_nn_load_f64 (x);
  yv = g_new0 (double, MAX (planes, 1));
  for (int64_t p = 0; p < planes; p++)
    {
      const double *v = xv + p * size;
      double acc = is_max ? -INFINITY : 0.0;

      for (int64_t i = 0; i < size; i++)
        acc = is_max ? (v[i] > acc ? v[i] : acc) : acc + v[i];
      yv[p] = is_max ? acc : acc / (double) size;
    }
  pl_nn_store_f64 (outputs[0], yv);
  return true;
}

/* --- registration ----------------------------------------------------------------- */

void
pl_ops_register_conv (void)
{
  static const PlOpEntry entries[] = {
    { PL_OP_Conv, 2, 3, 1, 1, conv_infer, conv_eval },
    { PL_OP_ConvTranspose, 2, 3, 1, 1, conv_infer, conv_eval },
    { PL_OP_MaxPool, 1, 1, 1, 2, pool_infer, pool_eval },
    { PL_OP_AveragePool, 1, 1, 1, 1, pool_infer, pool_eval },
    { PL_OP_LpPool, 1, 1, 1, 1, pool_infer, pool_eval },
    { PL_OP_GlobalAveragePool, 1, 1, 1, 1, global_pool_infer, global_pool_eval },
    { PL_OP_GlobalMaxPool, 1, 1, 1, 1, global_pool_infer, global_pool_eval },
  };

  pl_ops_register (entries, G_N_ELEMENTS (entries));
}

/* grad-rules-nn.c — gradient rules of the grad pass for the network ops:
 * LayerNormalization and BatchNormalization (recomputing the statistics),
 * Conv, the pools, MatMul, Gemm, Einsum and the two losses.
 *
 * The forms are those the other passes expect: MatMul gradients read
 * Transpose(.., last two dims swapped), which fuse-library folds into GEMMs
 * with transpose flags; Conv's input gradient is ConvTranspose(dY, W) with
 * the forward window, its weight gradient
 *   Transpose(Conv(Transpose(X), Transpose(dY), strides=d, dilations=s), [1,0,2,..])
 * — fuse-library's conv_backward_input / conv_backward_filter patterns.
 */
#define G_LOG_DOMAIN "passlab"
#include "grad-private.h"
#include "einsum.h"

#include <string.h>

/* --- normalization ------------------------------------------------------------------------ */

/* The normalized x over axes, recomputed: xhat = (x - mean) * rstd, with
 * rstd = 1 / sqrt(var + eps) (shapes keep the reduced axes). */
typedef struct {
  PlValue *xhat, *rstd, *inv_n;
  const int64_t *axes;
  int k;
} Norm;

static PlValue *
norm_mean (PlGrad *G, const Norm *nm, PlValue *v)
{
  return op2 (G, "Mul", pl_grad_reduce_sum (G, v, nm->axes, nm->k, true), nm->inv_n);
}

static void
norm_stats (PlGrad *G, PlValue *x, const int64_t *axes, int k, double eps, Norm *nm)
{
  nm->axes = axes;
  nm->k = k;
  PlValue *s = pl_grad_reduce_sum (G, x, axes, k, true);
  nm->inv_n = s ? pl_grad_count_ratio (G, s, x, x->dtype) : NULL;
  PlValue *d = op2 (G, "Sub", x, op2 (G, "Mul", s, nm->inv_n));
  PlValue *var = norm_mean (G, nm, op2 (G, "Mul", d, d));
  nm->rstd = op1 (G, "Reciprocal", op1 (G, "Sqrt", op2 (G, "Add", var, pl_grad_scalar (G, x->dtype, eps))));
  nm->xhat = op2 (G, "Mul", d, nm->rstd);
}

/* dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * scale. */
static PlValue *
norm_backward (PlGrad *G, const Norm *nm, PlValue *g)
{
  PlValue *centered = op2 (G, "Sub", g, norm_mean (G, nm, g));
  PlValue *proj = op2 (G, "Mul", nm->xhat, norm_mean (G, nm, op2 (G, "Mul", g, nm->xhat)));
  return op2 (G, "Mul", nm->rstd, op2 (G, "Sub", centered, proj));
}

static bool
no_grads_after_first (PlGrad *G, const PlNode *n, PlValue *const *dy)
{
  for (int o = 1; o < n->n_outputs; o++)
    if (dy[o])
      {
        pl_grad_fail (G, PL_ERROR_UNSUPPORTED, "gradients through output %d ('%s') are not supported", o,
                      n->outputs[o]->name);
        return false;
      }
  return true;
}

static bool
rule_layer_norm (PlGrad *G, const PlNode *n, PlValue *const *dy, const bool *need)
{
  PlValue *x = n->inputs[0], *scale = n->inputs[1], *bias = n->n_inputs > 2 ? n->inputs[2] : NULL, *d = dy[0];
  int a, r = x->shape.rank;
  if (!no_grads_after_first (G, n, dy) || !pl_grad_axis_of (G, n, "axis", -1, r, &a))
    return false;
  int64_t axes[PL_MAX_RANK];
  for (int i = a; i < r; i++)
    axes[i - a] = i;
  Norm nm;
  norm_stats (G, x, axes, r - a, pl_node_attr_float (n, "epsilon", 1e-5f), &nm);
  if (need[0])
    pl_grad_give (G, x, norm_backward (G, &nm, op2 (G, "Mul", d, scale)));
  if (need[1])
    pl_grad_give (G, scale, pl_grad_unbroadcast (G, op2 (G, "Mul", d, nm.xhat), scale));
  if (bias && need[2])
    pl_grad_give (G, bias, pl_grad_unbroadcast (G, d, bias));
  return !G->error;
}

/* BatchNormalization over axis 1: inference mode (the given mean and var)
 * or training mode (the batch's statistics). */
static bool
rule_batch_norm (PlGrad *G, const PlNode *n, PlValue *const *dy, const bool *need)
{
  PlValue *x = n->inputs[0], *scale = n->inputs[1], *mean = n->inputs[3], *var = n->inputs[4], *d = dy[0];
  int r = x->shape.rank;
  int opset = n->graph->opset > 0 ? n->graph->opset : 17;
  bool training = opset >= 14 ? pl_node_attr_int (n, "training_mode", 0) != 0
                              : n->n_outputs > 1 && n->outputs[1];
  double eps = pl_node_attr_float (n, "epsilon", 1e-5f);
  if (!no_grads_after_first (G, n, dy))
    return false;
  if (r < 2)
    {
      pl_grad_fail (G, PL_ERROR_UNSUPPORTED, "needs an input [N, C, ...]");
      return false;
    }
  int64_t per_channel[PL_MAX_RANK], raxes[PL_MAX_RANK];
  int k = 0;
  for (int i = 0; i < r - 2; i++)
    per_channel[i] = i + 1;  /* [C] -> [C, 1, ..] */
  for (int i = 0; i < r; i++)
    if (i != 1)
      raxes[k++] = i;
  PlValue *xhat = NULL;
  if (training)
    {
      Norm nm;
      norm_stats (G, x, raxes, k, eps, &nm);
      xhat = nm.xhat;
      if (need[0])
        {
          PlValue *scale_c = pl_grad_unsqueeze (G, scale, per_channel, r - 2);
          pl_grad_give (G, x, norm_backward (G, &nm, op2 (G, "Mul", d, scale_c)));
        }
    }
  else
    {
      PlValue *rs = op1 (G, "Reciprocal", op1 (G, "Sqrt", op2 (G, "Add", var, pl_grad_scalar (G, var->dtype, eps))));
      if (need[0])
        pl_grad_give (G, x, op2 (G, "Mul", d, pl_grad_unsqueeze (G, op2 (G, "Mul", scale, rs), per_channel, r - 2)));
      if (need[1])
        xhat = op2 (G, "Mul", op2 (G, "Sub", x, pl_grad_unsqueeze (G, mean, per_channel, r - 2)),
                    pl_grad_unsqueeze (G, rs, per_channel, r - 2));
    }
  if (need[1])
    pl_grad_give (G, scale, pl_grad_reduce_sum (G, op2 (G, "Mul", d, xhat), raxes, k, false));
  if (need[2])
    pl_grad_give (G, n->inputs[2], pl_grad_reduce_sum (G, d, raxes, k, false));
  return !G->error;
}

/* --- convolution and pooling ---------------------------------------------------------------- */

/* A forward window in explicit form: spatial sizes of input, output and
 * kernel, strides, dilations and the begin/end pads auto_pad resolves to. */
typedef struct {
  int     n;
  int64_t x[PL_MAX_RANK], y[PL_MAX_RANK], k[PL_MAX_RANK];
  int64_t s[PL_MAX_RANK], d[PL_MAX_RANK], p[2 * PL_MAX_RANK];
} Window;

static bool
read_ints_attr (const PlNode *n, const char *name, int count, int64_t def, int64_t *out)
{
  const int64_t *v;
  int k;
  for (int i = 0; i < count; i++)
    out[i] = def;
  if (!pl_node_attr_ints (n, name, &v, &k))
    return true;
  if (k != count)
    return false;
  memcpy (out, v, sizeof (int64_t) * count);
  return true;
}

static bool
window_of (PlGrad *G, const PlNode *n, const int64_t *kernel, Window *w)
{
  int64_t xd[PL_MAX_RANK], yd[PL_MAX_RANK];
  if (!pl_grad_require_static (G, n->inputs[0], xd) || !pl_grad_require_static (G, n->outputs[0], yd))
    return false;
  w->n = n->inputs[0]->shape.rank - 2;
  if (w->n < 1 || !read_ints_attr (n, "strides", w->n, 1, w->s) || !read_ints_attr (n, "dilations", w->n, 1, w->d) ||
      !read_ints_attr (n, "pads", 2 * w->n, 0, w->p))
    {
      pl_grad_fail (G, PL_ERROR_UNSUPPORTED, "needs [N, C, spatial...] and matching window attributes");
      return false;
    }
  const char *auto_pad = pl_node_attr_string (n, "auto_pad", "NOTSET");
  for (int i = 0; i < w->n; i++)
    {
      w->x[i] = xd[2 + i], w->y[i] = yd[2 + i], w->k[i] = kernel[i];
      int64_t total = MAX (0, (w->y[i] - 1) * w->s[i] + (w->k[i] - 1) * w->d[i] + 1 - w->x[i]);
      if (strcmp (auto_pad, "VALID") == 0)
        w->p[i] = w->p[w->n + i] = 0;
      else if (strcmp (auto_pad, "SAME_UPPER") == 0)
        w->p[i] = total / 2, w->p[w->n + i] = total - total / 2;
      else if (strcmp (auto_pad, "SAME_LOWER") == 0)
        w->p[i] = total - total / 2, w->p[w->n + i] = total / 2;
    }
  return true;
}

/* ConvTranspose(dy, w) that maps a gradient of the window's output back to
 * its input: the forward strides, dilations and pads; output_padding covers
 * input rows no window reached, extra end padding crops rows past the end
 * that ceil_mode windows read. */
static PlValue *
conv_transpose (PlGrad *G, PlValue *dy, PlValue *w, const Window *win, int64_t group)
{
  int64_t pads[2 * PL_MAX_RANK], op[PL_MAX_RANK];
  bool any_op = false;
  memcpy (pads, win->p, sizeof (int64_t) * 2 * win->n);
  for (int i = 0; i < win->n; i++)
    {
      int64_t keff = (win->k[i] - 1) * win->d[i] + 1;
      int64_t rest = win->x[i] + pads[i] + pads[win->n + i] - keff - win->s[i] * (win->y[i] - 1);
      op[i] = MAX (rest, 0);
      if (rest < 0)
        pads[win->n + i] -= rest;
      any_op = any_op || op[i];
    }
  PlNode *ct = pl_grad_node (G, "ConvTranspose", 2, (PlValue *[]) { dy, w }, 1);
  if (ct)
    {
      pl_node_set_attr_ints (ct, "strides", win->s, win->n);
      pl_node_set_attr_ints (ct, "dilations", win->d, win->n);
      pl_node_set_attr_ints (ct, "pads", pads, 2 * win->n);
      pl_node_set_attr_ints (ct, "kernel_shape", win->k, win->n);
      pl_node_set_attr_int (ct, "group", group);
      if (any_op)
        pl_node_set_attr_ints (ct, "output_padding", op, win->n);
    }
  return pl_grad_finish (G, ct);
}

/* dW = Transpose(Conv(Transpose(X), Transpose(dY), strides=d, dilations=s),
 * [1,0,2,..]): the batch becomes the reduced channel axis. Input rows past
 * the last window are sliced off first, so no pad is negative. */
static PlValue *
conv_weight_grad (PlGrad *G, PlValue *x, PlValue *dy, const Window *w)
{
  int64_t pads[2 * PL_MAX_RANK], starts[PL_MAX_RANK], ends[PL_MAX_RANK], axes[PL_MAX_RANK];
  int ncut = 0;
  for (int i = 0; i < w->n; i++)
    {
      int64_t pb = w->p[i], pe = (w->y[i] - 1) * w->s[i] + w->d[i] * (w->k[i] - 1) + 1 - w->x[i] - pb;
      if (pe < 0)
        {
          starts[ncut] = 0, ends[ncut] = w->x[i] + pe, axes[ncut++] = 2 + i;
          pe = 0;
        }
      pads[i] = pb, pads[w->n + i] = pe;
    }
  PlValue *xs = ncut ? pl_grad_slice (G, x, starts, ends, axes, ncut) : x;
  PlNode *c = pl_grad_node (G, "Conv", 2, (PlValue *[]) { pl_grad_swap_first (G, xs), pl_grad_swap_first (G, dy) }, 1);
  if (c)
    {
      pl_node_set_attr_ints (c, "strides", w->d, w->n);
      pl_node_set_attr_ints (c, "dilations", w->s, w->n);
      pl_node_set_attr_ints (c, "pads", pads, 2 * w->n);
      pl_node_set_attr_int (c, "group", 1);
    }
  return pl_grad_swap_first (G, pl_grad_finish (G, c));
}

static bool
rule_conv (PlGrad *G, const PlNode *n, PlValue *const *dy, const bool *need)
{
  PlValue *x = n->inputs[0], *w = n->inputs[1], *d = dy[0];
  int64_t wd[PL_MAX_RANK];
  Window win;
  int64_t group = pl_node_attr_int (n, "group", 1);
  if (!pl_grad_require_static (G, w, wd) || !window_of (G, n, wd + 2, &win))
    return false;
  if (need[0])
    pl_grad_give (G, x, conv_transpose (G, d, w, &win, group));
  if (need[1])
    {
      if (group != 1)
        {
          pl_grad_fail (G, PL_ERROR_UNSUPPORTED, "the weight gradient of a grouped Conv (group=%" G_GINT64_FORMAT
                        ") is not supported", group);
          return false;
        }
      pl_grad_give (G, w, conv_weight_grad (G, x, d, &win));
    }
  if (n->n_inputs > 2 && n->inputs[2] && need[2])
    {
      int64_t axes[PL_MAX_RANK];
      int k = 0;
      for (int i = 0; i < d->shape.rank; i++)
        if (i != 1)
          axes[k++] = i;
      pl_grad_give (G, n->inputs[2], pl_grad_reduce_sum (G, d, axes, k, false));
    }
  return !G->error;
}

static bool
pool_window (PlGrad *G, const PlNode *n, Window *w)
{
  int64_t k[PL_MAX_RANK];
  const int64_t *v;
  int nk;
  if (!pl_node_attr_ints (n, "kernel_shape", &v, &nk) || nk > PL_MAX_RANK)
    {
      pl_grad_fail (G, PL_ERROR_UNSUPPORTED, "needs kernel_shape");
      return false;
    }
  memcpy (k, v, sizeof (int64_t) * nk);
  if (!window_of (G, n, k, w))
    return false;
  if (w->n != nk)
    {
      pl_grad_fail (G, PL_ERROR_UNSUPPORTED, "kernel_shape does not match the input's rank");
      return false;
    }
  return true;
}

/* AveragePool: dY divided by each window's count, then spread over the
 * window by a depthwise ConvTranspose with a kernel of ones. */
static bool
rule_average_pool (PlGrad *G, const PlNode *n, PlValue *const *dy, const bool *need)
{
  PlValue *x = n->inputs[0];
  Window w;
  int64_t xd[PL_MAX_RANK];
  if (!need[0] || !pool_window (G, n, &w) || !pl_grad_require_static (G, x, xd))
    return !G->error;
  bool count_pad = pl_node_attr_int (n, "count_include_pad", 0) != 0;
  int64_t cdims[PL_MAX_RANK], ndiv = 1;
  for (int i = 0; i < w.n; i++)
    cdims[i] = w.y[i], ndiv *= w.y[i];
  g_autoptr (PlTensor) counts = pl_tensor_new (x->dtype, w.n, cdims, &G->error);
  if (!counts)
    return false;
  for (int64_t o = 0; o < ndiv; o++)
    {
      int64_t rem = o, c = 1;
      for (int i = w.n - 1; i >= 0; i--)
        {
          int64_t oi = rem % w.y[i], ci = 0;
          rem /= w.y[i];
          for (int64_t k = 0; k < w.k[i]; k++)
            {
              int64_t pos = oi * w.s[i] - w.p[i] + k * w.d[i];
              bool inside = pos >= 0 && pos < w.x[i];
              ci += inside || (count_pad && pos >= -w.p[i] && pos < w.x[i] + w.p[w.n + i]);
            }
          c *= ci;
        }
      pl_tensor_set_f64 (counts, o, (double) c);
    }
  int64_t kdims[PL_MAX_RANK] = { xd[1], 1 };
  for (int i = 0; i < w.n; i++)
    kdims[2 + i] = w.k[i];
  g_autoptr (PlTensor) ones = pl_tensor_new (x->dtype, w.n + 2, kdims, &G->error);
  if (!ones)
    return false;
  for (int64_t i = 0; i < ones->numel; i++)
    pl_tensor_set_f64 (ones, i, 1.0);
  PlValue *scaled = op2 (G, "Div", dy[0], pl_grad_tensor (G, counts));
  pl_grad_give (G, x, conv_transpose (G, scaled, pl_grad_tensor (G, ones), &w, xd[1]));
  return !G->error;
}

/* MaxPool: recompute it with its Indices output (or use the forward one),
 * then ScatterElements with add into the flattened input. */
static bool
rule_max_pool (PlGrad *G, const PlNode *n, PlValue *const *dy, const bool *need)
{
  PlValue *x = n->inputs[0], *idx = NULL;
  int64_t xd[PL_MAX_RANK];
  if (!need[0] || !pl_grad_require_static (G, x, xd))
    return !G->error;
  if (n->n_outputs > 1 && n->outputs[1] && pl_node_attr_int (n, "storage_order", 0) == 0)
    idx = n->outputs[1];
  else
    {
      PlNode *mp = pl_grad_node (G, "MaxPool", 1, &x, 2);
      pl_grad_copy_attrs (mp, n, "storage_order");
      if (pl_grad_finish (G, mp))
        idx = mp->outputs[1];
    }
  int64_t minus1 = -1, numel = pl_shape_numel (&x->shape);
  PlValue *flat = pl_grad_ints (G, &minus1, 1);
  PlValue *zeros = op2 (G, "Expand", pl_grad_zero_of (G, x), pl_grad_ints (G, &numel, 1));
  PlValue *in[] = { zeros, op2 (G, "Reshape", idx, flat), op2 (G, "Reshape", dy[0], flat) };
  PlNode *s = pl_grad_node (G, "ScatterElements", 3, in, 1);
  if (s)
    pl_node_set_attr_int (s, "axis", 0), pl_node_set_attr_string (s, "reduction", "add");
  pl_grad_give (G, x, pl_grad_reshape_like (G, pl_grad_finish (G, s), x));
  return !G->error;
}

static bool
rule_global_average_pool (PlGrad *G, const PlNode *n, PlValue *const *dy, const bool *need)
{
  PlValue *x = n->inputs[0], *y = n->outputs[0];
  if (need[0])
    pl_grad_give (G, x, pl_grad_expand_like (G, op2 (G, "Mul", dy[0], pl_grad_count_ratio (G, y, x, x->dtype)), x));
  return !G->error;
}

/* --- MatMul and Gemm ------------------------------------------------------------------------------ */

static bool
rule_matmul (PlGrad *G, const PlNode *n, PlValue *const *dy, const bool *need)
{
  PlValue *a = n->inputs[0], *b = n->inputs[1], *d = dy[0];
  int ra = a->shape.rank, rb = b->shape.rank, rd = d->shape.rank;
  if (ra < 1 || rb < 1)
    {
      pl_grad_fail (G, PL_ERROR_UNSUPPORTED, "needs inputs of known rank");
      return false;
    }
  if (ra == 1 && rb == 1)
    {
      if (need[0])
        pl_grad_give (G, a, op2 (G, "Mul", d, b));
      if (need[1])
        pl_grad_give (G, b, op2 (G, "Mul", d, a));
    }
  else if (ra == 1)
    {
      /* a is [1, K]: dY gets its M = 1 back */
      PlValue *du = pl_grad_unsqueeze (G, d, (int64_t[]) { rd - 1 }, 1);
      if (need[0])
        {
          int64_t axes[PL_MAX_RANK];
          for (int i = 0; i < rd; i++)
            axes[i] = i;
          PlValue *da = op2 (G, "MatMul", du, pl_grad_swap_last (G, b));
          pl_grad_give (G, a, pl_grad_reduce_sum (G, da, axes, rd, false));
        }
      if (need[1])
        {
          PlValue *a_col = pl_grad_unsqueeze (G, a, (int64_t[]) { 1 }, 1);
          pl_grad_give (G, b, pl_grad_unbroadcast (G, op2 (G, "MatMul", a_col, du), b));
        }
    }
  else if (rb == 1)
    {
      /* b is [K, 1]: dY gets its N = 1 back */
      PlValue *du = pl_grad_unsqueeze (G, d, (int64_t[]) { rd }, 1);
      if (need[0])
        {
          PlValue *b_row = pl_grad_unsqueeze (G, b, (int64_t[]) { 0 }, 1);
          pl_grad_give (G, a, pl_grad_unbroadcast (G, op2 (G, "MatMul", du, b_row), a));
        }
      if (need[1])
        {
          int64_t axes[PL_MAX_RANK];
          int k = 0;
          for (int i = 0; i <= rd; i++)
            if (i != rd - 1)
              axes[k++] = i;
          pl_grad_give (G, b, pl_grad_reduce_sum (G, op2 (G, "MatMul", pl_grad_swap_last (G, a), du), axes, k, false));
        }
    }
  else
    {
      if (need[0])
        pl_grad_give (G, a, pl_grad_unbroadcast (G, op2 (G, "MatMul", d, pl_grad_swap_last (G, b)), a));
      if (need[1])
        pl_grad_give (G, b, pl_grad_unbroadcast (G, op2 (G, "MatMul", pl_grad_swap_last (G, a), d), b));
    }
  return !G->error;
}

static PlValue *
gemm (PlGrad *G, PlValue *a, PlValue *b, bool ta, bool tb, float alpha)
{
  PlNode *n = pl_grad_node (G, "Gemm", 2, (PlValue *[]) { a, b }, 1);
  if (n)
    {
      pl_node_set_attr_int (n, "transA", ta);
      pl_node_set_attr_int (n, "transB", tb);
      pl_node_set_attr_float (n, "alpha", alpha);
    }
  return pl_grad_finish (G, n);
}

/* Y = alpha A' B' + beta C with A' = transA ? A^T : A, likewise B'. */
static bool
rule_gemm (PlGrad *G, const PlNode *n, PlValue *const *dy, const bool *need)
{
  PlValue *a = n->inputs[0], *b = n->inputs[1], *d = dy[0];
  bool ta = pl_node_attr_int (n, "transA", 0) != 0, tb = pl_node_attr_int (n, "transB", 0) != 0;
  float alpha = pl_node_attr_float (n, "alpha", 1.0f), beta = pl_node_attr_float (n, "beta", 1.0f);
  if (need[0])
    pl_grad_give (G, a, ta ? gemm (G, b, d, tb, true, alpha) : gemm (G, d, b, false, !tb, alpha));
  if (need[1])
    pl_grad_give (G, b, tb ? gemm (G, d, a, true, ta, alpha) : gemm (G, a, d, !ta, false, alpha));
  if (n->n_inputs > 2 && n->inputs[2] && need[2])
    pl_grad_give (G, n->inputs[2], pl_grad_unbroadcast (G, pl_grad_mul_s (G, d, beta), n->inputs[2]));
  return !G->error;
}

/* --- losses ------------------------------------------------------------------------------------ */

/* SoftmaxCrossEntropyLoss / NegativeLogLikelihoodLoss over x [N, C, d..]
 * and targets t [N, d..]: per element, w_t (softmax(x) - onehot(t)) or
 * -w_t onehot(t), times the loss's gradient, divided by the sum of the
 * weights for "mean"; ignored targets get nothing. */
static bool
rule_loss (PlGrad *G, const PlNode *n, PlValue *const *dy, const bool *need)
{
  PlValue *x = n->inputs[0], *t = n->inputs[1], *w = n->n_inputs > 2 ? n->inputs[2] : NULL, *dx = NULL;
  PlDType dt = x->dtype;
  bool sce = n->op == PL_OP_SoftmaxCrossEntropyLoss;
  const char *reduction = pl_node_attr_string (n, "reduction", "mean");
  if (!need[0])
    return true;
  if (x->shape.rank < 2 || !pl_dim_is_static (x->shape.dims[1]))
    {
      pl_grad_fail (G, PL_ERROR_UNSUPPORTED, "needs an input [N, C, ...] with a static C");
      return false;
    }
  PlNode *sm = sce ? pl_grad_node (G, "Softmax", 1, &x, 1) : NULL;
  if (sm)
    pl_node_set_attr_int (sm, "axis", 1);
  PlValue *p = sce ? pl_grad_finish (G, sm) : NULL;
  if (dy[0])
    {
      PlValue *ti = pl_grad_cast_to (G, t, PL_DTYPE_I64), *ts = ti, *ignored = NULL;
      if (pl_node_attr (n, "ignore_index"))
        {
          double ignore = (double) pl_node_attr_int (n, "ignore_index", 0);
          ignored = op2 (G, "Equal", ti, pl_grad_scalar (G, PL_DTYPE_I64, ignore));
          ts = pl_grad_where (G, ignored, pl_grad_scalar (G, PL_DTYPE_I64, 0), ti);
        }
      int64_t depth = x->shape.dims[1].size;
      g_autoptr (PlTensor) offon = pl_tensor_new (dt, 1, (int64_t[]) { 2 }, NULL);
      pl_tensor_set_f64 (offon, 1, 1.0);
      PlValue *oh_in[] = { ts, pl_grad_ints (G, &depth, 1), pl_grad_tensor (G, offon) };
      PlNode *oh = pl_grad_node (G, "OneHot", 3, oh_in, 1);
      if (oh)
        pl_node_set_attr_int (oh, "axis", 1);
      PlValue *onehot = pl_grad_finish (G, oh);
      PlValue *wn = w ? op2 (G, "Gather", w, ts) : NULL;
      if (ignored)
        {
          PlValue *keep = pl_grad_cast_to (G, op1 (G, "Not", ignored), dt);
          wn = wn ? op2 (G, "Mul", wn, keep) : keep;
        }
      PlValue *coef = wn ? op2 (G, "Mul", dy[0], wn) : dy[0];
      if (strcmp (reduction, "mean") == 0)
        {
          int64_t axes[PL_MAX_RANK];
          for (int i = 0; i < t->shape.rank; i++)
            axes[i] = i;
          PlValue *denom = wn ? pl_grad_reduce_sum (G, wn, axes, t->shape.rank, false)
                              : pl_grad_count_ratio (G, t, n->outputs[0], dt);
          coef = op2 (G, "Div", coef, denom);
        }
      if (coef && coef->shape.rank > 0)
        coef = pl_grad_unsqueeze (G, coef, (int64_t[]) { 1 }, 1);
      dx = op2 (G, "Mul", sce ? op2 (G, "Sub", p, onehot) : op1 (G, "Neg", onehot), coef);
    }
  if (sce && n->n_outputs > 1 && dy[1])
    {
      /* through the log-probabilities output: dl - p * sum_c dl */
      int64_t c = 1;
      PlValue *extra = op2 (G, "Sub", dy[1], op2 (G, "Mul", p, pl_grad_reduce_sum (G, dy[1], &c, 1, true)));
      dx = dx ? op2 (G, "Add", dx, extra) : extra;
    }
  pl_grad_give (G, x, dx);
  return !G->error;
}

/* --- Einsum ------------------------------------------------------------------------------------------ */

/* One or two operands without diagonals or broadcasting: an operand's
 * gradient is the Einsum of dy with the other operand onto its labels;
 * labels only it had (summed over in the forward) are unsqueezed and
 * expanded, since each of their elements got the same gradient. */
static bool
rule_einsum (PlGrad *G, const PlNode *n, PlValue *const *dy, const bool *need)
{
  const int k = n->n_inputs;
  int ranks[2] = { 0 };
  int64_t dims[2][PL_MAX_RANK], label_dim[PL_EINSUM_LABELS];
  PlEinsumPlan plan;
  if (k < 1 || k > 2)
    {
      pl_grad_fail (G, PL_ERROR_UNSUPPORTED, "Einsum of %d operands has no gradient rule (one or two)", k);
      return false;
    }
  for (int i = 0; i < k; i++)
    if (!pl_grad_require_static (G, n->inputs[i], dims[i]))
      return false;
    else
      ranks[i] = n->inputs[i]->shape.rank;
  g_autoptr (GError) err = NULL;
  if (!pl_einsum_plan (pl_node_attr_string (n, "equation", ""), k, ranks, &plan, &err))
    {
      pl_grad_fail (G, PL_ERROR_INVALID, "%s", err->message);
      return false;
    }
  /* a letter per label, and every label one size */
  char letter[PL_EINSUM_LABELS];
  for (int l = 0; l < PL_EINSUM_LABELS; l++)
    letter[l] = (char) (l < 26 ? 'A' + l : l < 52 ? 'a' + l - 26 : 0), label_dim[l] = -1;
  for (int l = PL_EINSUM_LETTERS, free_letter = 0; l < PL_EINSUM_LABELS; l++)
    {
      /* the broadcast axes take letters no operand uses */
      for (;; free_letter++)
        {
          bool used = false;
          for (int i = 0; i < k; i++)
            for (int a = 0; a < ranks[i]; a++)
              used |= plan.ids[i][a] == free_letter;
          if (!used)
            break;
        }
      letter[l] = letter[free_letter++];
    }
  for (int i = 0; i < k; i++)
    for (int a = 0; a < ranks[i]; a++)
      {
        const int l = plan.ids[i][a];
        for (int b = 0; b < a; b++)
          if (plan.ids[i][b] == l)
            {
              pl_grad_fail (G, PL_ERROR_UNSUPPORTED, "an Einsum that reads a diagonal has no gradient rule");
              return false;
            }
        if (label_dim[l] >= 0 && label_dim[l] != dims[i][a])
          {
            pl_grad_fail (G, PL_ERROR_UNSUPPORTED, "an Einsum that broadcasts an axis has no gradient rule");
            return false;
          }
        label_dim[l] = dims[i][a];
      }
  g_autoptr (GString) out_labels = g_string_new (NULL);
  for (int a = 0; a < plan.out_rank; a++)
    g_string_append_c (out_labels, letter[plan.out_ids[a]]);
  for (int i = 0; i < k && !G->error; i++)
    {
      if (!need[i])
        continue;
      const int o = 1 - i;
      g_autoptr (GString) eq = g_string_new (out_labels->str);
      if (k == 2)
        {
          g_string_append_c (eq, ',');
          for (int a = 0; a < ranks[o]; a++)
            g_string_append_c (eq, letter[plan.ids[o][a]]);
        }
      g_string_append (eq, "->");
      int64_t missing[PL_MAX_RANK];
      int n_missing = 0;
      for (int a = 0; a < ranks[i]; a++)
        {
          const int l = plan.ids[i][a];
          bool seen = false;
          for (int b = 0; b < plan.out_rank; b++)
            seen |= plan.out_ids[b] == l;
          for (int b = 0; k == 2 && b < ranks[o]; b++)
            seen |= plan.ids[o][b] == l;
          if (seen)
            g_string_append_c (eq, letter[l]);
          else
            missing[n_missing++] = a;
        }
      PlNode *e = pl_grad_node (G, "Einsum", k, k == 2 ? (PlValue *[]) { dy[0], n->inputs[o] } : &dy[0], 1);
      if (e)
        pl_node_set_attr_string (e, "equation", eq->str);
      PlValue *d = pl_grad_unsqueeze (G, pl_grad_finish (G, e), missing, n_missing);
      pl_grad_give (G, n->inputs[i], n_missing ? pl_grad_expand_like (G, d, n->inputs[i]) : d);
    }
  return !G->error;
}

/* --- the table ------------------------------------------------------------------------------------- */

PlGradRule
pl_grad_rule_nn (const PlNode *n)
{
  switch (n->op)
    {
    case PL_OP_LayerNormalization:
      return rule_layer_norm;
    case PL_OP_BatchNormalization:
      return rule_batch_norm;
    case PL_OP_Conv:
      return rule_conv;
    case PL_OP_AveragePool:
      return rule_average_pool;
    case PL_OP_MaxPool:
      return rule_max_pool;
    case PL_OP_GlobalAveragePool:
      return rule_global_average_pool;
    case PL_OP_MatMul:
      return rule_matmul;
    case PL_OP_Gemm:
      return rule_gemm;
    case PL_OP_Einsum:
      return rule_einsum;
    case PL_OP_SoftmaxCrossEntropyLoss: case PL_OP_NegativeLogLikelihoodLoss:
      return rule_loss;
    default:
      return NULL;
    }
}

/* decompose.c — the "decompose" pass: expands composite ops into the
 * primitive ops exporters emit for them, so that later passes (fusion,
 * stitching) see the elementwise ops and reductions inside:
 *
 *   Softmax       ReduceMax, Sub, Exp, ReduceSum, Div      (LogSoftmax: Log, Sub)
 *   LayerNorm     ReduceMean, Sub, Mul(d, d), ReduceMean, Add eps, Sqrt, Div, Mul, Add
 *   Gelu          Div sqrt2, Erf, Add 1, Mul, Mul 0.5      (tanh form: Pow 3, ...)
 *   BatchNorm     inference only: Mul, Add of per-channel constants folded from
 *                 scale/B/mean/var when those are constants, else Sub, Div Sqrt, Mul,
 *                 Add of [C, 1, ..] vectors (Unsqueeze)
 *   InstanceNorm  the LayerNorm chain over the spatial axes, per-channel Mul, Add
 *   MeanVarianceNormalization  the same chain over its axes, the epsilon (1e-9) after the root
 *   HardSigmoid, HardSwish, Softplus, Mish, Elu, Selu, Celu      their formulas
 *   ReduceL1/L2/SumSquare/LogSum/LogSumExp                     Abs/Mul, ReduceSum, ...
 *   Einsum        (one or two operands) ReduceSum, Transpose, Reshape, MatMul, Reshape, Transpose
 *   LRN           Mul (square), Pad channels, Add of `size` shifted Slices, Mul, Add, Pow, Div
 *   NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss   (LogSoftmax,) GatherElements of the
 *                 targets' log-probabilities, Gather of their weights, Neg, the reduction
 *
 * Semantics follow ONNX as the reference interpreter implements it (opset
 * dependent: Softmax's 2-D coercion before 13, axes as inputs of ReduceSum
 * from 13 and of the other reductions from 18, of Squeeze/Unsqueeze from 13).
 * The decomposed node's output keeps its name, so the graph reads the same
 * (so does SoftmaxCrossEntropyLoss's log_prob, where something reads it);
 * new nodes are named "<node>/<step>". Constants are scalars of the data's
 * dtype (the losses' index constants: of the targets'). A node whose other
 * extra outputs are used (LayerNorm's Mean/InvStdDev, training BatchNorm) is
 * kept, and the report says why.
 *
 * Each node is expanded where it stands and the originals are removed in one
 * batch at the end, so the pass is linear in the graph size.
 */
#define G_LOG_DOMAIN "passlab"
#include "builtin-passes.h"
#include "einsum.h"
#include "rewrite.h"

#include <math.h>
#include <string.h>

/* Builds the replacement of one node; the first failure sticks in error and
 * makes every later call a no-op, so expansions read as straight-line code. */
typedef struct {
  PlGraph    *g;
  PlNode     *orig;
  PlDType     dtype;   /* of the data: scalars are made in it */
  int         opset;
  GPtrArray  *nodes;   /* made for orig; removed again when the expansion fails */
  GPtrArray  *consts;
  PlValue    *second;  /* what replaces orig's second output, where the expansion makes one */
  const char *why;     /* the expansion refused (no error): why */
  GError     *error;
} B;

/* Reduction axes; n == 0 reduces every axis (ONNX's default). */
typedef struct {
  int64_t v[PL_MAX_RANK];
  int     n;
} Axes;

static bool
b_ok (const B *b)
{
  return !b->error && !b->why;
}

static PlValue *
refuse (B *b, const char *why)
{
  if (b_ok (b))
    b->why = why;
  return NULL;
}

static char *
b_name (B *b, const char *suffix)
{
  g_autofree char *base = g_strdup_printf ("%s/%s", b->orig->name, suffix);
  return pl_graph_unique_name (b->g, base);
}

/* Adds a node without inferring it (attributes come next). */
static PlNode *
b_add (B *b, const char *op, const char *suffix, int n, PlValue *const *in)
{
  if (!b_ok (b))
    return NULL;
  g_autofree char *name = b_name (b, suffix);
  PlNode *node = pl_graph_add_node (b->g, op, NULL, name, n, in, 1, (const char *const[]) { name }, &b->error);
  if (node)
    g_ptr_array_add (b->nodes, node);
  return node;
}

static PlValue *
b_fin (B *b, PlNode *node)
{
  if (!b_ok (b) || !node || !pl_node_infer (node, &b->error))
    return NULL;
  return node->outputs[0];
}

static PlValue *
b_op (B *b, const char *op, const char *suffix, PlValue *x, PlValue *y)
{
  return b_fin (b, b_add (b, op, suffix, y ? 2 : 1, (PlValue *[]) { x, y }));
}

static PlValue *
b_const (B *b, const char *suffix, PlTensor *t)
{
  if (!b_ok (b))
    return NULL;
  g_autofree char *name = b_name (b, suffix);
  PlValue *v = pl_graph_add_constant (b->g, name, t, &b->error);
  if (v)
    g_ptr_array_add (b->consts, v);
  return v;
}

static PlValue *
b_scalar_of (B *b, const char *suffix, PlDType dtype, double v)
{
  g_autoptr (PlTensor) t = pl_tensor_new_scalar (dtype, v);
  return b_const (b, suffix, t);
}

static PlValue *
b_scalar (B *b, const char *suffix, double v)
{
  return b_scalar_of (b, suffix, b->dtype, v);
}

static PlValue *
b_ints (B *b, const char *suffix, const int64_t *v, int n)
{
  int64_t len = n;
  g_autoptr (PlTensor) t = pl_tensor_new (PL_DTYPE_I64, 1, &len, NULL);
  memcpy (t->data, v, sizeof (int64_t) * n);
  return b_const (b, suffix, t);
}

/* A reduction; axes as an input where the opset wants one. */
static PlValue *
b_reduce (B *b, const char *op, const char *suffix, PlValue *x, const Axes *ax, bool keepdims)
{
  bool as_input = strcmp (op, "ReduceSum") == 0 ? b->opset >= 13 : b->opset >= 18;
  g_autofree char *axes_name = g_strdup_printf ("%s_axes", suffix);
  PlValue *in[2] = { x, ax->n > 0 && as_input ? b_ints (b, axes_name, ax->v, ax->n) : NULL };
  PlNode *node = b_add (b, op, suffix, in[1] ? 2 : 1, in);
  if (node && ax->n > 0 && !as_input)
    pl_node_set_attr_ints (node, "axes", ax->v, ax->n);
  if (node)
    pl_node_set_attr_int (node, "keepdims", keepdims);
  return b_fin (b, node);
}

/* Squeeze or Unsqueeze; n == 0 (Squeeze only): every axis of size 1. */
static PlValue *
b_axes_op (B *b, const char *op, const char *suffix, PlValue *x, const int64_t *axes, int n)
{
  g_autofree char *axes_name = g_strdup_printf ("%s_axes", suffix);
  PlValue *in[2] = { x, n > 0 && b->opset >= 13 ? b_ints (b, axes_name, axes, n) : NULL };
  PlNode *node = b_add (b, op, suffix, in[1] ? 2 : 1, in);
  if (node && n > 0 && b->opset < 13)
    pl_node_set_attr_ints (node, "axes", axes, n);
  return b_fin (b, node);
}

/* --- shared checks ------------------------------------------------------------ */

/* The data input: present, floating point, of known rank when rank_needed. */
static PlValue *
data_input (B *b, bool rank_needed)
{
  PlValue *x = b->orig->n_inputs > 0 ? b->orig->inputs[0] : NULL;
  if (!x)
    return refuse (b, "no data input");
  if (!pl_dtype_is_float (x->dtype))
    return refuse (b, "the data is not floating point");
  if (rank_needed && x->shape.rank < 0)
    return refuse (b, "the rank is unknown");
  return x;
}

/* The axes of a Reduce* node: its constant axes input, else its attribute. */
static bool
reduce_axes (B *b, Axes *ax)
{
  const PlNode *n = b->orig;
  const int64_t *v = NULL;
  g_autofree int64_t *owned = NULL;
  int count = 0;
  if (n->n_inputs > 1 && n->inputs[1])
    {
      if (!pl_rw_const_ints_of (n->inputs[1], &owned, &count))
        return refuse (b, "the axes are not constant"), false;
      v = owned;
    }
  else
    pl_node_attr_ints (n, "axes", &v, &count);
  if (count == 0 && pl_node_attr_int (n, "noop_with_empty_axes", 0) != 0)
    return refuse (b, "empty axes with noop_with_empty_axes"), false;
  if (count > PL_MAX_RANK)
    return refuse (b, "too many axes"), false;
  ax->n = count;
  if (count > 0)   /* v is NULL when there are no axes; memcpy forbids that */
    memcpy (ax->v, v, sizeof (int64_t) * count);
  return true;
}

/* Axes first..rank-1, written from the end ([-1] for the last axis), as
 * exporters write them. */
static bool
trailing_axes (B *b, int64_t axis, int rank, Axes *ax)
{
  if (axis < -rank || axis >= rank)
    return refuse (b, "the axis is out of range"), false;
  if (axis < 0)
    axis += rank;
  ax->n = 0;
  for (int64_t a = axis; a < rank; a++)
    ax->v[ax->n++] = a - rank;
  return true;
}

/* A [C] parameter shaped [C, 1, ...] to broadcast against [N, C, spatial...]:
 * a reshaped copy of a constant, else an Unsqueeze. */
static PlValue *
channel_param (B *b, PlValue *p, int rank, const char *suffix)
{
  if (!b_ok (b) || rank <= 2)
    return p;
  PlTensor *c = pl_rw_constant (p);
  if (c)
    {
      g_autoptr (PlTensor) t = pl_tensor_copy (c);
      t->rank = rank - 1;
      t->dims[0] = c->numel;
      for (int d = 1; d < rank - 1; d++)
        t->dims[d] = 1;
      return b_const (b, suffix, t);
    }
  int64_t axes[PL_MAX_RANK];
  for (int d = 0; d < rank - 2; d++)
    axes[d] = d + 1;
  return b_axes_op (b, "Unsqueeze", suffix, p, axes, rank - 2);
}

/* Parameters of the normalizations: present, 1-D and of the data's dtype. */
static bool
check_params (B *b, const PlNode *n, int first, int last, bool optional_last)
{
  for (int i = first; i <= last; i++)
    {
      PlValue *p = i < n->n_inputs ? n->inputs[i] : NULL;
      if (!p && optional_last && i == last)
        continue;
      if (!p || p->dtype != n->inputs[0]->dtype)
        return refuse (b, "a parameter is missing or has another dtype"), false;
    }
  return true;
}

/* --- expansions ------------------------------------------------------------------ */

/* softmax (or log_softmax) of x over ax, shifted by the maximum so exp
 * cannot overflow. */
static PlValue *
softmax_chain (B *b, PlValue *x, const Axes *ax, bool log)
{
  PlValue *m = b_reduce (b, "ReduceMax", "max", x, ax, true);
  PlValue *d = b_op (b, "Sub", "sub", x, m);
  PlValue *e = b_op (b, "Exp", "exp", d, NULL);
  PlValue *s = b_reduce (b, "ReduceSum", "sum", e, ax, true);
  if (!log)
    return b_op (b, "Div", "div", e, s);
  PlValue *l = b_op (b, "Log", "log", s, NULL);
  return b_op (b, "Sub", "sub_log", d, l);
}

/* Softmax / LogSoftmax along axis (opset >= 13), or over the flattened
 * trailing axes from axis on (before 13). */
static PlValue *
expand_softmax (B *b, const PlNode *n)
{
  PlValue *x = data_input (b, true);
  if (!x)
    return NULL;
  int rank = x->shape.rank;
  Axes ax;
  if (b->opset >= 13)
    {
      int64_t axis = pl_node_attr_int (n, "axis", -1);
      if (axis < -rank || axis >= rank)
        return refuse (b, "the axis is out of range");
      ax = (Axes) { .v = { axis }, .n = 1 };
    }
  else if (!trailing_axes (b, pl_node_attr_int (n, "axis", 1), rank, &ax))
    return NULL;
  return softmax_chain (b, x, &ax, n->op == PL_OP_LogSoftmax);
}

/* (x - mean) / sqrt(var + eps) over axes, the part the normalizations share. */
/* (x - mean) / sqrt (var + eps) over ax; or, eps_after_root, / (sqrt (var) + eps). */
static PlValue *
normalize (B *b, PlValue *x, const Axes *ax, double eps, bool eps_after_root)
{
  PlValue *mean = b_reduce (b, "ReduceMean", "mean", x, ax, true);
  PlValue *d = b_op (b, "Sub", "sub", x, mean);
  PlValue *d2 = b_op (b, "Mul", "square", d, d);
  PlValue *var = b_reduce (b, "ReduceMean", "var", d2, ax, true);
  PlValue *sd;
  if (eps_after_root)
    {
      PlValue *root = b_op (b, "Sqrt", "sqrt", var, NULL);
      sd = b_op (b, "Add", "add_eps", root, b_scalar (b, "eps", eps));
    }
  else
    {
      PlValue *ve = b_op (b, "Add", "add_eps", var, b_scalar (b, "eps", eps));
      sd = b_op (b, "Sqrt", "sqrt", ve, NULL);
    }
  return b_op (b, "Div", "div", d, sd);
}

static PlValue *
expand_layer_norm (B *b, const PlNode *n)
{
  for (int i = 1; i < n->n_outputs; i++)
    if (n->outputs[i] && (n->outputs[i]->n_uses > 0 || pl_value_is_output (n->outputs[i])))
      return refuse (b, "Mean/InvStdDev are used");
  PlValue *x = data_input (b, true);
  Axes ax;
  if (!x || !check_params (b, n, 1, 2, true)
      || !trailing_axes (b, pl_node_attr_int (n, "axis", -1), x->shape.rank, &ax))
    return NULL;
  PlValue *y = normalize (b, x, &ax, pl_node_attr_float (n, "epsilon", 1e-5f), false);
  y = b_op (b, "Mul", "scale", y, n->inputs[1]);
  if (n->n_inputs > 2 && n->inputs[2])
    y = b_op (b, "Add", "bias", y, n->inputs[2]);
  return y;
}

static PlValue *
expand_instance_norm (B *b, const PlNode *n)
{
  PlValue *x = data_input (b, true);
  if (!x || !check_params (b, n, 1, 2, false))
    return NULL;
  int rank = x->shape.rank;
  if (rank < 3)
    return refuse (b, "the data has no spatial axes");
  Axes ax;
  if (!trailing_axes (b, 2, rank, &ax))
    return NULL;
  PlValue *y = normalize (b, x, &ax, pl_node_attr_float (n, "epsilon", 1e-5f), false);
  y = b_op (b, "Mul", "scale", y, channel_param (b, n->inputs[1], rank, "scale_c"));
  return b_op (b, "Add", "bias", y, channel_param (b, n->inputs[2], rank, "bias_c"));
}

/* MeanVarianceNormalization: (x - mean) / (std + 1e-9) over `axes` (default
 * [0, 2, 3]), the epsilon after the root as in ONNX's function body. */
static PlValue *
expand_mvn (B *b, const PlNode *n)
{
  static const int64_t default_axes[] = { 0, 2, 3 };
  PlValue *x = data_input (b, true);
  if (!x)
    return NULL;
  const int64_t *v = NULL;
  int count = 0;
  if (!pl_node_attr_ints (n, "axes", &v, &count))
    v = default_axes, count = G_N_ELEMENTS (default_axes);
  if (count < 1 || count > PL_MAX_RANK)
    return refuse (b, "no axes, or too many");
  Axes ax = { .n = count };
  memcpy (ax.v, v, sizeof (int64_t) * count);
  return normalize (b, x, &ax, 1e-9, true);
}

/* Inference BatchNormalization. With constant parameters the per-channel
 * factor scale / sqrt(var + eps) and offset B - mean * factor are folded into
 * two constants (what exporters do); otherwise the chain is spelled out. */
static PlValue *
expand_batch_norm (B *b, const PlNode *n)
{
  bool training = b->opset >= 14 ? pl_node_attr_int (n, "training_mode", 0) != 0
                                 : n->n_outputs > 1 && n->outputs[1];
  if (training)
    return refuse (b, "training mode");
  for (int i = 1; i < n->n_outputs; i++)
    if (n->outputs[i] && (n->outputs[i]->n_uses > 0 || pl_value_is_output (n->outputs[i])))
      return refuse (b, "the running statistics are used");
  PlValue *x = data_input (b, true);
  if (!x || !check_params (b, n, 1, 4, false))
    return NULL;
  int rank = x->shape.rank;
  if (rank < 2)
    return refuse (b, "the data has rank < 2");
  for (int i = 1; i <= 4; i++)
    if (n->inputs[i]->shape.rank != 1)
      return refuse (b, "the parameters are not per-channel vectors");
  double eps = pl_node_attr_float (n, "epsilon", 1e-5f);
  PlTensor *scale = pl_rw_constant (n->inputs[1]), *bias = pl_rw_constant (n->inputs[2]);
  PlTensor *mean = pl_rw_constant (n->inputs[3]), *var = pl_rw_constant (n->inputs[4]);
  if (scale && bias && mean && var && scale->numel == bias->numel && scale->numel == mean->numel
      && scale->numel == var->numel)
    {
      g_autoptr (PlTensor) f = pl_tensor_copy (scale);
      g_autoptr (PlTensor) o = pl_tensor_copy (bias);
      for (int64_t c = 0; c < f->numel; c++)
        {
          double k = pl_tensor_get_f64 (scale, c) / sqrt (pl_tensor_get_f64 (var, c) + eps);
          pl_tensor_set_f64 (f, c, k);
          pl_tensor_set_f64 (o, c, pl_tensor_get_f64 (bias, c) - pl_tensor_get_f64 (mean, c) * k);
        }
      PlValue *fv = b_const (b, "factor", f), *ov = b_const (b, "offset", o);
      PlValue *y = b_op (b, "Mul", "mul", x, channel_param (b, fv, rank, "factor_c"));
      return b_op (b, "Add", "add", y, channel_param (b, ov, rank, "offset_c"));
    }
  PlValue *ve = b_op (b, "Add", "add_eps", n->inputs[4], b_scalar (b, "eps", eps));
  PlValue *sd = b_op (b, "Sqrt", "sqrt", ve, NULL);
  PlValue *d = b_op (b, "Sub", "sub", x, channel_param (b, n->inputs[3], rank, "mean_c"));
  PlValue *y = b_op (b, "Div", "div", d, channel_param (b, sd, rank, "std_c"));
  y = b_op (b, "Mul", "mul", y, channel_param (b, n->inputs[1], rank, "scale_c"));
  return b_op (b, "Add", "add", y, channel_param (b, n->inputs[2], rank, "bias_c"));
}

static PlValue *
expand_gelu (B *b, const PlNode *n)
{
  PlValue *x = data_input (b, false);
  const char *approx = pl_node_attr_string (n, "approximate", "none");
  if (!x)
    return NULL;
  if (strcmp (approx, "none") == 0)
    {
      PlValue *t = b_op (b, "Div", "div", x, b_scalar (b, "sqrt2", G_SQRT2));
      PlValue *e = b_op (b, "Erf", "erf", t, NULL);
      PlValue *a = b_op (b, "Add", "add", e, b_scalar (b, "one", 1.0));
      PlValue *m = b_op (b, "Mul", "mul", x, a);
      return b_op (b, "Mul", "half", m, b_scalar (b, "half_c", 0.5));
    }
  if (strcmp (approx, "tanh") != 0)
    return refuse (b, "unknown approximation");
  PlValue *x3 = b_op (b, "Pow", "pow", x, b_scalar (b, "three", 3.0));
  PlValue *c = b_op (b, "Mul", "mul_c", x3, b_scalar (b, "c", 0.044715));
  PlValue *i = b_op (b, "Add", "add", x, c);
  PlValue *k = b_op (b, "Mul", "mul_k", i, b_scalar (b, "k", sqrt (2.0 / G_PI)));
  PlValue *t = b_op (b, "Tanh", "tanh", k, NULL);
  PlValue *a = b_op (b, "Add", "add_one", t, b_scalar (b, "one", 1.0));
  PlValue *h = b_op (b, "Mul", "half", x, b_scalar (b, "half_c", 0.5));
  return b_op (b, "Mul", "mul", h, a);
}

/* max(0, min(1, alpha * x + beta)) */
static PlValue *
hard_sigmoid (B *b, PlValue *x, double alpha, double beta)
{
  PlValue *m = b_op (b, "Mul", "mul_alpha", x, b_scalar (b, "alpha", alpha));
  PlValue *a = b_op (b, "Add", "add_beta", m, b_scalar (b, "beta", beta));
  PlValue *lo = b_op (b, "Min", "min", a, b_scalar (b, "one", 1.0));
  return b_op (b, "Max", "max", lo, b_scalar (b, "zero", 0.0));
}

static PlValue *
expand_hard_sigmoid (B *b, const PlNode *n)
{
  PlValue *x = data_input (b, false);
  return x ? hard_sigmoid (b, x, pl_node_attr_float (n, "alpha", 0.2f), pl_node_attr_float (n, "beta", 0.5f)) : NULL;
}

static PlValue *
expand_hard_swish (B *b, const PlNode *n G_GNUC_UNUSED)
{
  PlValue *x = data_input (b, false);
  if (!x)
    return NULL;
  return b_op (b, "Mul", "mul", x, hard_sigmoid (b, x, 1.0 / 6.0, 0.5));
}

/* log(exp(x) + 1) */
static PlValue *
softplus (B *b, PlValue *x)
{
  PlValue *e = b_op (b, "Exp", "exp", x, NULL);
  PlValue *a = b_op (b, "Add", "add", e, b_scalar (b, "one", 1.0));
  return b_op (b, "Log", "log", a, NULL);
}

static PlValue *
expand_softplus (B *b, const PlNode *n G_GNUC_UNUSED)
{
  PlValue *x = data_input (b, false);
  return x ? softplus (b, x) : NULL;
}

static PlValue *
expand_mish (B *b, const PlNode *n G_GNUC_UNUSED)
{
  PlValue *x = data_input (b, false);
  if (!x)
    return NULL;
  PlValue *t = b_op (b, "Tanh", "tanh", softplus (b, x), NULL);
  return b_op (b, "Mul", "mul", x, t);
}

/* k * (exp(x / alpha) - 1), the negative branch of Elu, Selu and Celu. */
static PlValue *
exp_branch (B *b, PlValue *x, double alpha, double k)
{
  PlValue *s = alpha == 1.0 ? x : b_op (b, "Div", "div_alpha", x, b_scalar (b, "alpha", alpha));
  PlValue *e = b_op (b, "Exp", "exp", s, NULL);
  PlValue *em1 = b_op (b, "Sub", "sub_one", e, b_scalar (b, "one", 1.0));
  return k == 1.0 ? em1 : b_op (b, "Mul", "mul_k", em1, b_scalar (b, "k", k));
}

/* x < 0 ? alpha * (exp(x) - 1) : x */
static PlValue *
expand_elu (B *b, const PlNode *n)
{
  PlValue *x = data_input (b, false);
  if (!x)
    return NULL;
  PlValue *neg = exp_branch (b, x, 1.0, pl_node_attr_float (n, "alpha", 1.0f));
  PlValue *c = b_op (b, "Less", "less", x, b_scalar (b, "zero", 0.0));
  return b_fin (b, b_add (b, "Where", "where", 3, (PlValue *[]) { c, neg, x }));
}

/* x > 0 ? gamma * x : gamma * alpha * (exp(x) - 1) */
static PlValue *
expand_selu (B *b, const PlNode *n)
{
  PlValue *x = data_input (b, false);
  if (!x)
    return NULL;
  double alpha = pl_node_attr_float (n, "alpha", 1.67326319217681884765625f);
  double gamma = pl_node_attr_float (n, "gamma", 1.05070102214813232421875f);
  PlValue *pos = b_op (b, "Mul", "mul_gamma", x, b_scalar (b, "gamma", gamma));
  PlValue *neg = exp_branch (b, x, 1.0, alpha * gamma);
  PlValue *c = b_op (b, "Greater", "greater", x, b_scalar (b, "zero", 0.0));
  return b_fin (b, b_add (b, "Where", "where", 3, (PlValue *[]) { c, pos, neg }));
}

/* max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) */
static PlValue *
expand_celu (B *b, const PlNode *n)
{
  PlValue *x = data_input (b, false);
  if (!x)
    return NULL;
  double alpha = pl_node_attr_float (n, "alpha", 1.0f);
  if (alpha == 0)
    return refuse (b, "alpha is 0");
  PlValue *zero = b_scalar (b, "zero", 0.0);
  PlValue *neg = b_op (b, "Min", "min", exp_branch (b, x, alpha, alpha), zero);
  PlValue *pos = b_op (b, "Max", "max", x, zero);
  return b_op (b, "Add", "add", pos, neg);
}

static PlValue *
expand_reduce (B *b, const PlNode *n)
{
  PlValue *x = data_input (b, false);
  Axes ax;
  if (!x || !reduce_axes (b, &ax))
    return NULL;
  bool keep = pl_node_attr_int (n, "keepdims", 1) != 0;
  switch (n->op)
    {
    case PL_OP_ReduceL1:
      return b_reduce (b, "ReduceSum", "sum", b_op (b, "Abs", "abs", x, NULL), &ax, keep);
    case PL_OP_ReduceL2:
      {
        PlValue *s = b_reduce (b, "ReduceSum", "sum", b_op (b, "Mul", "square", x, x), &ax, keep);
        return b_op (b, "Sqrt", "sqrt", s, NULL);
      }
    case PL_OP_ReduceSumSquare:
      return b_reduce (b, "ReduceSum", "sum", b_op (b, "Mul", "square", x, x), &ax, keep);
    case PL_OP_ReduceLogSum:
      return b_op (b, "Log", "log", b_reduce (b, "ReduceSum", "sum", x, &ax, keep), NULL);
    default: /* ReduceLogSumExp, shifted by the maximum so exp cannot overflow */
      {
        PlValue *m = b_reduce (b, "ReduceMax", "max", x, &ax, true);
        PlValue *e = b_op (b, "Exp", "exp", b_op (b, "Sub", "sub", x, m), NULL);
        PlValue *l = b_op (b, "Log", "log", b_reduce (b, "ReduceSum", "sum", e, &ax, keep), NULL);
        if (!keep)
          m = b_axes_op (b, "Squeeze", "squeeze", m, ax.v, ax.n);
        return b_op (b, "Add", "add", l, m);
      }
    }
}

/* LRN: y = x / (bias + alpha / size * s)^beta, s the sum of x^2 over the
 * channel window [c - floor((size-1)/2), c + ceil((size-1)/2)]: x^2 padded
 * with zeros on the channel axis, and the sum of `size` Slices of it, each
 * shifted by one channel (slice k ends k - (size-1) from the padded end, so
 * the channel count may be symbolic). Loop fusion makes all of it one
 * kernel. */
static PlValue *
expand_lrn (B *b, const PlNode *n)
{
  PlValue *x = data_input (b, true);
  if (!x)
    return NULL;
  int rank = x->shape.rank;
  int64_t size = pl_node_attr_int (n, "size", 0);
  if (rank < 3 || size < 1 || size > 32)
    return refuse (b, "not [N, C, spatial...], or a window wider than 32");
  double alpha = pl_node_attr_float (n, "alpha", 1e-4f), beta = pl_node_attr_float (n, "beta", 0.75f);
  double bias = pl_node_attr_float (n, "bias", 1.0f);
  PlValue *sq = b_op (b, "Mul", "square", x, x), *sum = sq;
  if (size > 1)
    {
      int64_t pads[2 * PL_MAX_RANK] = { 0 };
      pads[1] = (size - 1) / 2;
      pads[rank + 1] = size / 2;
      PlNode *pad = b_add (b, "Pad", "pad", b->opset >= 11 ? 2 : 1,
                           (PlValue *[]) { sq, b->opset >= 11 ? b_ints (b, "pads", pads, 2 * rank) : NULL });
      if (pad && b->opset < 11)
        pl_node_set_attr_ints (pad, "pads", pads, 2 * rank);
      PlValue *padded = b_fin (b, pad);
      for (int64_t k = 0; k < size; k++)
        {
          int64_t start = k, end = k < size - 1 ? k - (size - 1) : INT64_MAX, axis = 1;
          g_autofree char *name = g_strdup_printf ("window%" G_GINT64_FORMAT, k);
          PlNode *slice;
          if (b->opset >= 10)
            slice = b_add (b, "Slice", name, 4,
                           (PlValue *[]) { padded, b_ints (b, "starts", &start, 1), b_ints (b, "ends", &end, 1),
                                           b_ints (b, "axes", &axis, 1) });
          else if ((slice = b_add (b, "Slice", name, 1, (PlValue *[]) { padded })))
            {
              pl_node_set_attr_ints (slice, "starts", &start, 1);
              pl_node_set_attr_ints (slice, "ends", &end, 1);
              pl_node_set_attr_ints (slice, "axes", &axis, 1);
            }
          PlValue *part = b_fin (b, slice);
          sum = k == 0 ? part : b_op (b, "Add", "window_sum", sum, part);
        }
    }
  PlValue *scaled = b_op (b, "Mul", "scale", sum, b_scalar (b, "alpha_over_size", alpha / (double) size));
  PlValue *base = b_op (b, "Add", "bias", scaled, b_scalar (b, "bias_c", bias));
  PlValue *den = b_op (b, "Pow", "pow", base, b_scalar (b, "beta", beta));
  return b_op (b, "Div", "div", x, den);
}

/* NegativeLogLikelihoodLoss over log-probabilities x [N, C, d..], and
 * SoftmaxCrossEntropyLoss over scores (log_softmax over C first, which is
 * also its second output), as ONNX's function bodies spell them:
 *
 *   idx  = Where (t == ignore_index, 0, Where (t < 0, C, t))
 *   p    = Squeeze (GatherElements (logp, Unsqueeze (idx, 1), axis 1), 1)
 *   w_t  = Where (t == ignore_index, 0, Gather (weight, idx))   (1 without a weight)
 *   loss = -p * w_t;  "sum": ReduceSum;  "mean": ReduceSum / ReduceSum (w_t)
 *
 * A negative target is sent to C so that the gather refuses it, as the op
 * does (a gather would otherwise read it from the end); one >= C fails the
 * same way. */
static PlValue *
expand_loss (B *b, const PlNode *n)
{
  PlValue *x = data_input (b, true);
  if (!x)
    return NULL;
  PlValue *t = n->inputs[1], *w = n->n_inputs > 2 ? n->inputs[2] : NULL;
  if (!t || x->shape.rank < 2 || !pl_dim_is_static (x->shape.dims[1]))
    return refuse (b, "the input is not [N, C, ...] with a static C");
  if (w && w->dtype != x->dtype)
    return refuse (b, "the weight has another dtype");
  const char *reduction = pl_node_attr_string (n, "reduction", "mean");
  if (strcmp (reduction, "none") != 0 && strcmp (reduction, "sum") != 0 && strcmp (reduction, "mean") != 0)
    return refuse (b, "an unknown reduction");

  PlValue *logp = x;
  if (n->op == PL_OP_SoftmaxCrossEntropyLoss)
    {
      Axes classes = { .v = { 1 }, .n = 1 };
      logp = b->second = softmax_chain (b, x, &classes, true);
    }
  PlValue *zero_t = b_scalar_of (b, "zero_t", t->dtype, 0);
  PlValue *neg = b_op (b, "Less", "negative", t, zero_t);
  PlValue *c = b_scalar_of (b, "classes", t->dtype, (double) x->shape.dims[1].size);
  PlValue *idx = b_fin (b, b_add (b, "Where", "in_range", 3, (PlValue *[]) { neg, c, t }));
  PlValue *ignored = NULL;
  if (pl_node_attr (n, "ignore_index"))
    {
      PlValue *ii = b_scalar_of (b, "ignore_index", t->dtype, (double) pl_node_attr_int (n, "ignore_index", 0));
      ignored = b_op (b, "Equal", "ignored", t, ii);
      idx = b_fin (b, b_add (b, "Where", "index", 3, (PlValue *[]) { ignored, zero_t, idx }));
    }
  static const int64_t class_axis[] = { 1 };
  PlValue *idx1 = b_axes_op (b, "Unsqueeze", "index_c", idx, class_axis, 1);
  PlNode *gather = b_add (b, "GatherElements", "pick", 2, (PlValue *[]) { logp, idx1 });
  if (gather)
    pl_node_set_attr_int (gather, "axis", 1);
  PlValue *p = b_axes_op (b, "Squeeze", "picked", b_fin (b, gather), class_axis, 1);

  PlValue *wt = w ? b_op (b, "Gather", "weight", w, idx) : NULL;   /* NULL: every weight 1 */
  if (ignored)
    wt = b_fin (b, b_add (b, "Where", "weight_used", 3,
                          (PlValue *[]) { ignored, b_scalar (b, "zero", 0), wt ? wt : b_scalar (b, "one", 1) }));
  PlValue *loss = b_op (b, "Neg", "neg", wt ? b_op (b, "Mul", "weighted", p, wt) : p, NULL);
  Axes all = { .n = 0 };
  if (strcmp (reduction, "none") == 0)
    return loss;
  if (strcmp (reduction, "sum") == 0)
    return b_reduce (b, "ReduceSum", "sum_loss", loss, &all, false);
  if (!wt)
    return b_reduce (b, "ReduceMean", "mean_loss", loss, &all, false);
  PlValue *total = b_reduce (b, "ReduceSum", "sum_loss", loss, &all, false);
  return b_op (b, "Div", "mean_loss", total, b_reduce (b, "ReduceSum", "sum_weight", wt, &all, false));
}

/* --- Einsum ---------------------------------------------------------------------------- */

/* x laid out in `order` (labels), as a Transpose unless it already is. */
static PlValue *
b_transpose_labels (B *b, const char *suffix, PlValue *x, const gint8 *have, const gint8 *want, int rank)
{
  int64_t perm[PL_MAX_RANK];
  bool identity = true;
  for (int j = 0; j < rank; j++)
    {
      int k = 0;
      while (have[k] != want[j])
        k++;
      perm[j] = k;
      identity = identity && k == j;
    }
  if (identity)
    return x;
  PlNode *t = b_add (b, "Transpose", suffix, 1, &x);
  if (t)
    pl_node_set_attr_ints (t, "perm", perm, rank);
  return b_fin (b, t);
}

/* x reshaped to dims[rank], unless it has them already. */
static PlValue *
b_reshape (B *b, const char *suffix, PlValue *x, const int64_t *dims, int rank)
{
  if (!b_ok (b))
    return NULL;
  if (x->shape.rank == rank)
    {
      int64_t have[PL_MAX_RANK];
      if (pl_shape_get_dims (&x->shape, have) && (rank == 0 || memcmp (have, dims, sizeof (int64_t) * rank) == 0))
        return x;
    }
  g_autofree char *shape_name = g_strdup_printf ("%s_shape", suffix);
  return b_op (b, "Reshape", suffix, x, b_ints (b, shape_name, dims, rank));
}

/* A label list and the product of its sizes. */
typedef struct {
  gint8   id[PL_MAX_RANK];
  int     n;
  int64_t size;
} Labels;

static void
labels_add (Labels *l, int id, const int64_t *size)
{
  l->id[l->n++] = (gint8) id;
  l->size *= size[id];
}

/* Einsum of one or two operands of static shapes: each operand's labels
 * that neither the output nor the other operand has are summed away
 * (ReduceSum); one operand is then transposed into the output's order;
 * two are laid out as [batch, free, contracted] and [batch, contracted,
 * free] (Transpose), flattened to three dims (Reshape), multiplied
 * (MatMul: a GEMM), unflattened and transposed into the output's order.
 * Refused: more operands, a repeated subscript in one operand (a
 * diagonal), a label of size 1 broadcast against a larger one. */
static PlValue *
expand_einsum (B *b, const PlNode *n)
{
  const char *eq = pl_node_attr_string (n, "equation", "");
  int n_in = n->n_inputs;
  if (n_in < 1 || n_in > 2)
    return refuse (b, "not one or two operands");
  PlValue *x[2] = { NULL, NULL };
  int ranks[2];
  int64_t dims[2][PL_MAX_RANK], size[PL_EINSUM_LABELS];
  for (int i = 0; i < n_in; i++)
    {
      x[i] = n->inputs[i];
      if (!x[i] || !pl_dtype_is_float (x[i]->dtype) || x[i]->dtype != n->inputs[0]->dtype
          || !pl_shape_get_dims (&x[i]->shape, dims[i]))
        return refuse (b, "operands not of one float type and static shapes");
      ranks[i] = x[i]->shape.rank;
    }
  PlEinsumPlan plan;
  if (!pl_einsum_plan (eq, n_in, ranks, &plan, NULL))
    return refuse (b, "the equation does not parse");
  int where[PL_EINSUM_LABELS] = { 0 };   /* bit i: operand i has the label; bit 2: the output */
  for (int i = 0; i < n_in; i++)
    for (int j = 0; j < ranks[i]; j++)
      {
        int id = plan.ids[i][j];
        if (where[id] & (1 << i))
          return refuse (b, "a subscript repeats in an operand (a diagonal)");
        if (where[id] && size[id] != dims[i][j])
          return refuse (b, "a label of size 1 broadcasts");
        where[id] |= 1 << i;
        size[id] = dims[i][j];
      }
  for (int j = 0; j < plan.out_rank; j++)
    where[plan.out_ids[j]] |= 4;

  /* sum away what only one operand has and the output does not */
  gint8 ids[2][PL_MAX_RANK];
  int rank[2];
  for (int i = 0; i < n_in; i++)
    {
      Axes ax = { .n = 0 };
      rank[i] = 0;
      for (int j = 0; j < ranks[i]; j++)
        {
          int id = plan.ids[i][j];
          if (where[id] == (1 << i))
            ax.v[ax.n++] = j;
          else
            ids[i][rank[i]++] = (gint8) id;
        }
      if (ax.n > 0)
        x[i] = b_reduce (b, "ReduceSum", i == 0 ? "sum_a" : "sum_b", x[i], &ax, false);
    }
  if (n_in == 1)
    {
      PlValue *y = b_transpose_labels (b, "transpose", x[0], ids[0], plan.out_ids, plan.out_rank);
      /* the output takes the Einsum's name: never the operand itself */
      return y == n->inputs[0] ? b_op (b, "Identity", "identity", y, NULL) : y;
    }

  /* batch labels in the output's order; the others in their operand's, so
   * an operand already laid out needs no Transpose */
  Labels batch = { .size = 1 }, free_a = { .size = 1 }, free_b = { .size = 1 }, contracted = { .size = 1 };
  for (int j = 0; j < plan.out_rank; j++)
    if (where[plan.out_ids[j]] == 7)
      labels_add (&batch, plan.out_ids[j], size);
  for (int j = 0; j < rank[0]; j++)
    if (where[ids[0][j]] == 5 || where[ids[0][j]] == 3)
      labels_add (where[ids[0][j]] == 5 ? &free_a : &contracted, ids[0][j], size);
  for (int j = 0; j < rank[1]; j++)
    if (where[ids[1][j]] == 6)
      labels_add (&free_b, ids[1][j], size);
  gint8 order_a[PL_MAX_RANK], order_b[PL_MAX_RANK], order_c[PL_MAX_RANK];
  int na = 0, nb = 0, nc = 0;
  for (int j = 0; j < batch.n; j++)
    order_a[na++] = order_b[nb++] = order_c[nc++] = batch.id[j];
  for (int j = 0; j < free_a.n; j++)
    order_a[na++] = order_c[nc++] = free_a.id[j];
  for (int j = 0; j < contracted.n; j++)
    order_a[na++] = order_b[nb++] = contracted.id[j];
  for (int j = 0; j < free_b.n; j++)
    order_b[nb++] = order_c[nc++] = free_b.id[j];
  bool batched = batch.n > 0;
  int64_t shape_a[3] = { batch.size, free_a.size, contracted.size }, shape_b[3] = { batch.size, contracted.size, free_b.size };
  PlValue *a = b_transpose_labels (b, "transpose_a", x[0], ids[0], order_a, na);
  PlValue *m = b_transpose_labels (b, "transpose_b", x[1], ids[1], order_b, nb);
  a = b_reshape (b, "flat_a", a, shape_a + !batched, 2 + batched);
  m = b_reshape (b, "flat_b", m, shape_b + !batched, 2 + batched);
  PlValue *c = b_op (b, "MatMul", "matmul", a, m);
  int64_t unflat[PL_MAX_RANK];
  for (int j = 0; j < nc; j++)
    unflat[j] = size[order_c[j]];
  c = b_reshape (b, "unflat", c, unflat, nc);
  return b_transpose_labels (b, "transpose", c, order_c, plan.out_ids, plan.out_rank);
}

typedef PlValue *(*ExpandFunc) (B *b, const PlNode *n);

static const struct {
  PlOp       op;
  ExpandFunc expand;
} expansions[] = {
  { PL_OP_Softmax, expand_softmax },
  { PL_OP_LogSoftmax, expand_softmax },
  { PL_OP_LayerNormalization, expand_layer_norm },
  { PL_OP_Gelu, expand_gelu },
  { PL_OP_BatchNormalization, expand_batch_norm },
  { PL_OP_InstanceNormalization, expand_instance_norm },
  { PL_OP_MeanVarianceNormalization, expand_mvn },
  { PL_OP_HardSigmoid, expand_hard_sigmoid },
  { PL_OP_HardSwish, expand_hard_swish },
  { PL_OP_Softplus, expand_softplus },
  { PL_OP_Mish, expand_mish },
  { PL_OP_Elu, expand_elu },
  { PL_OP_Selu, expand_selu },
  { PL_OP_Celu, expand_celu },
  { PL_OP_ReduceL1, expand_reduce },
  { PL_OP_ReduceL2, expand_reduce },
  { PL_OP_ReduceSumSquare, expand_reduce },
  { PL_OP_ReduceLogSum, expand_reduce },
  { PL_OP_ReduceLogSumExp, expand_reduce },
  { PL_OP_LRN, expand_lrn },
  { PL_OP_Einsum, expand_einsum },
  { PL_OP_NegativeLogLikelihoodLoss, expand_loss },
  { PL_OP_SoftmaxCrossEntropyLoss, expand_loss },
};

/* --- the pass ------------------------------------------------------------------ */

typedef struct {
  int64_t     expanded, nodes_added, kept;
  const char *why;   /* why the last kept one was kept */
} OpStats;

/* The ops parameter: "all" or a comma list of supported op names. */
static bool
parse_ops (const char *spec, ExpandFunc *table, GError **error)
{
  g_auto (GStrv) names = g_strsplit (spec ? spec : "all", ",", -1);
  for (int i = 0; names[i]; i++)
    {
      const char *name = g_strstrip (names[i]);
      bool all = strcmp (name, "all") == 0, found = false;
      if (!*name)
        continue;
      for (size_t k = 0; k < G_N_ELEMENTS (expansions); k++)
        if (all || strcmp (name, pl_op_name (expansions[k].op)) == 0)
          table[expansions[k].op] = expansions[k].expand, found = true;
      if (!found)
        {
          g_autoptr (GString) known = g_string_new ("all");
          for (size_t k = 0; k < G_N_ELEMENTS (expansions); k++)
            g_string_append_printf (known, ", %s", pl_op_name (expansions[k].op));
          g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "decompose.ops: cannot decompose '%s' (known: %s)", name,
                       known->str);
          return false;
        }
    }
  return true;
}

/* Whether node takes part in a control edge (it then stays: removing it
 * would drop the ordering). */
static GHashTable *
control_nodes (const PlGraph *g)
{
  GHashTable *set = g_hash_table_new (NULL, NULL);
  for (guint i = 0; g->n_control_edges > 0 && i < g->nodes->len; i++)
    {
      PlNode *n = g->nodes->pdata[i];
      for (int c = 0; c < n->n_controls; c++)
        {
          g_hash_table_add (set, n);
          g_hash_table_add (set, n->controls[c].node);
        }
    }
  return set;
}

/* Expands one node. Returns the value replacing its first output, or NULL
 * (the graph unchanged) with b->why or b->error saying why. */
/* Whether y, replacing old, types as old did (so old's readers stay valid);
 * b->why says why not. A stored type that says more than inference is kept. */
static bool
types_as (B *b, PlValue *y, const PlValue *old)
{
  if (y->dtype != old->dtype || y->shape.rank != old->shape.rank)
    return refuse (b, "the expansion infers another type"), false;
  for (int d = 0; d < old->shape.rank; d++)
    if (!(y->shape.dims[d].size < 0 && !y->shape.dims[d].sym)
        && (y->shape.dims[d].size != old->shape.dims[d].size || y->shape.dims[d].sym != old->shape.dims[d].sym))
      return refuse (b, "the expansion infers another shape"), false;
  y->shape = old->shape;
  return true;
}

/* The original's second output, where something reads it. */
static PlValue *
used_second (const PlNode *n)
{
  PlValue *v = n->n_outputs > 1 ? n->outputs[1] : NULL;
  return v && (v->n_uses > 0 || pl_value_is_output (v)) ? v : NULL;
}

static PlValue *
expand_node (B *b, ExpandFunc expand)
{
  PlValue *y = expand (b, b->orig);
  PlValue *second = used_second (b->orig);
  if (y && !b_ok (b))
    y = NULL;
  if (y && second && !b->second)
    y = NULL, refuse (b, "its second output is used");
  if (y && types_as (b, y, b->orig->outputs[0]) && (!second || types_as (b, b->second, second)))
    return y;
  pl_graph_remove_nodes (b->g, (PlNode *const *) b->nodes->pdata, (int) b->nodes->len);
  for (guint i = 0; i < b->consts->len; i++)
    pl_graph_remove_value (b->g, b->consts->pdata[i]);
  return NULL;
}

static bool
run (PlGraph *g, const PlPassArgs *args, PlPassReport *report, gpointer user_data G_GNUC_UNUSED, GError **error)
{
  ExpandFunc table[PL_OP_COUNT] = { NULL };
  if (!parse_ops (pl_pass_args_string (args, "ops"), table, error))
    return false;
  g_autoptr (GHashTable) pinned = control_nodes (g);
  g_autofree OpStats *stats = g_new0 (OpStats, PL_OP_COUNT);
  g_autoptr (GPtrArray) doomed = g_ptr_array_new ();
  g_autoptr (GPtrArray) renamed = g_ptr_array_new ();   /* value, its name to take (pairs) */
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GHashTable) params = g_hash_table_new (NULL, NULL);  /* constants read by expanded nodes */
  int opset = g->opset > 0 ? g->opset : 17;

  guint n_nodes = g->nodes->len;  /* the expansions are appended after these */
  for (guint i = 0; i < n_nodes; i++)
    {
      PlNode *node = g->nodes->pdata[i];
      ExpandFunc expand = table[node->op];
      if (!expand || node->n_outputs < 1 || !node->outputs[0] || g_hash_table_contains (pinned, node))
        continue;
      B b = { .g = g, .orig = node, .opset = opset, .nodes = g_ptr_array_new (), .consts = g_ptr_array_new () };
      b.dtype = node->n_inputs > 0 && node->inputs[0] ? node->inputs[0]->dtype : PL_DTYPE_F32;
      PlValue *y = expand_node (&b, expand);
      OpStats *st = &stats[node->op];
      if (y)
        {
          PlValue *old = node->outputs[0];
          for (int k = 0; k < node->n_inputs; k++)
            if (node->inputs[k] && node->inputs[k]->constant)
              g_hash_table_add (params, node->inputs[k]);
          g_ptr_array_add (renamed, y);
          g_ptr_array_add (names, g_strdup (old->name));
          pl_value_replace_uses (old, y);
          PlValue *second = used_second (node);
          if (second)
            {
              g_ptr_array_add (renamed, b.second);
              g_ptr_array_add (names, g_strdup (second->name));
              pl_value_replace_uses (second, b.second);
            }
          g_ptr_array_add (doomed, node);
          st->expanded++;
          st->nodes_added += b.nodes->len;
        }
      else
        {
          st->kept++;
          st->why = b.why ? b.why : "its expansion does not infer";
          g_clear_error (&b.error);
        }
      g_ptr_array_unref (b.nodes);
      g_ptr_array_unref (b.consts);
    }
  pl_graph_remove_nodes (g, (PlNode *const *) doomed->pdata, (int) doomed->len);
  for (guint i = 0; i < renamed->len; i++)
    pl_value_rename (renamed->pdata[i], names->pdata[i], NULL);
  /* Constant parameters folded into new constants (BatchNormalization) are
   * read by nobody now. They are left for dead-code elimination (simplify):
   * removing values one by one costs a scan of the graph's values each. */
  int64_t n_unused = 0;
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init (&it, params);
  while (g_hash_table_iter_next (&it, &key, NULL))
    n_unused += ((PlValue *) key)->n_uses == 0 && !pl_value_is_output (key);

  for (size_t k = 0; k < G_N_ELEMENTS (expansions); k++)
    {
      PlOp op = expansions[k].op;
      OpStats *st = &stats[op];
      if (st->expanded)
        {
          g_autofree char *counter = g_strdup_printf ("%s expanded", pl_op_name (op));
          pl_pass_report_count (report, counter, st->expanded);
          pl_pass_report_count (report, "nodes added", st->nodes_added);
          pl_pass_report_printf (report, "expanded %" G_GINT64_FORMAT " %s into %" G_GINT64_FORMAT " nodes",
                                 st->expanded, pl_op_name (op), st->nodes_added);
        }
      if (st->kept)
        {
          g_autofree char *counter = g_strdup_printf ("%s kept", pl_op_name (op));
          pl_pass_report_count (report, counter, st->kept);
          pl_pass_report_printf (report, "kept %" G_GINT64_FORMAT " %s (%s)", st->kept, pl_op_name (op), st->why);
        }
    }
  if (n_unused)
    pl_pass_report_printf (report, "left %" G_GINT64_FORMAT " constant%s that no node reads (simplify removes them)",
                           n_unused, n_unused == 1 ? "" : "s");
  report->changed = doomed->len > 0;
  if (!report->changed && report->text->len == 0)
    pl_pass_report_printf (report, "nothing to decompose");
  return true;
}

static const PlPassParam params[] = {
  { "ops", PL_PARAM_STRING, "all", "ops to expand: all, or a comma list (Softmax,LayerNormalization,...)" },
};

PlPass *
pl_pass_decompose_new (void)
{
  return pl_pass_new ("decompose", "expands composite ops (Softmax, LayerNorm, Gelu, ...) into primitive ops",
                      params, G_N_ELEMENTS (params), run, NULL, NULL);
}

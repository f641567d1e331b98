/* ops-training.c — the optimizers of the ONNX domain
 * ai.onnx.preview.training (version 1): Adagrad, Adam and Momentum, their
 * shape inference and reference evaluation. No backend generates them:
 * they are COMPUTE ops the backends run through the reference fallback.
 *
 * Each takes the learning rate R (a float scalar), the update count T (an
 * int64 scalar), then its per-tensor inputs in groups: all the tensors X
 * to optimize, then all their gradients G, then (as the op needs) all
 * their momenta V and accumulated squared gradients H. It returns the
 * updated tensors in groups the same way: Adagrad X_new and H_new,
 * Momentum X_new and V_new, Adam X_new, V_new and H_new. Every tensor of
 * a group has the shape of its X (the spec allows broadcasting but its
 * own inference and the ONNX reference give every output its input's
 * shape, so we ask for equal shapes).
 *
 * The update rules are the spec's pseudo code, as in onnx/backend/test/
 * case/node/{adagrad,adam,momentum}.py (the ONNX reference implementation
 * of onnx/reference/ops/aionnx_preview_training/ is the same code), in
 * double, stored in X's dtype.
 */
#define G_LOG_DOMAIN "passlab"

#include <math.h>
#include <string.h>

#include "ops-nn-private.h"
#include "ops-shape-private.h"

#define TRAINING_DOMAIN "ai.onnx.preview.training"

static const PlDType real_types[] = { PL_DTYPE_F32, PL_DTYPE_F64, PL_DTYPE_UNDEFINED };
static const PlDType i64_only[] = { PL_DTYPE_I64, PL_DTYPE_UNDEFINED };

/* The attributes of all three (those an op lacks stay unused). */
typedef struct {
  double alpha, beta, epsilon, decay_factor, norm_coefficient, norm_coefficient_post;
  bool   nesterov;
} OptAttrs;

/* One element's update: in[k] is the element of input group k (X, G,
 * then V and/or H), out[k] of output group k. r is the learning rate, t
 * the update count. */
typedef void (*OptStep) (const OptAttrs *a, double r, int64_t t, const double *in, double *out);

/* An optimizer: its input groups, the input group each output group
 * takes its shape from, its attributes' defaults (and those it requires)
 * and its step. */
typedef struct {
  const char *name;
  int         n_in, n_out;
  const char *groups[5];    /* the input groups' names, NULL-terminated, for messages */
  int         out_from[3];
  OptAttrs    defaults;
  const char *required[5];  /* attributes without a default, NULL-terminated */
  bool        has_mode;     /* a mode attribute, "standard" or "nesterov" */
  OptStep     step;
} Optimizer;

/* --- the update rules -------------------------------------------------------------- */

/* in: X, G, H; out: X_new, H_new. */
static void
adagrad_step (const OptAttrs *a, double r, int64_t t, const double *in, double *out)
{
  double rate = r / (1 + t * a->decay_factor);
  double g = a->norm_coefficient * in[0] + in[1];
  double h = in[2] + g * g;
  out[0] = in[0] - rate * g / (sqrt (h) + a->epsilon);
  out[1] = h;
}

/* in: X, G, V, H; out: X_new, V_new, H_new. From T > 0 on, the rate
 * corrects the bias of both momenta. */
static void
adam_step (const OptAttrs *a, double r, int64_t t, const double *in, double *out)
{
  double g = a->norm_coefficient * in[0] + in[1];
  double v = a->alpha * in[2] + (1 - a->alpha) * g;
  double h = a->beta * in[3] + (1 - a->beta) * g * g;
  double rate = t > 0 ? r * sqrt (1 - pow (a->beta, (double) t)) / (1 - pow (a->alpha, (double) t)) : r;
  double x = in[0] - rate * v / (sqrt (h) + a->epsilon);
  out[0] = (1 - a->norm_coefficient_post) * x;
  out[1] = v;
  out[2] = h;
}

/* in: X, G, V; out: X_new, V_new. At T = 0 the gradient enters the
 * momentum whole (beta is taken as 1). */
static void
momentum_step (const OptAttrs *a, double r, int64_t t, const double *in, double *out)
{
  double g = a->norm_coefficient * in[0] + in[1];
  double v = a->alpha * in[2] + (t > 0 ? a->beta : 1) * g;
  out[0] = in[0] - r * (a->nesterov ? g + a->alpha * v : v);
  out[1] = v;
}

/* The defaults are the spec's (float attributes, so 0.9f). Momentum's
 * attributes have none. */
static const Optimizer adagrad = {
  "Adagrad", 3, 2, { "X", "G", "H" }, { 0, 2 }, { .epsilon = 1e-6f }, { NULL }, false, adagrad_step
};
static const Optimizer adam = {
  "Adam", 4, 3, { "X", "G", "V", "H" }, { 0, 2, 3 }, { .alpha = 0.9f, .beta = 0.999f, .epsilon = 1e-6f },
  { NULL }, false, adam_step
};
static const Optimizer momentum = {
  "Momentum", 3, 2, { "X", "G", "V" }, { 0, 2 }, { 0 }, { "alpha", "beta", "norm_coefficient", "mode", NULL },
  true, momentum_step
};

static const Optimizer *
optimizer_of (const PlNode *node)
{
  return node->op == PL_OP_Adagrad ? &adagrad : node->op == PL_OP_Adam ? &adam : &momentum;
}

/* --- inference ------------------------------------------------------------------- */

/* The node's attributes, or an error for a missing required one or an
 * unknown mode. */
static bool
optimizer_attrs (const PlNode *node, const Optimizer *opt, OptAttrs *a, GError **error)
{
  const OptAttrs *d = &opt->defaults;

  for (const char *const *name = opt->required; *name; name++)
    if (!pl_node_attr (node, *name))
      {
        g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "'%s' attribute is required", *name);
        return false;
      }
  *a = (OptAttrs) {
    .alpha = pl_node_attr_float (node, "alpha", d->alpha),
    .beta = pl_node_attr_float (node, "beta", d->beta),
    .epsilon = pl_node_attr_float (node, "epsilon", d->epsilon),
    .decay_factor = pl_node_attr_float (node, "decay_factor", d->decay_factor),
    .norm_coefficient = pl_node_attr_float (node, "norm_coefficient", d->norm_coefficient),
    .norm_coefficient_post = pl_node_attr_float (node, "norm_coefficient_post", d->norm_coefficient_post),
  };
  if (!opt->has_mode)
    return true;
  const char *mode = pl_node_attr_string (node, "mode", "");
  if (strcmp (mode, "standard") != 0 && strcmp (mode, "nesterov") != 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "mode '%s' (not 'standard' or 'nesterov')", mode);
      return false;
    }
  a->nesterov = strcmp (mode, "nesterov") == 0;
  return true;
}

/* The count of optimized tensors: R and T, then opt->n_in inputs per
 * tensor, none omitted, and opt->n_out outputs per tensor. */
static bool
optimizer_count (const PlNode *node, const Optimizer *opt, int *n, GError **error)
{
  int rest = node->n_inputs - 2;
  if (rest <= 0 || rest % opt->n_in != 0)
    {
      g_autofree char *groups = g_strjoinv (", ", (char **) opt->groups);
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "%s takes R, T and then %d groups of tensors (%s), "
                   "not %d inputs", opt->name, opt->n_in, groups, node->n_inputs);
      return false;
    }
  for (int i = 0; i < node->n_inputs; i++)
    if (!node->inputs[i])
      {
        g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "input %d is missing", i);
        return false;
      }
  *n = rest / opt->n_in;
  if (node->n_outputs != *n * opt->n_out)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "%s of %d optimized tensors gives %d outputs, not %d",
                   opt->name, *n, *n * opt->n_out, node->n_outputs);
      return false;
    }
  return true;
}

/* Fails unless s holds one value (a scalar or a one-element tensor). */
static bool
check_scalar (const PlShape *s, const char *what, GError **error)
{
  if (s->rank == PL_RANK_UNKNOWN || !pl_shape_is_static (s) || pl_shape_numel (s) == 1)
    return true;
  g_autofree char *str = pl_shape_to_string (s);
  g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "%s must be a scalar, not %s", what, str);
  return false;
}

/* Input group k's tensor i: its input index. */
static int
group_input (int n, int k, int i)
{
  return 2 + k * n + i;
}

/* Every tensor of tensor i's groups has X's shape (where both are static). */
static bool
check_group_shapes (const Optimizer *opt, int i, const PlShape *const *shapes, GError **error)
{
  const PlShape *x = shapes[0];
  for (int k = 1; k < opt->n_in; k++)
    {
      const PlShape *s = shapes[k];
      if (x->rank == PL_RANK_UNKNOWN || s->rank == PL_RANK_UNKNOWN
          || !pl_shape_is_static (x) || !pl_shape_is_static (s) || pl_shape_equal (x, s))
        continue;
      return pl_nn_shape_error (error, x, s, "X and %s of tensor %d differ in shape", opt->groups[k], i);
    }
  return true;
}

static bool
optimizer_infer (PlNode *node, GError **error)
{
  const Optimizer *opt = optimizer_of (node);
  OptAttrs attrs = { 0 };
  int n;

  if (!optimizer_count (node, opt, &n, error) || !optimizer_attrs (node, opt, &attrs, error)
      || !pl_require_dtype (node, 0, real_types, error) || !pl_require_dtype (node, 1, i64_only, error)
      || !check_scalar (&pl_input (node, 0)->shape, "R", error)
      || !check_scalar (&pl_input (node, 1)->shape, "T", error))
    return false;
  for (int i = 0; i < n; i++)
    {
      const PlShape *shapes[4];
      for (int k = 0; k < opt->n_in; k++)
        {
          int at = group_input (n, k, i);
          if (!pl_require_dtype (node, at, real_types, error))
            return false;
          if (pl_input (node, at)->dtype != pl_input (node, 2)->dtype)
            {
              g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "input %d is %s, the first X %s", at,
                           pl_dtype_name (pl_input (node, at)->dtype), pl_dtype_name (pl_input (node, 2)->dtype));
              return false;
            }
          shapes[k] = &pl_input (node, at)->shape;
        }
      if (!check_group_shapes (opt, i, shapes, error))
        return false;
      for (int k = 0; k < opt->n_out; k++)
        pl_set_output (node, k * n + i, pl_input (node, 2)->dtype, shapes[opt->out_from[k]]);
    }
  return true;
}

/* --- evaluation ------------------------------------------------------------------ */

/* Updates tensor i of n: loads its groups, steps every element, stores
 * the output groups. */
static bool
optimizer_update (const PlNode *node, const Optimizer *opt, const OptAttrs *attrs, double r, int64_t t, int n,
                  int i, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlShape *shapes[4];
  PlShape own[4];
  double *in[4] = { NULL }, *out[3] = { NULL };
  bool ok = true;

  for (int k = 0; k < opt->n_in; k++)
    {
      own[k] = pl_tensor_shape (inputs[group_input (n, k, i)]);
      shapes[k] = &own[k];
    }
  if (!check_group_shapes (opt, i, shapes, error))
    return pl_exec_error (error);
  const int64_t numel = inputs[2 + i]->numel;
  for (int k = 0; k < opt->n_in; k++)
    in[k] = pl_nn_load_f64 (inputs[group_input (n, k, i)]);
  for (int k = 0; k < opt->n_out; k++)
    out[k] = g_new (double, MAX (numel, 1));
  for (int64_t e = 0; e < numel; e++)
    {
      double vin[4], vout[3];
      for (int k = 0; k < opt->n_in; k++)
        vin[k] = in[k][e];
      opt->step (attrs, r, t, vin, vout);
      for (int k = 0; k < opt->n_out; k++)
        out[k][e] = vout[k];
    }
  for (int k = 0; k < opt->n_out && ok; k++)
    {
      PlTensor *y = outputs[k * n + i] = pl_tensor_new_shape (inputs[2 + i]->dtype, &own[opt->out_from[k]], error);
      ok = y != NULL;
      if (ok)
        pl_nn_store_f64 (y, out[k]);
    }
  for (int k = 0; k < 4; k++)
    g_free (in[k]);
  for (int k = 0; k < 3; k++)
    g_free (out[k]);
  return ok;
}

static bool
optimizer_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const Optimizer *opt = optimizer_of (node);
  OptAttrs attrs = { 0 };
  int n;

  if (!optimizer_count (node, opt, &n, error) || !optimizer_attrs (node, opt, &attrs, error))
    return pl_exec_error (error);
  for (int k = 0; k < 2; k++)
    if (inputs[k]->numel != 1)
      {
        g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "%s must hold one value, not %" G_GINT64_FORMAT,
                     k == 0 ? "R" : "T", inputs[k]->numel);
        return false;
      }
  const double r = pl_tensor_get_f64 (inputs[0], 0);
  const int64_t t = pl_tensor_get_i64 (inputs[1], 0);
  for (int i = 0; i < n; i++)
    if (!optimizer_update (node, opt, &attrs, r, t, n, i, inputs, outputs, error))
      return false;
  return true;
}

void
pl_ops_register_training (void)
{
  static const PlOpEntry entries[] = {
    { PL_OP_Adagrad, 5, -1, 2, -1, optimizer_infer, optimizer_eval, TRAINING_DOMAIN },
    { PL_OP_Adam, 6, -1, 3, -1, optimizer_infer, optimizer_eval, TRAINING_DOMAIN },
    { PL_OP_Momentum, 5, -1, 2, -1, optimizer_infer, optimizer_eval, TRAINING_DOMAIN },
  };
  pl_ops_register (entries, G_N_ELEMENTS (entries));
}

/* grad.c — the "grad" pass: reverse-mode automatic differentiation. It turns
 * a forward graph with a loss into a training step: the forward graph
 * unchanged, the backward nodes, and per parameter W an SGD update
 * W.new = W - lr * dW (and/or the gradient W.grad) as new graph outputs.
 * Parameters stay constants, so the pass manager's check still compares the
 * forward outputs between versions.
 *
 * The walk, linear in the graph size:
 *  1. the loss cone: values the loss depends on through differentiable
 *     input slots (not shapes, indices, conditions, running statistics);
 *  2. the parameter cone: float values that depend on a parameter; a value
 *     in both is *active* and gets a gradient;
 *  3. every node with an active output and an active input needs a rule
 *     (grad-rules.c, grad-rules-nn.c) — checked before anything is built,
 *     so an op without one fails cleanly, naming the node;
 *  4. in reverse topological order each such node's rule turns its output
 *     gradients into input gradients; a value with several uses sums them
 *     with Add.
 * A loss that is not a scalar is summed (its ReduceSum becomes an output).
 * A fusion node is differentiated by recomputing the body nodes it needs in
 * the outer graph (after the fusion passes; grad before them avoids that —
 * and small constants copied into fusion bodies are no parameters then).
 * With the defaults (params=all, the first output), a graph with nothing to
 * train is left unchanged; on any failure every node and constant the pass
 * added is removed again.
 *
 * This is what makes activations live long: the backward reads forward
 * values in reverse order, so the memory estimate's peak rises — the case
 * swap insertion (DESIGN.md §1.5) is for. The report gives both peaks.
 */
#define G_LOG_DOMAIN "passlab"
#include "builtin-passes.h"
#include "cost.h"
#include "grad-private.h"

#include <stdarg.h>
#include <string.h>

/* --- building nodes ------------------------------------------------------------- */

void
pl_grad_fail (PlGrad *G, PlErrorCode code, const char *fmt, ...)
{
  if (G->error)
    return;
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_autofree char *where = G->cur ? pl_node_describe (G->cur) : NULL;
  g_set_error (&G->error, PL_ERROR, code, "grad: %s%s%s", where ? where : "", where ? ": " : "", msg);
}

/* base, base_1, base_2, ... not yet used as a value or node name. The next
 * suffix to try is remembered per base, so naming stays linear. */
static char *
fresh_name (PlGrad *G, const char *base)
{
  int k = GPOINTER_TO_INT (g_hash_table_lookup (G->name_next, base));
  char *name;
  for (;; k++)
    {
      name = k ? g_strdup_printf ("%s_%d", base, k) : g_strdup (base);
      if (!pl_graph_find_value (G->g, name) && !pl_graph_find_node (G->g, name))
        break;
      g_free (name);
    }
  g_hash_table_insert (G->name_next, g_strdup (base), GINT_TO_POINTER (k + 1));
  return name;
}

PlNode *
pl_grad_node (PlGrad *G, const char *op, int n_in, PlValue *const *in, int n_out)
{
  if (G->error)
    return NULL;
  g_autofree char *name = fresh_name (G, G->base);
  const char *names[8] = { name };
  g_assert (n_out <= (int) G_N_ELEMENTS (names));
  PlNode *node = pl_graph_add_node (G->g, op, NULL, name, n_in, in, n_out, names, &G->error);
  if (node)
    {
      g_ptr_array_add (G->added_nodes, node);
      g_hash_table_add (G->added_set, node);
    }
  return node;
}

PlValue *
pl_grad_finish (PlGrad *G, PlNode *node)
{
  if (!node || G->error)
    return NULL;
  g_autoptr (GError) err = NULL;
  if (!pl_node_infer (node, &err))
    {
      pl_grad_fail (G, err->code, "building the backward: %s", err->message);
      return NULL;
    }
  return node->outputs[0];
}

PlValue *
pl_grad_op (PlGrad *G, const char *op, int n_in, PlValue *const *in)
{
  return pl_grad_finish (G, pl_grad_node (G, op, n_in, in, 1));
}

PlValue *
pl_grad_tensor (PlGrad *G, PlTensor *t)
{
  if (G->error)
    return NULL;
  g_autofree char *name = fresh_name (G, G->base);
  PlValue *v = pl_graph_add_constant (G->g, name, t, &G->error);
  if (v)
    g_ptr_array_add (G->added_values, v);
  return v;
}

/* Scalar constants are shared: one per dtype and value. */
PlValue *
pl_grad_scalar (PlGrad *G, PlDType dtype, double v)
{
  if (G->error)
    return NULL;
  g_autofree char *key = g_strdup_printf ("%d:%.17g", dtype, v);
  PlValue *c = g_hash_table_lookup (G->scalars, key);
  if (c)
    return c;
  g_autoptr (PlTensor) t = pl_tensor_new_scalar (dtype, v);
  const char *saved = G->base;
  G->base = "grad_const";
  c = pl_grad_tensor (G, t);
  G->base = saved;
  if (c)
    g_hash_table_insert (G->scalars, g_steal_pointer (&key), c);
  return c;
}

PlValue *
pl_grad_ints (PlGrad *G, const int64_t *v, int n)
{
  g_autoptr (PlTensor) t = pl_tensor_new (PL_DTYPE_I64, 1, (int64_t[]) { n }, NULL);
  if (n)
    memcpy (t->data, v, sizeof (int64_t) * n);
  return pl_grad_tensor (G, t);
}

PlValue *
pl_grad_zero_of (PlGrad *G, const PlValue *like)
{
  return pl_grad_scalar (G, like->dtype, 0.0);
}

/* x * s, with s a scalar constant of x's dtype. */
PlValue *
pl_grad_mul_s (PlGrad *G, PlValue *x, double s)
{
  if (!x)
    return NULL;
  return s == 1.0 ? x : op2 (G, "Mul", x, pl_grad_scalar (G, x->dtype, s));
}

/* s - x, with s a scalar constant. */
PlValue *
pl_grad_rsub_s (PlGrad *G, double s, PlValue *x)
{
  if (!x)
    return NULL;
  return op2 (G, "Sub", pl_grad_scalar (G, x->dtype, s), x);
}

PlValue *
pl_grad_where (PlGrad *G, PlValue *c, PlValue *a, PlValue *b)
{
  return op3 (G, "Where", c, a, b);
}

PlValue *
pl_grad_cast_to (PlGrad *G, PlValue *x, PlDType to)
{
  if (!x || x->dtype == to)
    return x;
  PlNode *n = pl_grad_node (G, "Cast", 1, &x, 1);
  if (n)
    pl_node_set_attr_int (n, "to", pl_dtype_to_onnx (to));
  return pl_grad_finish (G, n);
}

PlValue *
pl_grad_transpose (PlGrad *G, PlValue *x, const int64_t *perm, int n)
{
  PlNode *t = pl_grad_node (G, "Transpose", 1, &x, 1);
  if (t)
    pl_node_set_attr_ints (t, "perm", perm, n);
  return pl_grad_finish (G, t);
}

/* x with its last two dims swapped (the form fuse-library folds into GEMMs). */
PlValue *
pl_grad_swap_last (PlGrad *G, PlValue *x)
{
  if (!x)
    return NULL;
  int64_t perm[PL_MAX_RANK];
  int r = x->shape.rank;
  for (int i = 0; i < r; i++)
    perm[i] = i;
  perm[r - 2] = r - 1;
  perm[r - 1] = r - 2;
  return pl_grad_transpose (G, x, perm, r);
}

/* x with its first two dims swapped (N and C of a convolution). */
PlValue *
pl_grad_swap_first (PlGrad *G, PlValue *x)
{
  if (!x)
    return NULL;
  int64_t perm[PL_MAX_RANK];
  int r = x->shape.rank;
  for (int i = 0; i < r; i++)
    perm[i] = i < 2 ? 1 - i : i;
  return pl_grad_transpose (G, x, perm, r);
}

PlValue *
pl_grad_reduce_sum (PlGrad *G, PlValue *x, const int64_t *axes, int n, bool keepdims)
{
  if (!x)
    return NULL;
  if (n == 0)
    return x;
  PlNode *r = pl_grad_node (G, "ReduceSum", 2, (PlValue *[]) { x, pl_grad_ints (G, axes, n) }, 1);
  if (r)
    pl_node_set_attr_int (r, "keepdims", keepdims);
  return pl_grad_finish (G, r);
}

PlValue *
pl_grad_unsqueeze (PlGrad *G, PlValue *x, const int64_t *axes, int n)
{
  if (!x || n == 0)
    return x;
  return op2 (G, "Unsqueeze", x, pl_grad_ints (G, axes, n));
}

/* The shape of v as a value: a constant when static, else Shape(v). */
PlValue *
pl_grad_shape_of (PlGrad *G, const PlValue *v)
{
  int64_t dims[PL_MAX_RANK];
  if (pl_shape_get_dims (&v->shape, dims))
    return pl_grad_ints (G, dims, v->shape.rank);
  return op1 (G, "Shape", (PlValue *) v);
}

PlValue *
pl_grad_reshape_like (PlGrad *G, PlValue *x, const PlValue *like)
{
  if (!x)
    return NULL;
  if (pl_shape_equal (&x->shape, &like->shape))
    return x;
  return op2 (G, "Reshape", x, pl_grad_shape_of (G, like));
}

PlValue *
pl_grad_expand_like (PlGrad *G, PlValue *x, const PlValue *like)
{
  if (!x)
    return NULL;
  if (pl_shape_equal (&x->shape, &like->shape))
    return x;
  return op2 (G, "Expand", x, pl_grad_shape_of (G, like));
}

PlValue *
pl_grad_zeros_like (PlGrad *G, const PlValue *like)
{
  return pl_grad_expand_like (G, pl_grad_zero_of (G, like), like);
}

/* Sums d (the shape of a broadcast result) down to x's shape: ReduceSum
 * with keepdims over the broadcast axes, then Reshape to x's shape. */
PlValue *
pl_grad_unbroadcast (PlGrad *G, PlValue *d, const PlValue *x)
{
  if (!d)
    return NULL;
  if (pl_shape_equal (&d->shape, &x->shape))
    return d;
  int rd = d->shape.rank, rx = x->shape.rank;
  if (rd < 0 || rx < 0 || rx > rd)
    {
      pl_grad_fail (G, PL_ERROR_UNSUPPORTED, "cannot unbroadcast a gradient of unknown rank to '%s'", x->name);
      return NULL;
    }
  int64_t axes[PL_MAX_RANK];
  int n = 0;
  for (int i = 0; i < rd; i++)
    {
      int j = i - (rd - rx);
      if (j < 0)
        axes[n++] = i;
      else if (pl_dim_equal (x->shape.dims[j], d->shape.dims[i]))
        continue;
      else if (x->shape.dims[j].size == 1)
        axes[n++] = i;
      else
        {
          g_autofree char *sx = pl_shape_to_string (&x->shape), *sd = pl_shape_to_string (&d->shape);
          pl_grad_fail (G, PL_ERROR_UNSUPPORTED, "cannot tell how '%s' %s broadcasts to %s", x->name, sx, sd);
          return NULL;
        }
    }
  return pl_grad_reshape_like (G, pl_grad_reduce_sum (G, d, axes, n, true), x);
}

PlValue *
pl_grad_slice (PlGrad *G, PlValue *x, const int64_t *starts, const int64_t *ends, const int64_t *axes, int n)
{
  PlValue *in[] = { x, pl_grad_ints (G, starts, n), pl_grad_ints (G, ends, n), pl_grad_ints (G, axes, n) };
  return pl_grad_op (G, "Slice", 4, in);
}

/* numel(part) / numel(whole) as a scalar of dtype: a constant when both
 * are static, else from Size. */
PlValue *
pl_grad_count_ratio (PlGrad *G, const PlValue *part, const PlValue *whole, PlDType dtype)
{
  int64_t a = pl_shape_numel (&part->shape), b = pl_shape_numel (&whole->shape);
  if (a >= 0 && b > 0)
    return pl_grad_scalar (G, dtype, (double) a / (double) b);
  return op2 (G, "Div", pl_grad_cast_to (G, op1 (G, "Size", (PlValue *) part), dtype),
              pl_grad_cast_to (G, op1 (G, "Size", (PlValue *) whole), dtype));
}

/* Sets the attributes of src on dst (for a recomputed node), but skip. */
void
pl_grad_copy_attrs (PlNode *dst, const PlNode *src, const char *skip)
{
  if (!dst)
    return;
  for (int i = 0; i < src->n_attrs; i++)
    {
      const PlAttr *a = &src->attrs[i];
      if (skip && strcmp (a->name, skip) == 0)
        continue;
      switch (a->type)
        {
        case PL_ATTR_INT: pl_node_set_attr_int (dst, a->name, a->i); break;
        case PL_ATTR_FLOAT: pl_node_set_attr_float (dst, a->name, a->f); break;
        case PL_ATTR_STRING: pl_node_set_attr_string (dst, a->name, a->s); break;
        case PL_ATTR_INTS: pl_node_set_attr_ints (dst, a->name, a->ints.v, a->ints.n); break;
        case PL_ATTR_FLOATS: pl_node_set_attr_floats (dst, a->name, a->floats.v, a->floats.n); break;
        case PL_ATTR_STRINGS:
          pl_node_set_attr_strings (dst, a->name, (const char *const *) a->strings.v, a->strings.n);
          break;
        case PL_ATTR_TENSOR: pl_node_set_attr_tensor (dst, a->name, a->t); break;
        case PL_ATTR_GRAPH: break;
        }
    }
}

/* Axis attribute `name` of n normalized for rank; fails when out of range. */
bool
pl_grad_axis_of (PlGrad *G, const PlNode *n, const char *name, int64_t def, int rank, int *out)
{
  int64_t a = pl_node_attr_int (n, name, def);
  if (rank < 0 || a < -rank || a >= rank)
    {
      pl_grad_fail (G, PL_ERROR_UNSUPPORTED, "needs a known rank and a valid %s", name);
      return false;
    }
  *out = (int) (a < 0 ? a + rank : a);
  return true;
}

bool
pl_grad_require_static (PlGrad *G, const PlValue *v, int64_t *dims)
{
  if (pl_shape_get_dims (&v->shape, dims))
    return true;
  pl_grad_fail (G, PL_ERROR_UNSUPPORTED, "needs the static shape of '%s'", v->name);
  return false;
}

void
pl_grad_give (PlGrad *G, const PlValue *x, PlValue *dx)
{
  if (!dx || G->error)
    return;
  if (dx->dtype != x->dtype ||
      (pl_shape_is_static (&x->shape) && pl_shape_is_static (&dx->shape) && !pl_shape_equal (&x->shape, &dx->shape)))
    {
      g_autofree char *sx = pl_shape_to_string (&x->shape), *sd = pl_shape_to_string (&dx->shape);
      pl_grad_fail (G, PL_ERROR_FAILED, "internal error: the gradient of '%s' %s%s is %s%s", x->name,
                    pl_dtype_name (x->dtype), sx, pl_dtype_name (dx->dtype), sd);
      return;
    }
  PlValue *old = g_hash_table_lookup (G->grads, x);
  PlValue *sum = old ? op2 (G, "Add", old, dx) : dx;
  if (sum)
    g_hash_table_insert (G->grads, (gpointer) x, sum);
}

/* --- the pass ------------------------------------------------------------------- */

typedef enum { OUT_UPDATES = 1, OUT_GRADS = 2, OUT_BOTH = 3 } OutMode;

#define MAX_LISTED 12

static bool
is_float_value (const PlValue *v)
{
  return v && pl_dtype_is_float (v->dtype);
}

/* Whether input i of node is a differentiable slot reading a value of set. */
static bool
slot_in (const PlNode *node, int i, GHashTable *set)
{
  return node->inputs[i] && pl_grad_slot_differentiable (node, i) && g_hash_table_contains (set, node->inputs[i]);
}

/* Values the loss depends on through differentiable slots. */
static GHashTable *
loss_cone (PlNode *const *order, int n, PlValue *loss)
{
  GHashTable *set = g_hash_table_new (NULL, NULL);
  g_hash_table_add (set, loss);
  for (int k = n - 1; k >= 0; k--)
    {
      const PlNode *node = order[k];
      bool reached = false;
      for (int o = 0; o < node->n_outputs && !reached; o++)
        reached = node->outputs[o] && g_hash_table_contains (set, node->outputs[o]);
      for (int i = 0; reached && i < node->n_inputs; i++)
        if (is_float_value (node->inputs[i]) && pl_grad_slot_differentiable (node, i))
          g_hash_table_add (set, node->inputs[i]);
    }
  return set;
}

/* Marks active (in G->active) the values of the loss cone that depend on a
 * parameter. */
static void
mark_active (PlGrad *G, PlNode *const *order, int n, GPtrArray *params, GHashTable *cone)
{
  g_autoptr (GHashTable) reached = g_hash_table_new (NULL, NULL);
  for (guint i = 0; i < params->len; i++)
    g_hash_table_add (reached, params->pdata[i]);
  for (int k = 0; k < n; k++)
    {
      const PlNode *node = order[k];
      bool hit = false;
      for (int i = 0; i < node->n_inputs && !hit; i++)
        hit = slot_in (node, i, reached);
      for (int o = 0; hit && o < node->n_outputs; o++)
        if (is_float_value (node->outputs[o]))
          g_hash_table_add (reached, node->outputs[o]);
    }
  GHashTableIter it;
  gpointer v;
  g_hash_table_iter_init (&it, reached);
  while (g_hash_table_iter_next (&it, &v, NULL))
    if (g_hash_table_contains (cone, v))
      g_hash_table_add (G->active, v);
}

/* The parameters: "all" (float constants of more than one element on the
 * loss's path) or a comma list of float constants or graph inputs. */
static GPtrArray *
collect_params (PlGraph *g, const char *spec, GHashTable *cone, GError **error)
{
  g_autoptr (GPtrArray) params = g_ptr_array_new ();
  if (strcmp (spec, "all") == 0)
    {
      for (guint i = 0; i < g->values->len; i++)
        {
          PlValue *v = g->values->pdata[i];
          if (v->constant && is_float_value (v) && v->constant->numel > 1 && g_hash_table_contains (cone, v))
            g_ptr_array_add (params, v);
        }
      return g_steal_pointer (&params);
    }
  g_auto (GStrv) names = g_strsplit (spec, ",", -1);
  for (int i = 0; names[i]; i++)
    {
      const char *name = g_strstrip (names[i]);
      if (!*name)
        continue;
      PlValue *v = pl_graph_find_value (g, name);
      if (!v)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "grad: no value named '%s' (params)", name);
          return NULL;
        }
      if (!(v->constant || v->is_input) || !is_float_value (v))
        {
          g_set_error (error, PL_ERROR, PL_ERROR_INVALID,
                       "grad: parameter '%s' is not a float constant or graph input", name);
          return NULL;
        }
      if (!g_ptr_array_find (params, v, NULL))
        g_ptr_array_add (params, v);
    }
  return g_steal_pointer (&params);
}

/* Step 3: every node on an active path has a rule. */
static bool
check_rules (PlGrad *G, PlNode *const *order, int n, GError **error)
{
  for (int k = 0; k < n; k++)
    {
      const PlNode *node = order[k];
      bool out = false, in = false;
      for (int o = 0; o < node->n_outputs && !out; o++)
        out = node->outputs[o] && g_hash_table_contains (G->active, node->outputs[o]);
      for (int i = 0; out && i < node->n_inputs && !in; i++)
        in = slot_in (node, i, G->active);
      if (in && !pl_grad_rule (node))
        {
          g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "grad: no gradient rule for %s (node '%s')",
                       node->op_type, node->name);
          return false;
        }
    }
  return true;
}

/* Step 4: the reverse walk. */
static bool
backward (PlGrad *G, PlNode *const *order, int n)
{
  for (int k = n - 1; k >= 0 && !G->error; k--)
    {
      const PlNode *node = order[k];
      g_autofree PlValue **dy = g_new0 (PlValue *, MAX (node->n_outputs, 1));
      g_autofree bool *need = g_new0 (bool, MAX (node->n_inputs, 1));
      bool any_dy = false, any_need = false;
      for (int o = 0; o < node->n_outputs; o++)
        if (node->outputs[o] && (dy[o] = g_hash_table_lookup (G->grads, node->outputs[o])))
          any_dy = true;
      for (int i = 0; any_dy && i < node->n_inputs; i++)
        if (slot_in (node, i, G->active))
          need[i] = any_need = true;
      if (!any_need)
        continue;
      g_autofree char *base = g_strdup_printf ("%s.bw", node->name);
      PlGradRule rule = pl_grad_rule (node);
      G->cur = node;
      G->base = base;
      if (rule)
        rule (G, node, dy, need);
      else
        pl_grad_fail (G, PL_ERROR_UNSUPPORTED, "no gradient rule for %s", node->op_type);
      G->cur = NULL;
      G->base = NULL;
    }
  return !G->error;
}

/* A copy of the body node bn in the outer graph, reading in. */
static PlNode *
clone_node (PlGrad *G, const PlNode *bn, PlValue *const *in)
{
  if (G->error)
    return NULL;
  g_autofree char *name = fresh_name (G, G->base);
  g_autofree const char **names = g_new0 (const char *, MAX (bn->n_outputs, 1));
  for (int o = 0; o < bn->n_outputs; o++)
    names[o] = !bn->outputs[o] ? "" : o == 0 ? name : NULL;
  PlNode *c = pl_graph_add_node (G->g, bn->op_type, bn->domain, name, bn->n_inputs, in, bn->n_outputs, names,
                                 &G->error);
  if (!c)
    return NULL;
  g_ptr_array_add (G->added_nodes, c);
  g_hash_table_add (G->added_set, c);
  pl_grad_copy_attrs (c, bn, NULL);
  if (bn->body)
    pl_node_set_body (c, pl_graph_copy (bn->body));
  pl_grad_finish (G, c);
  return G->error ? NULL : c;
}

/* The body nodes that compute the outputs with a gradient, in topological
 * order (all their operands: the recomputation needs shapes too). */
static GPtrArray *
body_nodes_needed (PlGrad *G, const PlNode *n, PlValue *const *dy)
{
  int nb;
  g_autofree PlNode **order = pl_graph_topo_order (n->body, &nb, &G->error);
  if (!order)
    return NULL;
  g_autoptr (GHashTable) want = g_hash_table_new (NULL, NULL);
  for (int o = 0; o < n->n_outputs && o < (int) n->body->outputs->len; o++)
    if (dy[o])
      g_hash_table_add (want, n->body->outputs->pdata[o]);
  GPtrArray *needed = g_ptr_array_new ();
  for (int k = nb - 1; k >= 0; k--)
    {
      PlNode *bn = order[k];
      bool hit = false;
      for (int o = 0; o < bn->n_outputs && !hit; o++)
        hit = bn->outputs[o] && g_hash_table_contains (want, bn->outputs[o]);
      if (!hit)
        continue;
      g_ptr_array_add (needed, bn);
      for (int i = 0; i < bn->n_inputs; i++)
        if (bn->inputs[i])
          g_hash_table_add (want, bn->inputs[i]);
    }
  for (guint i = 0; i < needed->len / 2; i++)
    {
      gpointer t = needed->pdata[i];
      needed->pdata[i] = needed->pdata[needed->len - 1 - i];
      needed->pdata[needed->len - 1 - i] = t;
    }
  return needed;
}

/* A fusion node: the body nodes its output gradients need are recomputed in
 * the outer graph, reading the fusion's inputs, and differentiated like any
 * other nodes (gradients reach the fusion's inputs directly). */
bool
pl_grad_rule_fusion (PlGrad *G, const PlNode *n, PlValue *const *dy, const bool *need)
{
  PlGraph *body = n->body;
  if (!body || body->inputs->len != (guint) n->n_inputs || body->outputs->len != (guint) n->n_outputs)
    {
      pl_grad_fail (G, PL_ERROR_INVALID, "a fusion body that does not match its node");
      return false;
    }
  g_autoptr (GPtrArray) needed = body_nodes_needed (G, n, dy);
  if (!needed)
    return false;
  g_autofree char *base = g_strdup_printf ("%s.re", n->name);
  const char *saved = G->base;
  G->base = base;
  g_autoptr (GHashTable) map = g_hash_table_new (NULL, NULL);  /* body value -> outer value */
  for (int i = 0; i < n->n_inputs; i++)
    g_hash_table_insert (map, body->inputs->pdata[i], n->inputs[i]);
  g_autoptr (GPtrArray) clones = g_ptr_array_new ();
  for (guint k = 0; k < needed->len && !G->error; k++)
    {
      const PlNode *bn = needed->pdata[k];
      g_autofree PlValue **in = g_new0 (PlValue *, MAX (bn->n_inputs, 1));
      bool active = false;
      for (int i = 0; i < bn->n_inputs; i++)
        {
          PlValue *v = bn->inputs[i];
          if (!v)
            continue;
          if (!(in[i] = g_hash_table_lookup (map, v)) && v->constant)
            g_hash_table_insert (map, v, in[i] = pl_grad_tensor (G, v->constant));
          active = active || (in[i] && pl_grad_slot_differentiable (bn, i) &&
                              g_hash_table_contains (G->active, in[i]));
        }
      PlNode *c = clone_node (G, bn, in);
      if (!c)
        break;
      g_ptr_array_add (clones, c);
      for (int o = 0; o < bn->n_outputs; o++)
        if (bn->outputs[o])
          {
            g_hash_table_insert (map, bn->outputs[o], c->outputs[o]);
            if (active && is_float_value (c->outputs[o]))
              g_hash_table_add (G->active, c->outputs[o]);
          }
    }
  for (int o = 0; o < n->n_outputs && !G->error; o++)
    {
      PlValue *out = g_hash_table_lookup (map, body->outputs->pdata[o]);
      if (dy[o] && out)
        pl_grad_give (G, out, dy[o]);
    }
  G->n_recomputed += (int) clones->len;
  G->base = saved;
  if (!G->error)
    check_rules (G, (PlNode *const *) clones->pdata, (int) clones->len, &G->error);
  return !G->error && backward (G, (PlNode *const *) clones->pdata, (int) clones->len);
}

/* The gradient seed: ones of the loss's shape. A loss of more than one
 * element is summed, and the sum (*sum) becomes an output. */
static void
seed (PlGrad *G, PlValue *loss, PlValue **sum)
{
  G->base = "grad_seed";
  int64_t numel = pl_shape_numel (&loss->shape);
  PlValue *s;
  if (numel == 1)
    {
      g_autoptr (PlTensor) t = pl_tensor_new_shape (loss->dtype, &loss->shape, NULL);
      pl_tensor_set_f64 (t, 0, 1.0);
      s = pl_grad_tensor (G, t);
    }
  else
    {
      s = pl_grad_expand_like (G, pl_grad_scalar (G, loss->dtype, 1.0), loss);
      g_autofree char *base = g_strdup_printf ("%s.sum", loss->name);
      G->base = base;
      PlNode *r = pl_grad_node (G, "ReduceSum", 1, &loss, 1);
      if (r)
        pl_node_set_attr_int (r, "keepdims", 0);
      *sum = pl_grad_finish (G, r);
    }
  G->base = NULL;
  if (s)
    g_hash_table_insert (G->grads, loss, s);
}

/* The outputs per parameter: p.grad (the gradient itself when the pass made
 * it and nothing else claims it, else an Identity) and/or
 * p.new = p - lr * p.grad. */
static void
add_param_outputs (PlGrad *G, GPtrArray *params, OutMode mode, double lr, GPtrArray *outs, int *n_unreached)
{
  g_autoptr (GHashTable) claimed = g_hash_table_new (NULL, NULL);
  for (guint i = 0; i < params->len && !G->error; i++)
    {
      PlValue *p = params->pdata[i];
      g_autofree char *gname = g_strdup_printf ("%s.grad", p->name);
      g_autofree char *sname = g_strdup_printf ("%s.step", p->name);
      g_autofree char *nname = g_strdup_printf ("%s.new", p->name);
      PlValue *d = g_hash_table_lookup (G->grads, p);
      G->base = gname;
      if (!d)
        {
          (*n_unreached)++;
          d = pl_grad_zeros_like (G, p);
        }
      if (d && (mode & OUT_GRADS))
        {
          if (d->producer && g_hash_table_contains (G->added_set, d->producer) && !g_hash_table_contains (claimed, d))
            {
              g_autofree char *name = pl_graph_unique_name (G->g, gname);
              pl_value_rename (d, name, NULL);
            }
          else
            d = op1 (G, "Identity", d);
          if (d)
            {
              g_hash_table_add (claimed, d);
              g_ptr_array_add (outs, d);
            }
        }
      if (mode & OUT_UPDATES)
        {
          G->base = sname;
          PlValue *step = pl_grad_mul_s (G, d, lr);
          G->base = nname;
          PlValue *nw = op2 (G, "Sub", p, step);
          if (nw)
            g_ptr_array_add (outs, nw);
        }
    }
  G->base = NULL;
}

static void
grad_clear (PlGrad *G)
{
  g_hash_table_unref (G->grads);
  g_hash_table_unref (G->active);
  g_ptr_array_unref (G->added_nodes);
  g_ptr_array_unref (G->added_values);
  g_hash_table_unref (G->added_set);
  g_hash_table_unref (G->scalars);
  g_hash_table_unref (G->name_next);
  g_clear_error (&G->error);
}

/* Removes everything the pass added (nothing of it is an output yet). */
static void
rollback (PlGrad *G)
{
  pl_graph_remove_nodes (G->g, (PlNode *const *) G->added_nodes->pdata, (int) G->added_nodes->len);
  pl_graph_remove_values (G->g, (PlValue *const *) G->added_values->pdata, (int) G->added_values->len);
}

static char *
format_bytes (int64_t b)
{
  g_autofree char *s = g_format_size_full ((guint64) MAX (b, 0), G_FORMAT_SIZE_IEC_UNITS);
  return g_strdup_printf ("%s (%" G_GINT64_FORMAT " bytes)", s, b);
}

static void
report_result (PlPassReport *report, const PlGrad *G, PlValue *loss, PlValue *sum, GPtrArray *params,
               int n_unreached, int64_t n_backward, int64_t n_update, OutMode mode, double lr,
               const PlGraphStats *before, const PlGraphStats *after)
{
  g_autofree char *shape = pl_shape_to_string (&loss->shape);
  if (sum)
    pl_pass_report_printf (report, "loss '%s' is %s%s, not a scalar: differentiating its sum '%s' "
                           "(ReduceSum, added as an output)",
                           loss->name, pl_dtype_name (loss->dtype), shape, sum->name);
  else
    pl_pass_report_printf (report, "loss '%s' (%s%s)", loss->name, pl_dtype_name (loss->dtype), shape);

  int64_t bytes = 0;
  GString *names = g_string_new (NULL);
  for (guint i = 0; i < params->len; i++)
    {
      PlValue *p = params->pdata[i];
      bytes += pl_shape_numel (&p->shape) * (int64_t) pl_dtype_size (p->dtype);
      if (i < MAX_LISTED)
        g_string_append_printf (names, "%s%s", i ? ", " : "", p->name);
    }
  if (params->len > MAX_LISTED)
    g_string_append_printf (names, ", … (%u more)", params->len - MAX_LISTED);
  g_autofree char *pb = format_bytes (bytes);
  pl_pass_report_printf (report, "differentiated %u parameter%s, %s: %s", params->len, params->len == 1 ? "" : "s",
                         pb, names->str);
  g_string_free (names, TRUE);
  if (n_unreached)
    pl_pass_report_printf (report, "%d parameter%s do%s not affect the loss: zero gradient", n_unreached,
                           n_unreached == 1 ? "" : "s", n_unreached == 1 ? "es" : "");
  g_autofree char *lr_text = mode & OUT_UPDATES ? g_strdup_printf (", SGD lr = %g", lr) : g_strdup ("");
  const char *outs = mode == OUT_BOTH ? "W.grad, W.new" : mode == OUT_GRADS ? "W.grad" : "W.new";
  pl_pass_report_printf (report, "added %" G_GINT64_FORMAT " backward nodes and %" G_GINT64_FORMAT
                         " for the outputs (%s%s); nodes %" G_GINT64_FORMAT " -> %" G_GINT64_FORMAT,
                         n_backward, n_update, outs, lr_text, before->nodes, after->nodes);
  if (G->n_recomputed)
    pl_pass_report_printf (report, "recomputed %d nodes of fusion bodies for their gradients (grad before "
                           "the fusion passes avoids that)", G->n_recomputed);
  g_autofree char *p0 = format_bytes (before->peak_bytes), *p1 = format_bytes (after->peak_bytes);
  g_autofree char *dp = format_bytes (after->peak_bytes - before->peak_bytes);
  pl_pass_report_printf (report, "peak memory estimate %s -> %s (+%s, %.2fx): activations stay live until "
                         "their backward use", p0, p1, dp,
                         before->peak_bytes > 0 ? (double) after->peak_bytes / (double) before->peak_bytes : 0.0);
  pl_pass_report_count (report, "parameters", params->len);
  pl_pass_report_count (report, "parameter bytes", bytes);
  pl_pass_report_count (report, "backward nodes", n_backward);
  pl_pass_report_count (report, "output nodes", n_update);
  pl_pass_report_count (report, "recomputed nodes", G->n_recomputed);
  pl_pass_report_count (report, "nodes before", before->nodes);
  pl_pass_report_count (report, "nodes after", after->nodes);
  pl_pass_report_count (report, "peak bytes before", before->peak_bytes);
  pl_pass_report_count (report, "peak bytes after", after->peak_bytes);
}

static bool
parse_mode (const char *s, OutMode *mode, GError **error)
{
  static const char *const names[] = { NULL, "updates", "grads", "both" };
  for (int i = 1; i < 4; i++)
    if (strcmp (s, names[i]) == 0)
      {
        *mode = (OutMode) i;
        return true;
      }
  g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "grad: outputs '%s' is not one of updates, grads, both", s);
  return false;
}

static PlValue *
find_loss (PlGraph *g, const char *name, GError **error)
{
  PlValue *loss = NULL;
  if (!*name)
    {
      if (g->outputs->len == 0)
        g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "grad: the graph has no output to differentiate");
      else
        loss = g->outputs->pdata[0];
    }
  else if (!(loss = pl_graph_find_value (g, name)))
    g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "grad: no value named '%s' (loss)", name);
  if (loss && !is_float_value (loss))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "grad: the loss '%s' is %s, not a float", loss->name,
                   pl_dtype_name (loss->dtype));
      return NULL;
    }
  return loss;
}

static bool
run (PlGraph *g, const PlPassArgs *args, PlPassReport *report, gpointer user_data, GError **error)
{
  OutMode mode;
  double lr = pl_pass_args_float (args, "lr");
  if (!parse_mode (pl_pass_args_string (args, "outputs"), &mode, error))
    return false;
  if (g->opset > 0 && g->opset < 13)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "grad: needs opset 13 or later (the graph has opset %d)",
                   g->opset);
      return false;
    }
  /* With the defaults (params=all, the first output), a graph without
   * anything to train is no error: the pass leaves it as it is. */
  const char *loss_name = pl_pass_args_string (args, "loss"), *spec = pl_pass_args_string (args, "params");
  bool all = strcmp (spec, "all") == 0;
  if (all && !*loss_name && g->outputs->len > 0 && !is_float_value (g->outputs->pdata[0]))
    {
      PlValue *first = g->outputs->pdata[0];
      pl_pass_report_printf (report, "the first output '%s' is %s: nothing to differentiate", first->name,
                             pl_dtype_name (first->dtype));
      return true;
    }
  PlValue *loss = find_loss (g, loss_name, error);
  if (!loss)
    return false;
  int n;
  g_autofree PlNode **order = pl_graph_topo_order (g, &n, error);
  if (!order)
    return false;
  g_autoptr (GHashTable) cone = loss_cone (order, n, loss);
  g_autoptr (GPtrArray) params = collect_params (g, spec, cone, error);
  if (!params)
    return false;

  PlGrad G = {
    .g = g,
    .grads = g_hash_table_new (NULL, NULL),
    .active = g_hash_table_new (NULL, NULL),
    .added_nodes = g_ptr_array_new (),
    .added_values = g_ptr_array_new (),
    .added_set = g_hash_table_new (NULL, NULL),
    .scalars = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL),
    .name_next = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL),
  };
  mark_active (&G, order, n, params, cone);
  if (!g_hash_table_contains (G.active, loss))
    {
      grad_clear (&G);
      if (all)
        {
          pl_pass_report_printf (report, "the loss '%s' depends on no float constant of more than one element: "
                                 "nothing to differentiate", loss->name);
          return true;
        }
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "grad: the loss '%s' depends on none of the parameters (%s)",
                   loss->name, spec);
      return false;
    }
  if (!check_rules (&G, order, n, error))
    {
      grad_clear (&G);
      return false;
    }

  PlGraphStats before, after;
  pl_graph_stats (g, 1, &before);
  PlValue *sum = NULL;
  g_autoptr (GPtrArray) outs = g_ptr_array_new ();
  int n_unreached = 0;
  seed (&G, loss, &sum);
  backward (&G, order, n);
  guint n_backward = G.added_nodes->len;
  if (sum)
    g_ptr_array_add (outs, sum);
  if (!pl_value_is_output (loss))
    g_ptr_array_insert (outs, 0, loss);
  add_param_outputs (&G, params, mode, lr, outs, &n_unreached);
  if (G.error)
    {
      rollback (&G);
      g_propagate_error (error, g_steal_pointer (&G.error));
      grad_clear (&G);
      return false;
    }
  for (guint i = 0; i < outs->len; i++)
    pl_graph_add_output (g, outs->pdata[i]);
  pl_graph_stats (g, 1, &after);
  report_result (report, &G, loss, sum, params, n_unreached, n_backward, G.added_nodes->len - n_backward, mode,
                 lr, &before, &after);
  report->changed = true;
  grad_clear (&G);
  return true;
}

static const PlPassParam params_table[] = {
  { "loss", PL_PARAM_STRING, "", "the value to differentiate (default: the first output); a non-scalar is summed" },
  { "lr", PL_PARAM_FLOAT, "0.01", "learning rate of the SGD update W.new = W - lr * dW" },
  { "params", PL_PARAM_STRING, "all",
    "all (every float constant of more than one element on the loss's path) or a comma list of names" },
  { "outputs", PL_PARAM_STRING, "updates", "updates (W.new), grads (W.grad) or both" },
};

PlPass *
pl_pass_grad_new (void)
{
  return pl_pass_new ("grad",
                      "reverse-mode autodiff: a training step (forward, backward, SGD update) from a forward "
                      "graph with a loss",
                      params_table, G_N_ELEMENTS (params_table), run, NULL, NULL);
}

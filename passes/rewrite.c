/* rewrite.c — shared building blocks for passes (see rewrite.h). */
#define G_LOG_DOMAIN "passlab"
#include "rewrite.h"

#include "ops-util.h"

PlValue *
pl_rw_const_ints (PlGraph *g, const char *base, const int64_t *v, int n)
{
  g_autoptr (PlTensor) t = pl_tensor_new (PL_DTYPE_I64, 1, (int64_t[]) { n }, NULL);
  for (int i = 0; i < n; i++)
    ((int64_t *) t->data)[i] = v[i];
  g_autofree char *name = pl_graph_unique_name (g, base);
  return pl_graph_add_constant (g, name, t, NULL);
}

PlValue *
pl_rw_const_scalar (PlGraph *g, const char *base, PlDType dtype, double v)
{
  g_autoptr (PlTensor) t = pl_tensor_new_scalar (dtype, v);
  g_autofree char *name = pl_graph_unique_name (g, base);
  return pl_graph_add_constant (g, name, t, NULL);
}

PlNode *
pl_rw_add_op (PlGraph *g, const char *op_type, const char *base, int n_inputs, PlValue *const *inputs,
              GError **error)
{
  g_autofree char *name = pl_graph_unique_name (g, base);
  PlNode *node = pl_graph_add_node (g, op_type, NULL, name, n_inputs, inputs, 1,
                                    (const char *const[]) { name }, error);
  if (!node)
    return NULL;
  if (!pl_node_infer (node, error))
    {
      pl_graph_remove_node (g, node);
      return NULL;
    }
  return node;
}

PlTensor *
pl_rw_constant (const PlValue *v)
{
  return pl_value_constant (v);
}

bool
pl_rw_const_ints_of (const PlValue *v, int64_t **out, int *n)
{
  PlTensor *t = pl_rw_constant (v);
  if (!t || !pl_dtype_is_int (t->dtype))
    return false;
  *out = pl_tensor_to_ints (t, n);
  return true;
}

bool
pl_rw_const_all_equal (const PlValue *v, double x)
{
  PlTensor *t = pl_rw_constant (v);
  if (!t)
    return false;
  for (int64_t i = 0; i < t->numel; i++)
    if (pl_tensor_get_f64 (t, i) != x)
      return false;
  return true;
}

bool
pl_rw_operands_constant (const PlNode *node)
{
  for (int i = 1; i < node->n_inputs; i++)
    if (node->inputs[i] && !pl_rw_constant (node->inputs[i]))
      return false;
  return true;
}

bool
pl_rw_same_shape (const PlShape *a, const PlShape *b)
{
  if (a->rank < 0 || a->rank != b->rank)
    return false;
  for (int i = 0; i < a->rank; i++)
    if (!pl_dim_equal (a->dims[i], b->dims[i]))
      return false;
  return true;
}

/* Sets the bit of axis (in [-rank, rank); a scalar takes 0 or -1) in *mask. */
static bool
mask_axis (int64_t axis, int rank, guint32 *mask)
{
  int a;
  if (!pl_normalize_axis (axis, MAX (rank, 1), &a, NULL))
    return false;
  *mask |= 1u << a;
  return true;
}

/* A Reduce* op's axes: the constant input 1, else the attribute. */
static bool
reduce_op_axes (const PlNode *node, int rank, guint32 *mask)
{
  g_autofree int64_t *axes = NULL;
  int n = 0;
  if (node->n_inputs > 1 && node->inputs[1])
    {
      if (!pl_rw_const_ints_of (node->inputs[1], &axes, &n))
        return false;
    }
  else
    {
      const int64_t *v;
      if (pl_node_attr_ints (node, "axes", &v, &n))
        axes = g_memdup2 (v, sizeof (int64_t) * MAX (n, 1));
    }
  if (n == 0)
    {
      if (pl_node_attr_int (node, "noop_with_empty_axes", 0))
        return false;
      *mask = (guint32) ((1u << rank) - 1);
      return true;
    }
  for (int i = 0; i < n; i++)
    if (!mask_axis (axes[i], rank, mask))
      return false;
  return true;
}

bool
pl_rw_reduction_axes (const PlNode *node, guint32 *mask)
{
  const PlValue *x = node->n_inputs > 0 ? node->inputs[0] : NULL;
  *mask = 0;
  if (!x || x->shape.rank < 0)
    return false;
  int rank = x->shape.rank;
  switch (node->op)
    {
    case PL_OP_ReduceSum: case PL_OP_ReduceMean: case PL_OP_ReduceMax: case PL_OP_ReduceMin:
    case PL_OP_ReduceProd: case PL_OP_ReduceL1: case PL_OP_ReduceL2: case PL_OP_ReduceLogSum:
    case PL_OP_ReduceLogSumExp: case PL_OP_ReduceSumSquare:
      return reduce_op_axes (node, rank, mask);
    case PL_OP_ArgMax:
    case PL_OP_ArgMin:
      return mask_axis (pl_node_attr_int (node, "axis", 0), rank, mask);
    case PL_OP_Softmax:
    case PL_OP_LogSoftmax:
    case PL_OP_Hardmax:
    case PL_OP_LayerNormalization:
      {
        bool layer_norm = node->op == PL_OP_LayerNormalization;
        bool tail = layer_norm || (node->graph->opset > 0 && node->graph->opset < 13);
        int a;
        if (!pl_normalize_axis (pl_node_attr_int (node, "axis", tail && !layer_norm ? 1 : -1), MAX (rank, 1), &a,
                                NULL))
          return false;
        for (int i = a; i < (tail ? rank : a + 1); i++)
          *mask |= 1u << i;
        return true;
      }
    default:
      return false;
    }
}

void
pl_rw_copy_attrs (PlNode *dst, const PlNode *src)
{
  for (int i = 0; i < src->n_attrs; i++)
    {
      PlAttr *slot = (PlAttr *) pl_node_attr (dst, src->attrs[i].name);
      if (slot)
        pl_attr_clear (slot);
      else
        {
          dst->attrs = g_renew (PlAttr, dst->attrs, dst->n_attrs + 1);
          slot = &dst->attrs[dst->n_attrs++];
        }
      pl_attr_copy (slot, &src->attrs[i]);
    }
}

PlNode *
pl_rw_sole_user (const PlValue *v)
{
  if (!v || v->n_uses != 1 || pl_value_is_output (v))
    return NULL;
  return v->uses[0].node;
}

static bool
node_is_dead (const PlNode *node, GHashTable *dead)
{
  for (int i = 0; i < node->n_outputs; i++)
    {
      const PlValue *v = node->outputs[i];
      if (!v)
        continue;
      if (pl_value_is_output (v))
        return false;
      for (int u = 0; u < v->n_uses; u++)
        if (!g_hash_table_contains (dead, v->uses[u].node))
          return false;
    }
  return true;
}

int
pl_rw_dce (PlGraph *g)
{
  /* Walk in reverse topological order: a node is dead when everything that
   * reads its outputs is dead. Control-edge targets keep what they wait on
   * alive only through data, as control edges carry no values. */
  int n;
  g_autofree PlNode **order = pl_graph_topo_order (g, &n, NULL);
  if (!order)
    return 0;
  g_autoptr (GHashTable) outputs = g_hash_table_new (NULL, NULL);
  for (guint i = 0; i < g->outputs->len; i++)
    g_hash_table_add (outputs, g->outputs->pdata[i]);
  g_autoptr (GHashTable) dead = g_hash_table_new (NULL, NULL);
  g_autoptr (GPtrArray) doomed = g_ptr_array_new ();
  for (int k = n - 1; k >= 0; k--)
    if (node_is_dead (order[k], dead))
      {
        g_hash_table_add (dead, order[k]);
        g_ptr_array_add (doomed, order[k]);
      }
  pl_graph_remove_nodes (g, (PlNode *const *) doomed->pdata, (int) doomed->len);

  /* Constants nobody reads any more. */
  g_autoptr (GPtrArray) unused = g_ptr_array_new ();
  for (guint i = 0; i < g->values->len; i++)
    {
      PlValue *v = g->values->pdata[i];
      if (v->constant && v->n_uses == 0 && !g_hash_table_contains (outputs, v))
        g_ptr_array_add (unused, v);
    }
  pl_graph_remove_values (g, (PlValue *const *) unused->pdata, (int) unused->len);
  return (int) doomed->len;
}

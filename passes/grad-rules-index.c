/* grad-rules-index.c — gradient rules of the grad pass for the ops that
 * move data by index: TopK, GatherND, ScatterND and ScatterElements (Gather
 * and GatherElements are in grad-rules.c).
 *
 * A gather's gradient scatters dy back with reduction "add" (an index read
 * twice gets both contributions). A scatter's gradient is a gather of dy
 * for the updates and dy with the written places zeroed for the data — for
 * reduction "none" that is right only when no place is written twice (the
 * last write wins, the earlier updates get no gradient), so the rule wants
 * constant indices without repeats and says so otherwise; reduction "add"
 * has no such condition. Other reductions (mul, max, min) are refused.
 */
#define G_LOG_DOMAIN "passlab"
#include "grad-private.h"
#include "ops-util.h"

#include <string.h>

/* The node's index input as constant i64 values, or NULL (with the rule
 * failing) when it is not a constant. */
static PlTensor *
constant_indices (PlGrad *G, const PlNode *n, const char *why)
{
  PlTensor *t = pl_value_constant (n->inputs[1]);
  if (!t)
    pl_grad_fail (G, PL_ERROR_UNSUPPORTED, "%s needs constant indices (%s)", pl_op_name (n->op), why);
  return t;
}

/* Whether the flat positions (n of them) hold a repeat. */
static bool
has_repeat (const int64_t *pos, int64_t n)
{
  g_autoptr (GHashTable) seen = g_hash_table_new (g_int64_hash, g_int64_equal);
  for (int64_t i = 0; i < n; i++)
    {
      if (g_hash_table_contains (seen, &pos[i]))
        return true;
      g_hash_table_add (seen, (gpointer) &pos[i]);
    }
  return false;
}

/* reduction "none" or "add" (*add); anything else fails the rule. */
static bool
scatter_reduction (PlGrad *G, const PlNode *n, bool *add)
{
  const char *r = pl_node_attr_string (n, "reduction", "none");
  *add = strcmp (r, "add") == 0;
  if (*add || strcmp (r, "none") == 0)
    return true;
  pl_grad_fail (G, PL_ERROR_UNSUPPORTED, "%s with reduction '%s' has no gradient rule", pl_op_name (n->op), r);
  return false;
}

/* TopK: the values' gradient goes back to the places the indices name. */
static bool
rule_topk (PlGrad *G, const PlNode *n, PlValue *const *dy, const bool *need)
{
  PlValue *x = n->inputs[0];
  int a;
  if (!need[0] || !dy[0] || !pl_grad_axis_of (G, n, "axis", -1, x->shape.rank, &a))
    return !G->error;
  PlNode *s = pl_grad_node (G, "ScatterElements", 3, (PlValue *[]) { pl_grad_zeros_like (G, x), n->outputs[1], dy[0] }, 1);
  if (s)
    pl_node_set_attr_int (s, "axis", a), pl_node_set_attr_string (s, "reduction", "add");
  pl_grad_give (G, x, pl_grad_finish (G, s));
  return !G->error;
}

/* GatherND (batch_dims 0): dy scattered back with add. */
static bool
rule_gather_nd (PlGrad *G, const PlNode *n, PlValue *const *dy, const bool *need)
{
  if (!need[0])
    return true;
  if (pl_node_attr_int (n, "batch_dims", 0) != 0)
    {
      pl_grad_fail (G, PL_ERROR_UNSUPPORTED, "GatherND with batch_dims has no gradient rule");
      return false;
    }
  PlValue *x = n->inputs[0];
  PlNode *s = pl_grad_node (G, "ScatterND", 3, (PlValue *[]) { pl_grad_zeros_like (G, x), n->inputs[1], dy[0] }, 1);
  if (s)
    pl_node_set_attr_string (s, "reduction", "add");
  pl_grad_give (G, x, pl_grad_finish (G, s));
  return !G->error;
}

/* The flat positions of data (dims) that ScatterND's constant indices t
 * write (each index tuple names a slice; its first element stands for it). */
static int64_t *
scatter_nd_positions (const PlTensor *t, const int64_t *dims, int64_t *n)
{
  const int q = t->rank, k = (int) t->dims[q - 1];
  *n = k ? t->numel / k : 0;
  int64_t *pos = g_new0 (int64_t, MAX (*n, 1));
  for (int64_t i = 0; i < *n; i++)
    for (int j = 0; j < k; j++)
      {
        int64_t v = pl_tensor_get_i64 (t, i * k + j);
        pos[i] = pos[i] * dims[j] + (v < 0 ? v + dims[j] : v);
      }
  return pos;
}

/* The flat positions of data (dims) that ScatterElements' constant indices
 * t write along axis a (t's shape is the updates'). */
static int64_t *
scatter_elements_positions (const PlTensor *t, const int64_t *dims, int a)
{
  const int r = t->rank;
  int64_t at[PL_MAX_RANK] = { 0 };
  int64_t *pos = g_new0 (int64_t, MAX (t->numel, 1));
  for (int64_t i = 0; i < t->numel; i++)
    {
      int64_t p = 0;
      for (int d = 0; d < r; d++)
        {
          int64_t c = at[d];
          if (d == a)
            {
              c = pl_tensor_get_i64 (t, i);
              c = c < 0 ? c + dims[d] : c;
            }
          p = p * dims[d] + c;
        }
      pos[i] = p;
      for (int d = r - 1; d >= 0 && ++at[d] == t->dims[d]; d--)
        at[d] = 0;
    }
  return pos;
}

/* ScatterND and ScatterElements: updates get a gather of dy; data gets dy
 * (add) or dy with the written places zeroed (none). */
static bool
rule_scatter (PlGrad *G, const PlNode *n, PlValue *const *dy, const bool *need)
{
  bool add, elements = n->op != PL_OP_ScatterND;
  int a = 0;
  if (!scatter_reduction (G, n, &add))
    return false;
  PlValue *data = n->inputs[0], *idx = n->inputs[1], *upd = n->inputs[2];
  if (elements && !pl_grad_axis_of (G, n, "axis", 0, data->shape.rank, &a))
    return false;
  if (!add)
    {
      PlTensor *t = constant_indices (G, n, "reduction 'none': a place written twice keeps only its last update");
      int64_t dims[PL_MAX_RANK];
      if (!t || !pl_grad_require_static (G, data, dims))
        return false;
      int64_t count = t->numel;
      g_autofree int64_t *pos = elements ? scatter_elements_positions (t, dims, a)
                                         : scatter_nd_positions (t, dims, &count);
      if (has_repeat (pos, count))
        {
          pl_grad_fail (G, PL_ERROR_UNSUPPORTED,
                        "%s with reduction 'none' and a place written twice (the last update wins) has no gradient rule",
                        pl_op_name (n->op));
          return false;
        }
    }
  if (need[2])
    {
      PlNode *g = pl_grad_node (G, elements ? "GatherElements" : "GatherND", 2, (PlValue *[]) { dy[0], idx }, 1);
      if (g && elements)
        pl_node_set_attr_int (g, "axis", a);
      pl_grad_give (G, upd, pl_grad_finish (G, g));
    }
  if (need[0])
    {
      PlValue *dd = dy[0];
      if (!add)
        {
          PlNode *s = pl_grad_node (G, elements ? "ScatterElements" : "ScatterND", 3,
                                    (PlValue *[]) { dy[0], idx, pl_grad_zeros_like (G, upd) }, 1);
          if (s && elements)
            pl_node_set_attr_int (s, "axis", a);
          dd = pl_grad_finish (G, s);
        }
      pl_grad_give (G, data, dd);
    }
  return !G->error;
}

PlGradRule
pl_grad_rule_index (const PlNode *n)
{
  switch (n->op)
    {
    case PL_OP_TopK:
      return rule_topk;
    case PL_OP_GatherND:
      return rule_gather_nd;
    case PL_OP_ScatterND: case PL_OP_ScatterElements: case PL_OP_Scatter:
      return rule_scatter;
    default:
      return NULL;
    }
}

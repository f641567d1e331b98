/* graph-diff.c — structural diff of two graph versions by stable node id. */
#define G_LOG_DOMAIN "passlab"
#include "graph-diff.h"

#include <string.h>

/* Values are matched by id: a value keeps its id through copies, so "reads
 * the same value" survives renaming. Constants and inputs also carry ids.
 * A value whose layout changed is not the same: its producer now writes it
 * differently (and its readers read it differently), so both show as changed. */
static bool
value_same (const PlValue *a, const PlValue *b)
{
  if (!a || !b)
    return a == b;
  return a->id == b->id && a->dtype == b->dtype && a->layout == b->layout &&
         pl_shape_equal (&a->shape, &b->shape);
}

static bool
node_equal (const PlNode *a, const PlNode *b)
{
  if (a->op != b->op || strcmp (a->op_type, b->op_type) != 0 || a->n_inputs != b->n_inputs ||
      a->n_outputs != b->n_outputs || a->n_attrs != b->n_attrs || a->n_controls != b->n_controls ||
      (a->body == NULL) != (b->body == NULL))
    return false;
  for (int i = 0; i < a->n_inputs; i++)
    if (!value_same (a->inputs[i], b->inputs[i]))
      return false;
  for (int i = 0; i < a->n_outputs; i++)
    if (!value_same (a->outputs[i], b->outputs[i]))
      return false;
  for (int i = 0; i < a->n_attrs; i++)
    if (!pl_attr_equal (&a->attrs[i], &b->attrs[i]))
      return false;
  for (int i = 0; i < a->n_controls; i++)
    if (a->controls[i].node->id != b->controls[i].node->id || a->controls[i].kind != b->controls[i].kind)
      return false;
  if (a->body && a->body->nodes->len != b->body->nodes->len)
    return false;
  return true;
}

PlGraphDiff *
pl_graph_diff (const PlGraph *before, const PlGraph *after)
{
  PlGraphDiff *d = g_new0 (PlGraphDiff, 1);
  d->added = g_array_new (FALSE, FALSE, sizeof (guint32));
  d->removed = g_array_new (FALSE, FALSE, sizeof (guint32));
  d->changed = g_array_new (FALSE, FALSE, sizeof (guint32));

  for (guint k = 0; k < before->nodes->len; k++)
    {
      const PlNode *a = before->nodes->pdata[k];
      const PlNode *b = pl_graph_node_by_id (after, a->id);
      if (!b)
        g_array_append_val (d->removed, a->id);
      else if (!node_equal (a, b))
        g_array_append_val (d->changed, a->id);
    }
  for (guint k = 0; k < after->nodes->len; k++)
    {
      const PlNode *b = after->nodes->pdata[k];
      if (!pl_graph_node_by_id (before, b->id))
        g_array_append_val (d->added, b->id);
    }
  return d;
}

void
pl_graph_diff_free (PlGraphDiff *d)
{
  if (!d)
    return;
  g_array_free (d->added, TRUE);
  g_array_free (d->removed, TRUE);
  g_array_free (d->changed, TRUE);
  g_free (d);
}

bool
pl_graph_diff_empty (const PlGraphDiff *d)
{
  return d->added->len == 0 && d->removed->len == 0 && d->changed->len == 0;
}

/* graph-verify.c — the verifier: checks every IR invariant of a graph.
 * Runs after every pass in tests and debug builds; a failure here is a bug in
 * whatever changed the graph last, so messages name the node and the rule.
 * Layouts (layout.h): non-default only on rank-4 values computed inside the
 * graph, a LayoutTransform's output in its `to` layout, and a fusion body's
 * inputs and outputs in the layouts of the node's (pl_layout_check_value). */
#define G_LOG_DOMAIN "passlab"
#include "graph.h"

#include <stdlib.h>
#include <string.h>

#define FAIL(...) do { g_set_error (error, PL_ERROR, PL_ERROR_INVALID, __VA_ARGS__); return false; } while (0)

static int
compare_uses (const void *a, const void *b)
{
  const PlUse *x = a, *y = b;
  if (x->node != y->node)
    return (uintptr_t) x->node < (uintptr_t) y->node ? -1 : 1;
  return (x->index > y->index) - (x->index < y->index);
}

static bool verify_graph (const PlGraph *g, bool in_body, GError **error);

static bool
verify_value (const PlGraph *g, const PlValue *v, bool in_body, GError **error)
{
  if (v->graph != g)
    FAIL ("value '%s' belongs to another graph", v->name);
  if (g_hash_table_lookup (g->value_by_name, v->name) != v)
    FAIL ("value '%s' is not indexed under its name", v->name);
  if (pl_graph_value_by_id (g, v->id) != v)
    FAIL ("value '%s' is not indexed under its id %u", v->name, v->id);
  int sources = (v->producer != NULL) + (v->constant != NULL) + v->is_input;
  if (sources != 1)
    FAIL ("value '%s' has %d sources (producer, constant, input); it needs exactly one", v->name, sources);
  if (v->producer)
    {
      const PlNode *p = v->producer;
      if (v->producer_index < 0 || v->producer_index >= p->n_outputs || p->outputs[v->producer_index] != v)
        FAIL ("value '%s' names node '%s' output %d as producer, but that slot holds something else",
              v->name, p->name, v->producer_index);
    }
  if (v->is_input)
    {
      bool listed = false;
      for (guint i = 0; i < g->inputs->len && !listed; i++)
        listed = g->inputs->pdata[i] == v;
      if (!listed)
        FAIL ("value '%s' is marked as an input but not listed in the graph's inputs", v->name);
    }
  if (v->constant)
    {
      PlShape s = pl_tensor_shape (v->constant);
      if (v->dtype != v->constant->dtype || !pl_shape_equal (&s, &v->shape))
        FAIL ("constant '%s' is typed differently from its data", v->name);
    }
  if (!pl_layout_check_value (v->layout, v, in_body, error))
    return false;
  /* Each listed use must read v; a use that reads v lists a distinct slot, so
   * duplicates show up as more uses than reads (counted in pl_graph_verify). */
  for (int u = 0; u < v->n_uses; u++)
    {
      const PlUse *use = &v->uses[u];
      if (use->node->graph != g || use->index < 0 || use->index >= use->node->n_inputs ||
          use->node->inputs[use->index] != v)
        FAIL ("value '%s' lists a use (node '%s', input %d) that does not read it",
              v->name, use->node->name, use->index);
    }
  if (v->n_uses > 1)
    {
      g_autofree PlUse *sorted = g_memdup2 (v->uses, sizeof (PlUse) * v->n_uses);
      qsort (sorted, v->n_uses, sizeof (PlUse), compare_uses);
      for (int u = 1; u < v->n_uses; u++)
        if (compare_uses (&sorted[u - 1], &sorted[u]) == 0)
          FAIL ("value '%s' lists the use (node '%s', input %d) twice", v->name, sorted[u].node->name,
                sorted[u].index);
    }
  return true;
}

/* Whether a stored type agrees with the inferred one. A stored type may be
 * more specific where inference knows nothing (types declared in an ONNX
 * file for outputs of data-dependent ops). */
static bool
type_refines (PlDType stored_dtype, const PlShape *stored, PlDType inferred_dtype, const PlShape *inferred)
{
  if (inferred_dtype != PL_DTYPE_UNDEFINED && stored_dtype != inferred_dtype)
    return false;
  if (inferred->rank < 0)
    return true;
  if (stored->rank != inferred->rank)
    return false;
  for (int i = 0; i < inferred->rank; i++)
    {
      PlDim a = stored->dims[i], b = inferred->dims[i];
      if (b.size < 0 && b.sym == NULL)
        continue;
      if (a.size != b.size || a.sym != b.sym)
        return false;
    }
  return true;
}

/* Re-infers the node on a scratch copy of its output types and compares. */
static bool
verify_shapes (PlNode *node, GError **error)
{
  PlDType dtypes[64];
  PlShape shapes[64];
  PlLayout layouts[64];
  int n = MIN (node->n_outputs, 64);

  for (int i = 0; i < n; i++)
    if (node->outputs[i])
      {
        dtypes[i] = node->outputs[i]->dtype;
        shapes[i] = node->outputs[i]->shape;
        layouts[i] = node->outputs[i]->layout;  /* a LayoutTransform's inference sets it */
      }
  GError *local = NULL;
  bool ok = pl_node_infer (node, &local);
  for (int i = 0; ok && i < n; i++)
    {
      PlValue *v = node->outputs[i];
      if (!v)
        continue;
      if (!type_refines (dtypes[i], &shapes[i], v->dtype, &v->shape))
        {
          g_autofree char *want = pl_shape_to_string (&v->shape);
          g_autofree char *have = pl_shape_to_string (&shapes[i]);
          g_set_error (&local, PL_ERROR, PL_ERROR_INVALID,
                       "value '%s' is typed %s%s but its producer '%s' infers %s%s",
                       v->name, pl_dtype_name (dtypes[i]), have, node->name,
                       pl_dtype_name (v->dtype), want);
          ok = false;
        }
    }
  /* Restore what was stored, so verification never changes the graph. */
  for (int i = 0; i < n; i++)
    if (node->outputs[i])
      {
        node->outputs[i]->dtype = dtypes[i];
        node->outputs[i]->shape = shapes[i];
        node->outputs[i]->layout = layouts[i];
      }
  if (!ok)
    g_propagate_error (error, local);
  return ok;
}

static bool
verify_node (const PlGraph *g, PlNode *node, GError **error)
{
  if (node->graph != g)
    FAIL ("node '%s' belongs to another graph", node->name);
  if (g_hash_table_lookup (g->node_by_name, node->name) != node)
    FAIL ("node '%s' is not indexed under its name", node->name);
  if (pl_graph_node_by_id (g, node->id) != node)
    FAIL ("node '%s' is not indexed under its id %u", node->name, node->id);
  if (node->id >= g->next_node_id)
    FAIL ("node '%s' has id %u beyond the graph's next id", node->name, node->id);
  if (node->op != pl_op_from_name (node->op_type, node->domain) && node->op != PL_OP_OPAQUE)
    FAIL ("node '%s' has op %s but op_type '%s'", node->name, pl_op_name (node->op), node->op_type);
  for (int i = 0; i < node->n_inputs; i++)
    {
      PlValue *v = node->inputs[i];
      if (!v)
        continue;
      if (v->graph != g || g_hash_table_lookup (g->value_by_name, v->name) != v)
        FAIL ("node '%s' input %d reads a value that is not in the graph", node->name, i);
    }
  for (int i = 0; i < node->n_outputs; i++)
    {
      PlValue *v = node->outputs[i];
      if (v && (v->producer != node || v->producer_index != i))
        FAIL ("node '%s' output %d is '%s', whose producer is not this slot", node->name, i, v->name);
    }
  for (int c = 0; c < node->n_controls; c++)
    {
      PlNode *p = node->controls[c].node;
      if (!p || p->graph != g || pl_graph_node_by_id (g, p->id) != p)
        FAIL ("node '%s' has a control input from a node not in the graph", node->name);
    }
  if (node->body)
    {
      /* A fusion body is closed: it reads only its own inputs and constants. */
      GError *local = NULL;
      if (!verify_graph (node->body, true, &local))
        {
          g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "body of node '%s': %s", node->name, local->message);
          g_error_free (local);
          return false;
        }
      if ((int) node->body->inputs->len != node->n_inputs)
        FAIL ("node '%s' has %d inputs but its body has %u", node->name, node->n_inputs,
              node->body->inputs->len);
      if ((int) node->body->outputs->len != node->n_outputs)
        FAIL ("node '%s' has %d outputs but its body has %u", node->name, node->n_outputs,
              node->body->outputs->len);
      /* The body's inputs and outputs stand for the node's: same layouts. */
      for (int i = 0; i < node->n_inputs + node->n_outputs; i++)
        {
          bool is_in = i < node->n_inputs;
          int k = is_in ? i : i - node->n_inputs;
          const PlValue *outer = is_in ? node->inputs[k] : node->outputs[k];
          GPtrArray *slots = is_in ? node->body->inputs : node->body->outputs;
          const PlValue *inner = g_ptr_array_index (slots, k);
          if (outer && inner->layout != outer->layout)
            FAIL ("node '%s' %s %d '%s' has layout %s but its body's '%s' has %s", node->name,
                  is_in ? "input" : "output", k, outer->name, pl_layout_name (outer->layout),
                  inner->name, pl_layout_name (inner->layout));
        }
    }
  return true;
}

bool
pl_graph_verify (const PlGraph *g, GError **error)
{
  g_return_val_if_fail (g != NULL, false);
  return verify_graph (g, false, error);
}

/* in_body: g is a fusion body, whose inputs and outputs may carry layouts. */
static bool
verify_graph (const PlGraph *g, bool in_body, GError **error)
{
  if (g_hash_table_size (g->value_by_name) != g->values->len || g_hash_table_size (g->value_by_id) != g->values->len)
    FAIL ("the value index holds %u names for %u values", g_hash_table_size (g->value_by_name), g->values->len);
  if (g_hash_table_size (g->node_by_name) != g->nodes->len || g_hash_table_size (g->node_by_id) != g->nodes->len)
    FAIL ("the node index does not match the %u nodes", g->nodes->len);
  for (guint i = 0; i < g->values->len; i++)
    if (!verify_value (g, g->values->pdata[i], in_body, error))
      return false;
  for (guint i = 0; i < g->inputs->len; i++)
    {
      PlValue *v = g->inputs->pdata[i];
      if (!v->is_input || v->graph != g)
        FAIL ("graph input %u ('%s') is not an input value of this graph", i, v->name);
    }
  for (guint i = 0; i < g->outputs->len; i++)
    {
      PlValue *v = g->outputs->pdata[i];
      if (!v || v->graph != g || g_hash_table_lookup (g->value_by_name, v->name) != v)
        FAIL ("graph output %u is not a value of this graph", i);
    }

  /* Structure first: a broken use list would otherwise look like a cycle. */
  for (guint i = 0; i < g->nodes->len; i++)
    if (!verify_node (g, g->nodes->pdata[i], error))
      return false;
  /* Every listed use reads its value (checked above), so the use lists are
   * exact when each value has as many uses as node inputs read it. */
  g_autoptr (GHashTable) reads = g_hash_table_new (NULL, NULL);
  for (guint i = 0; i < g->nodes->len; i++)
    {
      PlNode *node = g->nodes->pdata[i];
      for (int k = 0; k < node->n_inputs; k++)
        if (node->inputs[k])
          g_hash_table_insert (reads, node->inputs[k],
                               GINT_TO_POINTER (GPOINTER_TO_INT (g_hash_table_lookup (reads, node->inputs[k])) + 1));
    }
  for (guint i = 0; i < g->values->len; i++)
    {
      PlValue *v = g->values->pdata[i];
      int n = GPOINTER_TO_INT (g_hash_table_lookup (reads, v));
      if (n != v->n_uses)
        FAIL ("value '%s' is read by %d node inputs but lists %d uses", v->name, n, v->n_uses);
    }
  int n;
  g_autofree PlNode **order = pl_graph_topo_order (g, &n, error);
  if (!order)
    return false;
  for (int i = 0; i < n; i++)
    if (!verify_shapes (order[i], error))
      return false;
  return true;
}

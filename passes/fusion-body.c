/* fusion-body.c — the body of one fusion group, built before the graph
 * changes: the members in topological order, the values that escape the
 * group (the node's outputs), the body inputs in operand order, small
 * constants copied in, and a check that every member infers inside the body
 * as it did outside. fusion.c commits prepared groups to the graph; the
 * conventions the body follows are in fusion.h.
 */
#define G_LOG_DOMAIN "passlab"
#include "fusion-private.h"

#include "rewrite.h"

/* Constants with at most this many elements (shapes, axes, scalars) are
 * copied into a body so inference and code generation see their data;
 * larger ones (weights) stay outside and enter as body inputs. */
#define SMALL_CONSTANT 64

/* Same rank and, dim by dim, the same static size, the same symbol, or both
 * unknown. */
static bool
same_type (const PlValue *a, const PlValue *b)
{
  if (a->dtype != b->dtype || a->shape.rank != b->shape.rank)
    return false;
  for (int i = 0; i < a->shape.rank; i++)
    {
      PlDim x = a->shape.dims[i], y = b->shape.dims[i];
      if (x.size != y.size || x.sym != y.sym)
        return false;
    }
  return true;
}

/* --- one group's body ------------------------------------------------------------- */

void
pl_fusion_group_clear (PlFusionGroup *gr)
{
  g_clear_pointer (&gr->nodes, g_ptr_array_unref);
  g_clear_pointer (&gr->members, g_hash_table_unref);
  g_clear_pointer (&gr->inputs, g_ptr_array_unref);
  g_clear_pointer (&gr->outputs, g_ptr_array_unref);
  g_clear_pointer (&gr->copied, g_ptr_array_unref);
  g_clear_pointer (&gr->body, pl_graph_free);
}

static void
release_one (GHashTable *pending, GPtrArray *order, PlNode *s)
{
  int k = GPOINTER_TO_INT (g_hash_table_lookup (pending, s)) - 1;
  g_hash_table_insert (pending, s, GINT_TO_POINTER (k));
  if (k == 0)
    g_ptr_array_add (order, s);
}

/* Orders the members topologically along the edges among them (Kahn's
 * algorithm; data and control edges). */
static GPtrArray *
sort_members (PlNode *const *nodes, int n, GHashTable *members)
{
  g_autoptr (GHashTable) pending = g_hash_table_new (NULL, NULL);
  /* member -> members waiting on it through a control edge */
  g_autoptr (GHashTable) waiting = g_hash_table_new_full (NULL, NULL, NULL, (GDestroyNotify) g_ptr_array_unref);
  GPtrArray *order = g_ptr_array_sized_new (n);
  for (int i = 0; i < n; i++)
    {
      int k = 0;
      for (int j = 0; j < nodes[i]->n_inputs; j++)
        if (nodes[i]->inputs[j] && g_hash_table_contains (members, nodes[i]->inputs[j]->producer))
          k++;
      for (int c = 0; c < nodes[i]->n_controls; c++)
        {
          PlNode *after = nodes[i]->controls[c].node;
          if (!g_hash_table_contains (members, after))
            continue;
          GPtrArray *w = g_hash_table_lookup (waiting, after);
          if (!w)
            g_hash_table_insert (waiting, after, w = g_ptr_array_new ());
          g_ptr_array_add (w, nodes[i]);
          k++;
        }
      g_hash_table_insert (pending, nodes[i], GINT_TO_POINTER (k));
      if (k == 0)
        g_ptr_array_add (order, nodes[i]);
    }
  for (guint at = 0; at < order->len; at++)
    {
      PlNode *m = order->pdata[at];
      for (int o = 0; o < m->n_outputs; o++)
        for (int u = 0; m->outputs[o] && u < m->outputs[o]->n_uses; u++)
          if (g_hash_table_contains (members, m->outputs[o]->uses[u].node))
            release_one (pending, order, m->outputs[o]->uses[u].node);
      GPtrArray *w = g_hash_table_lookup (waiting, m);
      for (guint i = 0; w && i < w->len; i++)
        release_one (pending, order, w->pdata[i]);
    }
  return order;
}

/* Whether v is read outside the group or is a graph output. */
static bool
value_escapes (const PlValue *v, GHashTable *members, GHashTable *graph_outputs)
{
  if (g_hash_table_contains (graph_outputs, v))
    return true;
  for (int u = 0; u < v->n_uses; u++)
    if (!g_hash_table_contains (members, v->uses[u].node))
      return true;
  return false;
}

/* Whether an outer value enters a body as a copied constant (small enough
 * that inference and code generation want its data) rather than an input. */
static bool
copied_as_constant (const PlValue *v)
{
  PlTensor *t = pl_rw_constant (v);
  return t && t->numel <= SMALL_CONSTANT;
}

/* Appends v to the body inputs unless the group makes it, it is copied as a
 * constant, or it is already there. */
static void
add_input (PlFusionGroup *gr, PlValue *v, GHashTable *seen)
{
  if (v && !g_hash_table_contains (gr->members, v->producer) && !copied_as_constant (v) &&
      g_hash_table_add (seen, v))
    g_ptr_array_add (gr->inputs, v);
}

/* The body inputs in operand order: a depth-first walk from the outputs (in
 * order) through each node's operands (in slot order) meets them in the
 * order a library call takes them (MatMul(Transpose(B))... still reads A
 * first). Inputs only dead members read come last. */
static void
order_inputs (PlFusionGroup *gr)
{
  g_autoptr (GHashTable) seen = g_hash_table_new (NULL, NULL);
  g_autoptr (GHashTable) visited = g_hash_table_new (NULL, NULL);
  g_autoptr (GArray) stack = g_array_new (FALSE, FALSE, sizeof (PlUse));  /* node, next slot */
  for (guint j = 0; j < gr->outputs->len; j++)
    {
      PlNode *top = ((PlValue *) gr->outputs->pdata[j])->producer;
      if (!g_hash_table_add (visited, top))
        continue;
      g_array_append_val (stack, ((PlUse) { top, 0 }));
      while (stack->len > 0)
        {
          PlUse *f = &g_array_index (stack, PlUse, stack->len - 1);
          if (f->index >= f->node->n_inputs)
            {
              g_array_set_size (stack, stack->len - 1);
              continue;
            }
          PlValue *v = f->node->inputs[f->index++];
          if (v && g_hash_table_contains (gr->members, v->producer))
            {
              if (g_hash_table_add (visited, v->producer))
                g_array_append_val (stack, ((PlUse) { v->producer, 0 }));
            }
          else
            add_input (gr, v, seen);
        }
    }
  for (guint i = 0; i < gr->nodes->len; i++)
    {
      PlNode *m = gr->nodes->pdata[i];
      for (int k = 0; k < m->n_inputs; k++)
        add_input (gr, m->inputs[k], seen);
    }
}

/* Copies one member into the body, reading its inputs through vmap (small
 * constants are copied in when first read). */
static bool
copy_member (PlFusionGroup *gr, PlNode *m, GHashTable *vmap, GHashTable *nmap, GError **error)
{
  g_autofree PlValue **ins = g_new0 (PlValue *, MAX (m->n_inputs, 1));
  g_autofree const char **outs = g_new0 (const char *, MAX (m->n_outputs, 1));
  for (int i = 0; i < m->n_inputs; i++)
    {
      PlValue *v = m->inputs[i];
      if (!v || (ins[i] = g_hash_table_lookup (vmap, v)))
        continue;
      if (!(ins[i] = pl_graph_add_constant (gr->body, v->name, pl_rw_constant (v), error)))
        return false;
      g_ptr_array_add (gr->copied, v);
      g_hash_table_insert (vmap, v, ins[i]);
    }
  for (int o = 0; o < m->n_outputs; o++)
    outs[o] = m->outputs[o] ? m->outputs[o]->name : "";
  PlNode *c = pl_graph_add_node (gr->body, m->op_type, m->domain, m->name, m->n_inputs, ins,
                                 m->n_outputs, outs, error);
  if (!c)
    return false;
  pl_rw_copy_attrs (c, m);
  if (m->body)
    pl_node_set_body (c, pl_graph_copy (m->body));
  for (int k = 0; k < m->n_controls; k++)
    {
      PlNode *after = g_hash_table_lookup (nmap, m->controls[k].node);
      if (after)
        pl_node_add_control (c, after, m->controls[k].kind);
    }
  for (int o = 0; o < m->n_outputs; o++)
    if (m->outputs[o])
      {
        c->outputs[o]->layout = m->outputs[o]->layout;  /* a value keeps its layout in the body */
        g_hash_table_insert (vmap, m->outputs[o], c->outputs[o]);
      }
  g_hash_table_insert (nmap, m, c);
  return true;
}

/* Builds gr's body from its members without touching the outer graph, and
 * checks it infers the types the originals had. */
bool
pl_fusion_group_prepare (PlFusionGroup *gr, PlGraph *g, PlNode *const *nodes, int n,
                         GHashTable *graph_outputs, GError **error)
{
  gr->members = g_hash_table_new (NULL, NULL);
  for (int i = 0; i < n; i++)
    {
      if (!nodes[i] || nodes[i]->graph != g)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "a node to fuse is not in graph '%s'", g->name);
          return false;
        }
      if (!g_hash_table_add (gr->members, nodes[i]))
        {
          g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "node '%s' is listed twice", nodes[i]->name);
          return false;
        }
    }
  gr->nodes = sort_members (nodes, n, gr->members);
  gr->inputs = g_ptr_array_new ();
  gr->outputs = g_ptr_array_new ();
  gr->copied = g_ptr_array_new ();
  for (guint i = 0; i < gr->nodes->len; i++)
    {
      PlNode *m = gr->nodes->pdata[i];
      for (int o = 0; o < m->n_outputs; o++)
        if (m->outputs[o] && value_escapes (m->outputs[o], gr->members, graph_outputs))
          g_ptr_array_add (gr->outputs, m->outputs[o]);
    }
  if (gr->outputs->len == 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID,
                   "nothing outside the %d nodes starting at '%s' reads their results", n,
                   ((PlNode *) gr->nodes->pdata[0])->name);
      return false;
    }

  gr->body = pl_graph_new ("fusion");
  gr->body->opset = g->opset;
  g_autoptr (GHashTable) vmap = g_hash_table_new (NULL, NULL);
  g_autoptr (GHashTable) nmap = g_hash_table_new (NULL, NULL);
  order_inputs (gr);
  for (guint i = 0; i < gr->inputs->len; i++)
    {
      PlValue *v = gr->inputs->pdata[i];
      PlValue *in = pl_graph_add_input (gr->body, v->name, v->dtype, &v->shape, error);
      if (!in)
        return false;
      in->layout = v->layout;  /* so a kernel planned from the body sees the real layouts */
      g_hash_table_insert (vmap, v, in);
    }
  for (guint i = 0; i < gr->nodes->len; i++)
    if (!copy_member (gr, gr->nodes->pdata[i], vmap, nmap, error))
      return false;
  for (guint j = 0; j < gr->outputs->len; j++)
    pl_graph_add_output (gr->body, g_hash_table_lookup (vmap, gr->outputs->pdata[j]));

  /* The body's nodes went in in topological order: infer them in that order. */
  for (guint i = 0; i < gr->body->nodes->len; i++)
    {
      GError *local = NULL;
      if (!pl_node_infer (gr->body->nodes->pdata[i], &local))
        {
          g_set_error (error, PL_ERROR, local->code, "the fused body does not infer: %s", local->message);
          g_error_free (local);
          return false;
        }
    }
  /* Every value must infer as it did outside (the first that does not is
   * the one to blame, usually a view whose shape operand is computed). */
  for (guint i = 0; i < gr->nodes->len; i++)
    {
      PlNode *m = gr->nodes->pdata[i];
      for (int o = 0; o < m->n_outputs; o++)
        if (m->outputs[o] && !same_type (m->outputs[o], g_hash_table_lookup (vmap, m->outputs[o])))
          {
            g_set_error (error, PL_ERROR, PL_ERROR_SHAPE,
                         "inside a fusion '%s' would lose its type (its shape depends on values computed "
                         "outside the fused nodes)", m->outputs[o]->name);
            return false;
          }
    }
  return true;
}

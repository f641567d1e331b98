/* fusion.c — building Fusion nodes (one, or many in one batch) and inlining
 * one again: the machinery every fusion pass shares.
 *
 * Building is two-phase so that nothing changes when a group cannot be
 * fused: every group's body is prepared first (fusion-body.c), then the
 * groups are committed one by one, and the fused nodes go in one batch
 * removal. PlFusionPlan, the planner passes grow groups on before anything
 * changes, is in fusion-plan.c with the cycle checks. Conventions of fusion
 * nodes: see fusion.h.
 */
#define G_LOG_DOMAIN "passlab"
#include "fusion-private.h"

#include "ops-util.h"
#include "rewrite.h"

/* --- committing groups ------------------------------------------------------------ */

/* "fusion_<k>" for the first k from *next that names neither a node nor a value. */
static char *
fusion_name (PlGraph *g, int *next)
{
  for (;; (*next)++)
    {
      char *name = g_strdup_printf ("fusion_%d", *next);
      if (!g_hash_table_contains (g->node_by_name, name) && !g_hash_table_contains (g->value_by_name, name))
        {
          (*next)++;
          return name;
        }
      g_free (name);
    }
}

/* Adds the fusion node for a prepared group and moves every reader of the
 * members' results onto it; the members stay, unread, for a batch removal. */
static bool
group_commit (PlFusionGroup *gr, PlGraph *g, int *name_counter, GHashTable *replaced, GError **error)
{
  /* Groups committed before this one replaced some of the values it reads. */
  for (guint i = 0; i < gr->inputs->len; i++)
    {
      PlValue *now = g_hash_table_lookup (replaced, gr->inputs->pdata[i]);
      if (now)
        gr->inputs->pdata[i] = now;
    }
  int n_out = (int) gr->outputs->len;
  g_autofree const char **names = g_new0 (const char *, n_out);
  g_autoptr (GPtrArray) keep = g_ptr_array_new_with_free_func (g_free);
  /* The fusion's outputs take over the names; the originals step aside. */
  for (int j = 0; j < n_out; j++)
    {
      PlValue *v = gr->outputs->pdata[j];
      char *name = g_strdup (v->name);
      g_ptr_array_add (keep, name);
      names[j] = name;
      g_autofree char *base = g_strdup_printf ("%s.unfused", v->name);
      g_autofree char *tmp = pl_graph_unique_name (g, base);
      if (!pl_value_rename (v, tmp, error))
        return false;
    }
  g_autofree char *fname = fusion_name (g, name_counter);
  gr->fusion = pl_graph_add_node (g, "Fusion", NULL, fname, (int) gr->inputs->len,
                                  (PlValue *const *) gr->inputs->pdata, n_out, names, error);
  if (!gr->fusion)
    return false;
  g_free (gr->body->name);
  gr->body->name = g_strdup (fname);
  pl_node_set_body (gr->fusion, g_steal_pointer (&gr->body));
  pl_node_set_attr_string (gr->fusion, "kind", gr->kind);
  /* The body was inferred with these input types in group_prepare: its
   * outputs' types are the node's (what infer_fusion would compute again). */
  for (int j = 0; j < n_out; j++)
    {
      PlValue *inner = gr->fusion->body->outputs->pdata[j];
      pl_set_output (gr->fusion, j, inner->dtype, &inner->shape);
      gr->fusion->outputs[j]->layout = inner->layout;
    }
  for (int j = 0; j < n_out; j++)
    {
      pl_value_replace_uses (gr->outputs->pdata[j], gr->fusion->outputs[j]);
      g_hash_table_insert (replaced, gr->outputs->pdata[j], gr->fusion->outputs[j]);
    }
  return true;
}

/* Unhooks every doomed node from the values it reads, value by value. A use
 * list is searched from its front and the last use fills the hole, so taking
 * a value's doomed readers from the front costs one step each while they
 * lead the list: a constant read by 50,000 fused nodes is unhooked in
 * linear time, where unhooking node by node would be quadratic. */
static void
detach_all (GPtrArray *doomed, GHashTable *is_doomed)
{
  g_autoptr (GHashTable) done = g_hash_table_new (NULL, NULL);
  for (guint i = 0; i < doomed->len; i++)
    {
      PlNode *m = doomed->pdata[i];
      for (int k = 0; k < m->n_inputs; k++)
        {
          PlValue *v = m->inputs[k];
          if (!v || !g_hash_table_add (done, v))
            continue;
          for (int u = 0; u < v->n_uses;)
            {
              PlUse use = v->uses[u];
              if (g_hash_table_contains (is_doomed, use.node))
                pl_node_set_input (use.node, use.index, NULL);
              else
                u++;
            }
        }
    }
}

/* Control edges that touched a member now touch its fusion node (edges
 * inside one group were copied into its body); the batch removal then drops
 * the originals' edges. */
static void
move_controls (PlGraph *g, GHashTable *fusion_of)
{
  if (g->n_control_edges == 0)
    return;
  g_autoptr (GPtrArray) adds = g_ptr_array_new_with_free_func (g_free);
  for (guint k = 0; k < g->nodes->len; k++)
    {
      PlNode *n = g->nodes->pdata[k];
      PlNode *src = g_hash_table_lookup (fusion_of, n);
      for (int c = 0; c < n->n_controls; c++)
        {
          PlNode *after = n->controls[c].node;
          PlNode *dst = g_hash_table_lookup (fusion_of, after);
          if (!src && !dst)
            continue;
          PlNode *from = src ? src : n, *to = dst ? dst : after;
          if (from == to)
            continue;
          PlControl *e = g_new (PlControl, 2);
          e[0] = (PlControl) { from, n->controls[c].kind };
          e[1] = (PlControl) { to, n->controls[c].kind };
          g_ptr_array_add (adds, e);
        }
    }
  for (guint i = 0; i < adds->len; i++)
    {
      PlControl *e = adds->pdata[i];
      pl_node_add_control (e[0].node, e[1].node, e[0].kind);
    }
}

/* Removes the small constants (and Constant nodes) only the fused nodes
 * read. graph.h removes a value by scanning the value list, so when that
 * would cost more than ORPHAN_BUDGET steps the unused constants stay for
 * `simplify` (harmless: nothing reads them). */
#define ORPHAN_BUDGET (1 << 24)

static void
drop_orphans (PlGraph *g, PlFusionGroup *groups, int n_groups, GHashTable *graph_outputs,
              GHashTable *doomed, GPtrArray *doomed_list)
{
  g_autoptr (GHashTable) seen = g_hash_table_new (NULL, NULL);
  g_autoptr (GPtrArray) values = g_ptr_array_new ();
  for (int i = 0; i < n_groups; i++)
    for (guint k = 0; groups[i].copied && k < groups[i].copied->len; k++)
      {
        PlValue *v = groups[i].copied->pdata[k];
        if (!g_hash_table_add (seen, v) || v->n_uses > 0 || g_hash_table_contains (graph_outputs, v))
          continue;
        if (!v->producer)
          g_ptr_array_add (values, v);
        else if (v->producer->op == PL_OP_Constant && g->n_control_edges == 0 &&
                 g_hash_table_add (doomed, v->producer))
          g_ptr_array_add (doomed_list, v->producer);   /* (a control edge may name it: then it stays) */
      }
  if ((gint64) values->len * g->values->len > ORPHAN_BUDGET)
    return;
  for (guint i = 0; i < values->len; i++)
    pl_graph_remove_value (g, values->pdata[i]);
}

GPtrArray *
pl_fusion_create_many (PlGraph *g, GPtrArray *groups, const char *const *kinds, GPtrArray *left_out,
                       GError **error)
{
  g_return_val_if_fail (g != NULL && groups != NULL && kinds != NULL, NULL);
  int n = (int) groups->len;
  g_autoptr (GHashTable) graph_outputs = g_hash_table_new (NULL, NULL);
  for (guint i = 0; i < g->outputs->len; i++)
    g_hash_table_add (graph_outputs, g->outputs->pdata[i]);
  PlFusionGroup *gr = g_new0 (PlFusionGroup, MAX (n, 1));
  GPtrArray *result = NULL;
  g_autoptr (GHashTable) fusion_of = g_hash_table_new (NULL, NULL);
  g_autoptr (GPtrArray) doomed_list = g_ptr_array_new ();
  g_autoptr (GHashTable) replaced = g_hash_table_new (NULL, NULL);  /* old value -> fusion output */

  /* Every body first: errors of valid input show up here, before g changes. */
  for (int i = 0; i < n; i++)
    {
      GPtrArray *nodes = groups->pdata[i];
      gr[i].kind = kinds[i];
      if (!nodes || nodes->len == 0)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "group %d to fuse is empty", i);
          goto out;
        }
      GError *local = NULL;
      if (!pl_fusion_group_prepare (&gr[i], g, (PlNode *const *) nodes->pdata, (int) nodes->len, graph_outputs,
                                    &local))
        {
          if (!left_out || !g_error_matches (local, PL_ERROR, PL_ERROR_SHAPE))
            {
              g_propagate_error (error, local);
              goto out;
            }
          g_ptr_array_add (left_out, g_strdup_printf ("left unfused, from '%s' (%u ops): %s",
                                                      ((PlNode *) nodes->pdata[0])->name, nodes->len,
                                                      local->message));
          g_error_free (local);
          pl_fusion_group_clear (&gr[i]);
          memset (&gr[i], 0, sizeof gr[i]);   /* no body: the commit skips it */
          continue;
        }
      for (guint k = 0; k < nodes->len; k++)
        if (g_hash_table_contains (fusion_of, nodes->pdata[k]))
          {
            g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "node '%s' is in two groups to fuse",
                         ((PlNode *) nodes->pdata[k])->name);
            goto out;
          }
        else
          g_hash_table_insert (fusion_of, nodes->pdata[k], NULL);
    }

  int counter = 0;
  for (int i = 0; i < n; i++)
    {
      if (!gr[i].body)
        continue;   /* left out */
      if (!group_commit (&gr[i], g, &counter, replaced, error))
        goto out;
      for (guint k = 0; k < gr[i].nodes->len; k++)
        {
          g_hash_table_insert (fusion_of, gr[i].nodes->pdata[k], gr[i].fusion);
          g_ptr_array_add (doomed_list, gr[i].nodes->pdata[k]);
        }
    }
  move_controls (g, fusion_of);
  detach_all (doomed_list, fusion_of);
  drop_orphans (g, gr, n, graph_outputs, fusion_of, doomed_list);
  pl_graph_remove_nodes (g, (PlNode *const *) doomed_list->pdata, (int) doomed_list->len);

  result = g_ptr_array_sized_new (n);
  for (int i = 0; i < n; i++)
    g_ptr_array_add (result, gr[i].fusion);
out:
  for (int i = 0; i < n; i++)
    pl_fusion_group_clear (&gr[i]);
  g_free (gr);
  return result;
}

PlNode *
pl_fusion_create (PlGraph *g, PlNode *const *nodes, int n, const char *kind, GError **error)
{
  g_return_val_if_fail (g != NULL && (nodes != NULL || n == 0) && kind != NULL, NULL);
  if (n <= 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "no nodes to fuse");
      return NULL;
    }
  for (int i = 0; i < n; i++)
    if (!nodes[i] || nodes[i]->graph != g)
      {
        g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "a node to fuse is not in graph '%s'", g->name);
        return NULL;
      }
  if (pl_fusion_would_cycle (g, nodes, n))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID,
                   "fusing the %d nodes starting at '%s' would make a cycle: a path leaves them and "
                   "comes back through a node outside", n, nodes[0]->name);
      return NULL;
    }
  g_autoptr (GPtrArray) group = g_ptr_array_new ();
  for (int i = 0; i < n; i++)
    g_ptr_array_add (group, nodes[i]);
  g_autoptr (GPtrArray) groups = g_ptr_array_new ();
  g_ptr_array_add (groups, group);
  g_autoptr (GPtrArray) made = pl_fusion_create_many (g, groups, &kind, NULL, error);
  return made ? made->pdata[0] : NULL;
}

/* --- putting a fusion's body back ---------------------------------------------- */

/* The outer value for a body constant: the one it was copied from when it is
 * still there, else a new constant sharing the data. */
static PlValue *
outer_constant (PlGraph *g, PlValue *inner, GError **error)
{
  PlValue *v = pl_graph_find_value (g, inner->name);
  if (v && pl_value_constant (v) == inner->constant)
    return v;
  g_autofree char *name = pl_graph_unique_name (g, inner->name);
  return pl_graph_add_constant (g, name, inner->constant, error);
}

bool
pl_fusion_inline (PlGraph *g, PlNode *f, GError **error)
{
  PlGraph *body = f->body;
  g_autoptr (GHashTable) vmap = g_hash_table_new (NULL, NULL);
  for (guint i = 0; i < body->inputs->len; i++)
    g_hash_table_insert (vmap, body->inputs->pdata[i], f->inputs[i]);
  /* f's outputs step aside so the body's values take their names back. */
  for (int j = 0; j < f->n_outputs; j++)
    {
      g_autofree char *base = g_strdup_printf ("%s.inlined", f->outputs[j]->name);
      g_autofree char *tmp = pl_graph_unique_name (g, base);
      if (!pl_value_rename (f->outputs[j], tmp, error))
        return false;
    }
  int n;
  g_autofree PlNode **order = pl_graph_topo_order (body, &n, error);
  for (int i = 0; order && i < n; i++)
    {
      PlNode *b = order[i];
      g_autofree PlValue **ins = g_new0 (PlValue *, MAX (b->n_inputs, 1));
      g_autoptr (GPtrArray) outs = g_ptr_array_new_with_free_func (g_free);
      for (int k = 0; k < b->n_inputs; k++)
        {
          PlValue *v = b->inputs[k];
          if (!v || (ins[k] = g_hash_table_lookup (vmap, v)))
            continue;
          if (!v->constant)
            {
              g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "fusion '%s': body value '%s' has no source", f->name,
                           v->name);
              return false;
            }
          if (!(ins[k] = outer_constant (g, v, error)))
            return false;
          g_hash_table_insert (vmap, v, ins[k]);
        }
      for (int o = 0; o < b->n_outputs; o++)
        g_ptr_array_add (outs, b->outputs[o] ? pl_graph_unique_name (g, b->outputs[o]->name) : g_strdup (""));
      g_autofree char *name = pl_graph_unique_name (g, b->name);
      PlNode *x = pl_graph_add_node (g, b->op_type, b->domain, name, b->n_inputs, ins, b->n_outputs,
                                     (const char *const *) outs->pdata, error);
      if (!x)
        return false;
      pl_rw_copy_attrs (x, b);
      if (b->body)
        pl_node_set_body (x, pl_graph_copy (b->body));
      if (!pl_node_infer (x, error))
        return false;
      for (int o = 0; o < b->n_outputs; o++)
        if (b->outputs[o])
          {
            x->outputs[o]->layout = b->outputs[o]->layout;
            g_hash_table_insert (vmap, b->outputs[o], x->outputs[o]);
          }
    }
  if (!order)
    return false;
  for (int j = 0; j < f->n_outputs; j++)
    pl_value_replace_uses (f->outputs[j], g_hash_table_lookup (vmap, body->outputs->pdata[j]));
  return true;
}

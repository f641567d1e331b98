/* fusion.c — the machinery every fusion pass shares: building Fusion nodes
 * (one, or many in one batch), inlining one again, the cycle check, and
 * PlFusionPlan, the planner passes grow groups on before anything in the
 * graph changes.
 *
 * The planner is a union-find over the nodes plus a topological order of the
 * groups that is kept valid as groups merge (Pearce & Kelly, "A dynamic
 * topological sort algorithm for directed acyclic graphs", JEA 2006; XLA's
 * GraphCycles does the same for its fusion passes). With a valid order,
 * "would merging these groups make a cycle" is a forward search from the
 * groups that only visits groups ordered before the last of them: a path
 * that leaves the set and comes back must stay below that bound. When the
 * merge goes ahead, the groups that search found (δF) and the groups that
 * reach the set from above the lowest of them (δB) swap their topological
 * slots so δB, the merged group, δF follow each other; everything else keeps
 * its slot. Conventions of fusion nodes: see fusion.h.
 */
#define G_LOG_DOMAIN "passlab"
#include "fusion.h"

#include "ops-util.h"
#include "rewrite.h"

#include <string.h>

/* Constants with at most this many elements (shapes, axes, scalars) are
 * copied into a body so inference and code generation see their data;
 * larger ones (weights) stay outside and enter as body inputs. */
#define SMALL_CONSTANT 64
/* Groups one planner check may visit before it refuses the merge. */
#define SEARCH_BUDGET 4096

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

/* --- building fusion nodes ---------------------------------------------------- */

/* One group on its way to becoming a fusion node. */
typedef struct {
  GPtrArray  *nodes;      /* members in topological order */
  GHashTable *members;    /* PlNode* set */
  GPtrArray  *inputs;     /* outer values the body reads as inputs, in order */
  GPtrArray  *outputs;    /* outer values the body produces for outside readers, in order */
  GPtrArray  *copied;     /* outer small constants copied into the body */
  PlGraph    *body;
  const char *kind;
  PlNode     *fusion;
} Group;

static void
group_clear (Group *gr)
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
add_input (Group *gr, PlValue *v, GHashTable *seen)
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
order_inputs (Group *gr)
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
copy_member (Group *gr, PlNode *m, GHashTable *vmap, GHashTable *nmap, GError **error)
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
static bool
group_prepare (Group *gr, PlGraph *g, PlNode *const *nodes, int n, GHashTable *graph_outputs,
               GError **error)
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
group_commit (Group *gr, PlGraph *g, int *name_counter, GHashTable *replaced, GError **error)
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
drop_orphans (PlGraph *g, Group *groups, int n_groups, GHashTable *graph_outputs, GHashTable *doomed,
              GPtrArray *doomed_list)
{
  g_autoptr (GHashTable) seen = g_hash_table_new (NULL, NULL);
  g_autoptr (GPtrArray) values = g_ptr_array_new ();
  for (int i = 0; i < n_groups; i++)
    for (guint k = 0; k < groups[i].copied->len; k++)
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
pl_fusion_create_many (PlGraph *g, GPtrArray *groups, const char *const *kinds, GError **error)
{
  g_return_val_if_fail (g != NULL && groups != NULL && kinds != NULL, NULL);
  int n = (int) groups->len;
  g_autoptr (GHashTable) graph_outputs = g_hash_table_new (NULL, NULL);
  for (guint i = 0; i < g->outputs->len; i++)
    g_hash_table_add (graph_outputs, g->outputs->pdata[i]);
  Group *gr = g_new0 (Group, MAX (n, 1));
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
      if (!group_prepare (&gr[i], g, (PlNode *const *) nodes->pdata, (int) nodes->len, graph_outputs, error))
        goto out;
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
    group_clear (&gr[i]);
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
  g_autoptr (GPtrArray) made = pl_fusion_create_many (g, groups, &kind, error);
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

/* --- the cycle check without a plan --------------------------------------------- */

typedef struct {
  GHashTable *set;
  GHashTable *seen;
  GPtrArray  *stack;
  bool        forward;
  bool        seeding;  /* expanding the set itself: edges among members are no way back */
  bool        hit;      /* came back into the set */
} Search;

static void
search_push (Search *s, PlNode *x)
{
  if (g_hash_table_contains (s->set, x))
    s->hit |= !s->seeding;
  else if (g_hash_table_add (s->seen, x))
    g_ptr_array_add (s->stack, x);
}

/* Pushes the neighbours of x in the search's direction. Forward searches
 * follow data edges only; they run only when the graph has no control edges. */
static void
search_expand (Search *s, PlNode *x)
{
  if (s->forward)
    {
      for (int o = 0; o < x->n_outputs; o++)
        for (int u = 0; x->outputs[o] && u < x->outputs[o]->n_uses; u++)
          search_push (s, x->outputs[o]->uses[u].node);
    }
  else
    {
      for (int i = 0; i < x->n_inputs; i++)
        if (x->inputs[i] && x->inputs[i]->producer)
          search_push (s, x->inputs[i]->producer);
      for (int c = 0; c < x->n_controls; c++)
        search_push (s, x->controls[c].node);
    }
}

bool
pl_fusion_would_cycle (const PlGraph *g, PlNode *const *nodes, int n)
{
  g_return_val_if_fail (g != NULL, false);
  if (n <= 1)
    return false;
  g_autoptr (GHashTable) set = g_hash_table_new (NULL, NULL);
  for (int i = 0; i < n; i++)
    g_hash_table_add (set, nodes[i]);

  /* Without control edges both directions see every edge: step them in turn
   * and stop when either comes back into the set or runs out. With control
   * edges only the backward side sees them all, so it runs alone. */
  int first = g->n_control_edges == 0 ? 0 : 1;
  Search side[2];
  for (int d = first; d < 2; d++)
    {
      side[d] = (Search) { set, g_hash_table_new (NULL, NULL), g_ptr_array_new (), d == 0, true, false };
      for (int i = 0; i < n; i++)
        search_expand (&side[d], nodes[i]);
      side[d].seeding = false;
    }
  bool result = false, done = false;
  while (!done)
    for (int d = first; d < 2 && !done; d++)
      {
        Search *s = &side[d];
        if (s->stack->len == 0)
          done = true;
        else
          {
            search_expand (s, g_ptr_array_steal_index_fast (s->stack, s->stack->len - 1));
            done = result = s->hit;
          }
      }
  for (int d = first; d < 2; d++)
    {
      g_hash_table_unref (side[d].seen);
      g_ptr_array_unref (side[d].stack);
    }
  return result;
}

/* --- the planner -------------------------------------------------------------- */

struct _PlFusionPlan {
  const PlGraph *g;
  int       n;
  PlNode  **node;          /* by index: the topological order at creation */
  int      *index_of_id;   /* node id -> index */
  guint32   n_ids;
  int      *parent;        /* union-find */
  int      *ord;           /* a group's topological slot (at roots) */
  int      *size;          /* members (at roots) */
  int      *head, *last;   /* member list (at roots), linked through next */
  int      *next;
  int      *csucc_start;   /* nodes waiting on node i: csucc[csucc_start[i] .. csucc_start[i+1]) */
  int      *csucc;
  guint    *in_set, *seen_f, *seen_b;   /* stamps per root */
  guint     stamp;
  bool      seeding;    /* expanding the set itself: edges among its groups are no way back */
  GArray   *stack, *delta_f, *delta_b;  /* int */
};

static int
plan_find (PlFusionPlan *p, int i)
{
  while (p->parent[i] != i)
    {
      p->parent[i] = p->parent[p->parent[i]];
      i = p->parent[i];
    }
  return i;
}

static int
plan_index (const PlFusionPlan *p, const PlNode *node)
{
  g_return_val_if_fail (node && node->graph == p->g && node->id < p->n_ids, -1);
  return p->index_of_id[node->id];
}

PlFusionPlan *
pl_fusion_plan_new (const PlGraph *g, GError **error)
{
  int n;
  PlNode **order = pl_graph_topo_order (g, &n, error);
  if (!order)
    return NULL;
  PlFusionPlan *p = g_new0 (PlFusionPlan, 1);
  p->g = g;
  p->n = n;
  p->node = order;
  p->n_ids = 1;
  for (int i = 0; i < n; i++)
    p->n_ids = MAX (p->n_ids, order[i]->id + 1);
  p->index_of_id = g_new (int, p->n_ids);
  memset (p->index_of_id, 0xff, sizeof (int) * p->n_ids);
  int m = MAX (n, 1);
  p->parent = g_new (int, m);
  p->ord = g_new (int, m);
  p->size = g_new (int, m);
  p->head = g_new (int, m);
  p->last = g_new (int, m);
  p->next = g_new (int, m);
  p->in_set = g_new0 (guint, m);
  p->seen_f = g_new0 (guint, m);
  p->seen_b = g_new0 (guint, m);
  for (int i = 0; i < n; i++)
    {
      p->index_of_id[order[i]->id] = i;
      p->parent[i] = p->ord[i] = p->head[i] = p->last[i] = i;
      p->size[i] = 1;
      p->next[i] = -1;
    }
  /* Reverse control edges as compressed rows, for forward searches. */
  p->csucc_start = g_new0 (int, n + 1);
  for (int i = 0; i < n; i++)
    for (int c = 0; c < order[i]->n_controls; c++)
      p->csucc_start[p->index_of_id[order[i]->controls[c].node->id] + 1]++;
  for (int i = 0; i < n; i++)
    p->csucc_start[i + 1] += p->csucc_start[i];
  p->csucc = g_new (int, MAX (p->csucc_start[n], 1));
  g_autofree int *fill = g_memdup2 (p->csucc_start, sizeof (int) * (n + 1));
  for (int i = 0; i < n; i++)
    for (int c = 0; c < order[i]->n_controls; c++)
      p->csucc[fill[p->index_of_id[order[i]->controls[c].node->id]]++] = i;
  p->stack = g_array_new (FALSE, FALSE, sizeof (int));
  p->delta_f = g_array_new (FALSE, FALSE, sizeof (int));
  p->delta_b = g_array_new (FALSE, FALSE, sizeof (int));
  return p;
}

void
pl_fusion_plan_free (PlFusionPlan *p)
{
  if (!p)
    return;
  g_free (p->node);
  g_free (p->index_of_id);
  g_free (p->parent);
  g_free (p->ord);
  g_free (p->size);
  g_free (p->head);
  g_free (p->last);
  g_free (p->next);
  g_free (p->csucc_start);
  g_free (p->csucc);
  g_free (p->in_set);
  g_free (p->seen_f);
  g_free (p->seen_b);
  g_array_unref (p->stack);
  g_array_unref (p->delta_f);
  g_array_unref (p->delta_b);
  g_free (p);
}

/* Calls visit(p, root of each neighbour group) over the members of group r:
 * successors (data readers, nodes waiting on a member) or predecessors. */
typedef bool (*Visit) (PlFusionPlan *p, int root, int bound);

static bool
for_neighbours (PlFusionPlan *p, int r, bool forward, Visit visit, int bound)
{
  for (int i = p->head[r]; i >= 0; i = p->next[i])
    {
      PlNode *x = p->node[i];
      if (forward)
        {
          for (int o = 0; o < x->n_outputs; o++)
            for (int u = 0; x->outputs[o] && u < x->outputs[o]->n_uses; u++)
              if (!visit (p, plan_find (p, plan_index (p, x->outputs[o]->uses[u].node)), bound))
                return false;
          for (int c = p->csucc_start[i]; c < p->csucc_start[i + 1]; c++)
            if (!visit (p, plan_find (p, p->csucc[c]), bound))
              return false;
        }
      else
        {
          for (int k = 0; k < x->n_inputs; k++)
            if (x->inputs[k] && x->inputs[k]->producer)
              if (!visit (p, plan_find (p, plan_index (p, x->inputs[k]->producer)), bound))
                return false;
          for (int c = 0; c < x->n_controls; c++)
            if (!visit (p, plan_find (p, plan_index (p, x->controls[c].node)), bound))
              return false;
        }
    }
  return true;
}

/* Forward step: false stops the search (came back into the set, or over budget). */
static bool
visit_forward (PlFusionPlan *p, int r, int max_ord)
{
  if (p->in_set[r] == p->stamp)
    return p->seeding;
  if (p->ord[r] > max_ord || p->seen_f[r] == p->stamp)
    return true;
  p->seen_f[r] = p->stamp;
  g_array_append_val (p->stack, r);
  g_array_append_val (p->delta_f, r);
  return p->delta_f->len <= SEARCH_BUDGET;
}

static bool
visit_backward (PlFusionPlan *p, int r, int min_ord)
{
  if (p->in_set[r] == p->stamp || p->ord[r] < min_ord || p->seen_b[r] == p->stamp)
    return true;
  p->seen_b[r] = p->stamp;
  g_array_append_val (p->stack, r);
  g_array_append_val (p->delta_b, r);
  return p->delta_b->len <= SEARCH_BUDGET;
}

/* Marks the groups of the nodes as the set (a new stamp) and returns how
 * many distinct groups there are; roots[] gets them, *max_ord the highest slot. */
/* A fresh stamp: every mark made with an older one reads as unset. */
static void
next_stamp (PlFusionPlan *p)
{
  if (++p->stamp == 0)   /* wrapped: clear the marks once */
    {
      memset (p->in_set, 0, sizeof (guint) * MAX (p->n, 1));
      memset (p->seen_f, 0, sizeof (guint) * MAX (p->n, 1));
      memset (p->seen_b, 0, sizeof (guint) * MAX (p->n, 1));
      p->stamp = 1;
    }
}

static int
mark_set (PlFusionPlan *p, PlNode *const *nodes, int n, int *roots, int *max_ord)
{
  next_stamp (p);
  int k = 0;
  *max_ord = -1;
  for (int i = 0; i < n; i++)
    {
      int idx = plan_index (p, nodes[i]);
      if (idx < 0)
        continue;
      int r = plan_find (p, idx);
      if (p->in_set[r] == p->stamp)
        continue;
      p->in_set[r] = p->stamp;
      roots[k++] = r;
      *max_ord = MAX (*max_ord, p->ord[r]);
    }
  return k;
}

/* The bounded forward search from the marked set; fills delta_f. True when
 * it found a way back into the set (or ran over budget). */
static bool
search_cycle (PlFusionPlan *p, const int *roots, int k, int max_ord)
{
  g_array_set_size (p->stack, 0);
  g_array_set_size (p->delta_f, 0);
  p->seeding = true;
  for (int i = 0; i < k; i++)
    if (!for_neighbours (p, roots[i], true, visit_forward, max_ord))
      {
        p->seeding = false;
        return true;
      }
  p->seeding = false;
  while (p->stack->len > 0)
    {
      int r = g_array_index (p->stack, int, p->stack->len - 1);
      g_array_set_size (p->stack, p->stack->len - 1);
      if (!for_neighbours (p, r, true, visit_forward, max_ord))
        return true;
    }
  return false;
}

bool
pl_fusion_plan_would_cycle (PlFusionPlan *p, PlNode *const *nodes, int n)
{
  g_return_val_if_fail (p != NULL, true);
  g_autofree int *roots = g_new (int, MAX (n, 1));
  int max_ord;
  int k = mark_set (p, nodes, n, roots, &max_ord);
  return k > 1 && search_cycle (p, roots, k, max_ord);
}

static int
cmp_int (const void *a, const void *b)
{
  int x = *(const int *) a, y = *(const int *) b;
  return (x > y) - (x < y);
}

static int
cmp_i64 (const void *a, const void *b)
{
  gint64 x = *(const gint64 *) a, y = *(const gint64 *) b;
  return (x > y) - (x < y);
}

/* Sorts the groups in roots[n] by their topological slot. */
static void
sort_by_ord (PlFusionPlan *p, int *roots, int n)
{
  g_autofree gint64 *keys = g_new (gint64, MAX (n, 1));
  for (int i = 0; i < n; i++)
    keys[i] = ((gint64) p->ord[roots[i]] << 32) | (guint32) roots[i];
  qsort (keys, n, sizeof (gint64), cmp_i64);
  for (int i = 0; i < n; i++)
    roots[i] = (int) (keys[i] & 0xffffffff);
}

bool
pl_fusion_plan_merge (PlFusionPlan *p, PlNode *const *nodes, int n)
{
  g_return_val_if_fail (p != NULL, false);
  g_autofree int *roots = g_new (int, MAX (n, 1));
  int max_ord;
  int k = mark_set (p, nodes, n, roots, &max_ord);
  if (k <= 1)
    return true;
  if (search_cycle (p, roots, k, max_ord))
    return false;

  /* δF holds the groups reachable from the set that sit below its top slot;
   * they must move above the merged group, and the groups that reach the set
   * from above the lowest of them (δB) must move below it. */
  int n_f = (int) p->delta_f->len;
  g_array_set_size (p->delta_b, 0);
  if (n_f > 0)
    {
      int lb = G_MAXINT;
      for (int i = 0; i < n_f; i++)
        lb = MIN (lb, p->ord[g_array_index (p->delta_f, int, i)]);
      g_array_set_size (p->stack, 0);
      for (int i = 0; i < k; i++)
        if (!for_neighbours (p, roots[i], false, visit_backward, lb))
          return false;
      while (p->stack->len > 0)
        {
          int r = g_array_index (p->stack, int, p->stack->len - 1);
          g_array_set_size (p->stack, p->stack->len - 1);
          if (!for_neighbours (p, r, false, visit_backward, lb))
            return false;
        }
    }

  /* Union: the largest group becomes the root. */
  int root = roots[0];
  for (int i = 1; i < k; i++)
    if (p->size[roots[i]] > p->size[root])
      root = roots[i];
  for (int i = 0; i < k; i++)
    {
      int r = roots[i];
      if (r == root)
        continue;
      p->parent[r] = root;
      p->next[p->last[root]] = p->head[r];
      p->last[root] = p->last[r];
      p->size[root] += p->size[r];
    }
  p->ord[root] = max_ord;

  if (n_f > 0)
    {
      int n_b = (int) p->delta_b->len;
      g_autofree int *slots = g_new (int, n_b + n_f + 1);
      int *db = (int *) p->delta_b->data, *df = (int *) p->delta_f->data;
      for (int i = 0; i < n_b; i++)
        slots[i] = p->ord[db[i]];
      for (int i = 0; i < n_f; i++)
        slots[n_b + i] = p->ord[df[i]];
      slots[n_b + n_f] = max_ord;
      qsort (slots, n_b + n_f + 1, sizeof (int), cmp_int);
      sort_by_ord (p, db, n_b);
      sort_by_ord (p, df, n_f);
      for (int i = 0; i < n_b; i++)
        p->ord[db[i]] = slots[i];
      p->ord[root] = slots[n_b];
      for (int i = 0; i < n_f; i++)
        p->ord[df[i]] = slots[n_b + 1 + i];
    }
  return true;
}

bool
pl_fusion_plan_same_group (PlFusionPlan *p, const PlNode *a, const PlNode *b)
{
  int ia = plan_index (p, a), ib = plan_index (p, b);
  return ia >= 0 && ib >= 0 && plan_find (p, ia) == plan_find (p, ib);
}

int
pl_fusion_plan_group_size (PlFusionPlan *p, const PlNode *node)
{
  int i = plan_index (p, node);
  return i >= 0 ? p->size[plan_find (p, i)] : 0;
}

/* Members of root r sorted by their index (the creation-time topological
 * order, which every edge inside a group still respects). */
static GPtrArray *
root_members (PlFusionPlan *p, int r)
{
  g_autofree int *idx = g_new (int, p->size[r]);
  int k = 0;
  for (int i = p->head[r]; i >= 0; i = p->next[i])
    idx[k++] = i;
  qsort (idx, k, sizeof (int), cmp_int);
  GPtrArray *out = g_ptr_array_sized_new (k);
  for (int i = 0; i < k; i++)
    g_ptr_array_add (out, p->node[idx[i]]);
  return out;
}

GPtrArray *
pl_fusion_plan_members (PlFusionPlan *p, const PlNode *node)
{
  int i = plan_index (p, node);
  if (i < 0)
    return g_ptr_array_new ();
  return root_members (p, plan_find (p, i));
}

GPtrArray *
pl_fusion_plan_groups (PlFusionPlan *p, int min_size)
{
  GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify) g_ptr_array_unref);
  next_stamp (p);
  for (int i = 0; i < p->n; i++)
    {
      int r = plan_find (p, i);
      if (p->size[r] < min_size || p->seen_b[r] == p->stamp)
        continue;
      p->seen_b[r] = p->stamp;
      g_ptr_array_add (out, root_members (p, r));
    }
  return out;
}

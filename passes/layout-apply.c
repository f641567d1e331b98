/* layout-apply.c — the `layout` pass applies its plan (layout-pass.c's
 * notes, step 3): each value's layout, each conv's impl and tile, one shared
 * LayoutTransform per (value, target layout) placed before its first
 * consumer, and the graph outputs delivered in NCHW under their old names. */
#define G_LOG_DOMAIN "passlab"
#include "layout-pass-private.h"

#include <math.h>
#include <string.h>

/* --- applying a plan ----------------------------------------------------------------- */

typedef struct {
  PlGraph       *g;
  GHashTable    *transform_of;   /* (root id, layout) -> LayoutTransform node */
  GPtrArray     *added;          /* LayoutTransform nodes made by this run */
  bool           changed;
} Apply;

static gpointer
transform_key (const PlValue *root, PlLayout to)
{
  return GSIZE_TO_POINTER ((gsize) root->id * PL_LAYOUT_COUNT + to + 1);
}

static bool
set_layout (Apply *A, PlValue *v, PlLayout layout)
{
  if (v && v->layout != layout)
    {
      v->layout = layout;
      A->changed = true;
    }
  return true;
}

/* The value to read v in layout `to`: v itself, or a (new or reused) transform of it. */
static PlValue *
in_layout (Apply *A, PlValue *v, PlLayout to, GError **error)
{
  if (v->layout == to)
    return v;
  PlNode *t = g_hash_table_lookup (A->transform_of, transform_key (v, to));
  if (t)
    return t->outputs[0];
  g_autofree char *lower = g_ascii_strdown (pl_layout_name (to), -1);
  g_autofree char *base = g_strdup_printf ("%s_%s", v->name, lower);
  g_autofree char *name = pl_graph_unique_name (A->g, base);
  t = pl_graph_add_node (A->g, "LayoutTransform", NULL, name, 1, &v, 1, (const char *const[]) { name }, error);
  if (!t)
    return NULL;
  pl_node_set_attr_string (t, "to", pl_layout_name (to));
  if (!pl_node_infer (t, error))
    return NULL;
  g_hash_table_insert (A->transform_of, transform_key (v, to), t);
  g_ptr_array_add (A->added, t);
  A->changed = true;
  return t->outputs[0];
}

/* The value a reader of root r that needs layout `to` reads, as the model
 * priced it: r itself when the layouts agree; with a hub, r transformed once
 * to the hub's layout (shared) and, for readers that need yet another
 * layout, transformed again from there; else one transform of r. */
static PlValue *
read_as (Apply *A, const Model *M, const PlLsSolution *s, PlValue *r, PlLayout to, GError **error)
{
  if (r->layout == to)
    return r;
  int hub = GPOINTER_TO_INT (g_hash_table_lookup (M->hub_of, r)) - 1;
  if (hub < 0)
    return in_layout (A, r, to, error);
  PlValue *shared = in_layout (A, r, g_array_index (M->pnodes, PNode, hub).layout[s->choice[hub]], error);
  return shared ? in_layout (A, shared, to, error) : NULL;
}

static void
set_conv_impl (Apply *A, PlCalibration *cal, PlNode *conv, PlLayout layout, PlConvImpl impl)
{
  const char *had = pl_node_attr_string (conv, "impl", NULL);
  if (impl == PL_CONV_IMPL_DIRECT)
    {
      int64_t tile[3];
      pl_calibration_conv_tile (cal, conv, layout, tile);
      const int64_t *v;
      int n;
      bool same_tile = tile[0] > 0 ? pl_node_attr_ints (conv, "tile", &v, &n) && n == 3 && memcmp (v, tile, sizeof tile) == 0
                                   : !pl_node_attr (conv, "tile");
      if (g_strcmp0 (had, "direct") != 0)
        pl_node_set_attr_string (conv, "impl", "direct");
      if (!same_tile && tile[0] > 0)
        pl_node_set_attr_ints (conv, "tile", tile, 3);
      else if (!same_tile)
        pl_node_remove_attr (conv, "tile");
      A->changed |= g_strcmp0 (had, "direct") != 0 || !same_tile;
    }
  else if (g_strcmp0 (had, "direct") == 0 || pl_node_attr (conv, "tile"))
    {
      if (g_strcmp0 (had, "direct") == 0)
        pl_node_remove_attr (conv, "impl");
      pl_node_remove_attr (conv, "tile");
      A->changed = true;
    }
}

/* Graph output i is read through want: the old value keeps its data under
 * "<name>_<layout>", want takes the output's name. */
static bool
set_output (Apply *A, int i, PlValue *want, GError **error)
{
  PlValue *old = A->g->outputs->pdata[i];
  if (old == want)
    return true;
  bool named = true;
  for (int k = 0; k < i; k++)
    named &= A->g->outputs->pdata[k] != want;   /* an earlier output already named it */
  if (named)
    {
      g_autofree char *name = g_strdup (old->name);
      g_autofree char *lower = g_ascii_strdown (pl_layout_name (old->layout), -1);
      g_autofree char *base = g_strdup_printf ("%s_%s", name, lower);
      g_autofree char *aside = pl_graph_unique_name (A->g, base);
      if (!pl_value_rename (old, aside, error) || !pl_value_rename (want, name, error))
        return false;
    }
  pl_graph_set_output (A->g, i, want);
  A->changed = true;
  return true;
}

/* Removes transforms nobody reads any more (a previous plan's). */
static void
remove_unused_transforms (Apply *A)
{
  for (;;)
    {
      g_autoptr (GPtrArray) dead = g_ptr_array_new ();
      for (guint i = 0; i < A->g->nodes->len; i++)
        {
          PlNode *n = A->g->nodes->pdata[i];
          if (n->op == PL_OP_LayoutTransform && n->outputs[0]->n_uses == 0 && !pl_value_is_output (n->outputs[0]))
            g_ptr_array_add (dead, n);
        }
      if (dead->len == 0)
        return;
      for (guint i = 0; i < dead->len; i++)
        g_ptr_array_remove (A->added, dead->pdata[i]);
      pl_graph_remove_nodes (A->g, (PlNode *const *) dead->pdata, (int) dead->len);
      A->changed = true;
    }
}

/* Places each new transform right before its first reader (graph-output
 * transforms right after their producer), so the schedule converts data
 * when it is needed, not when the node list happens to end. */
static bool
place_new_transforms (Apply *A, GError **error)
{
  if (A->added->len == 0)
    return true;
  int n = 0;
  g_autofree PlNode **order = pl_graph_topo_order (A->g, &n, error);
  if (!order)
    return false;
  g_autoptr (GHashTable) fresh = g_hash_table_new (NULL, NULL);
  for (guint i = 0; i < A->added->len; i++)
    g_hash_table_add (fresh, A->added->pdata[i]);
  g_autoptr (GPtrArray) out = g_ptr_array_sized_new (n);
  g_autoptr (GHashTable) placed = g_hash_table_new (NULL, NULL);
  for (int i = 0; i < n; i++)
    {
      PlNode *node = order[i];
      if (g_hash_table_contains (fresh, node))
        continue;
      for (int k = 0; k < node->n_inputs; k++)
        {
          PlNode *t = node->inputs[k] ? node->inputs[k]->producer : NULL;
          if (t && g_hash_table_contains (fresh, t) && g_hash_table_add (placed, t))
            g_ptr_array_add (out, t);
        }
      g_ptr_array_add (out, node);
      for (int o = 0; o < node->n_outputs; o++)
        for (int u = 0; node->outputs[o] && u < node->outputs[o]->n_uses; u++)
          {
            PlNode *t = node->outputs[o]->uses[u].node;
            if (g_hash_table_contains (fresh, t) && t->outputs[0]->n_uses == 0 && g_hash_table_add (placed, t))
              g_ptr_array_add (out, t);
          }
    }
  for (guint i = 0; i < A->added->len; i++)
    if (g_hash_table_add (placed, A->added->pdata[i]))
      g_ptr_array_add (out, A->added->pdata[i]);
  pl_graph_set_node_order (A->g, (PlNode *const *) out->pdata, (int) out->len);
  return true;
}

bool
pl_lp_apply_plan (PlGraph *g, const Model *M, const PlLsSolution *s, PlCalibration *cal, bool *changed, GError **error)
{
  Apply A = { .g = g };
  A.transform_of = g_hash_table_new (NULL, NULL);
  A.added = g_ptr_array_new ();
  bool ok = true;
  /* layouts and conv attributes */
  for (guint i = 0; i < M->pnodes->len; i++)
    {
      const PNode *pn = &g_array_index (M->pnodes, PNode, i);
      if (pn->kind != PN_NODE)
        continue;
      PlLayout l = pn->layout[s->choice[i]];
      bool decides = pn->conv || pn->pointwise || pn->pool;
      for (int k = 0; k < pn->node->n_outputs; k++)
        set_layout (&A, pn->node->outputs[k], decides && k == 0 ? l : PL_LAYOUT_NCHW);
      if (pn->conv)
        set_conv_impl (&A, cal, pn->node, l, pn->impl[s->choice[i]]);
    }
  /* the transforms there are (a previous plan's), to reuse */
  for (guint i = 0; i < g->nodes->len; i++)
    {
      PlNode *t = g->nodes->pdata[i];
      PlLayout to;
      if (t->op == PL_OP_LayoutTransform && t->inputs[0] && pl_layout_parse (pl_node_attr_string (t, "to", ""), &to) &&
          !g_hash_table_contains (A.transform_of, transform_key (t->inputs[0], to)))
        g_hash_table_insert (A.transform_of, transform_key (t->inputs[0], to), t);
    }
  /* every reader reads its root in the layout it needs */
  for (guint i = 0; ok && i < M->pnodes->len; i++)
    {
      const PNode *pn = &g_array_index (M->pnodes, PNode, i);
      if (pn->kind != PN_NODE)
        continue;
      PlLayout l = pn->conv || pn->pointwise || pn->pool ? pn->layout[s->choice[i]] : PL_LAYOUT_NCHW;
      for (int k = 0; ok && k < pn->node->n_inputs; k++)
        {
          PlValue *v = pn->node->inputs[k], *r = pl_lp_root_of (v);
          if (!v)
            continue;
          PlValue *want = pl_lp_static_rank4 (r) && pl_lp_slot_follows (pn, k, r) ? read_as (&A, M, s, r, l, error) : r;
          if (!want)
            ok = false;
          else if (want != v)
            {
              pl_node_set_input (pn->node, k, want);
              A.changed = true;
            }
        }
    }
  for (guint i = 0; ok && i < g->outputs->len; i++)
    {
      PlValue *r = pl_lp_root_of (g->outputs->pdata[i]);
      PlValue *want = pl_lp_static_rank4 (r) ? read_as (&A, M, s, r, PL_LAYOUT_NCHW, error) : r;
      ok = want && set_output (&A, (int) i, want, error);
    }
  if (ok)
    {
      remove_unused_transforms (&A);
      ok = place_new_transforms (&A, error);
    }
  *changed = A.changed;
  g_hash_table_unref (A.transform_of);
  g_ptr_array_unref (A.added);
  return ok;
}


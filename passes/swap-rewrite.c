/* swap-rewrite.c — the swap pass's graph rewrite (swap.c, steps 3 to 5):
 * a plan of swap-plan.c into the graph: the reduction and restoration
 * nodes, the consumers rewired to the restored copies, an output delivered
 * from host memory, the prefetch and serialize control edges, and the node
 * list put in the planned order, so that the schedule is the plan.
 */
#define G_LOG_DOMAIN "passlab"
#include "swap-private.h"
#include "rewrite.h"

/* Where inserted nodes go, per step s of t's schedule: before[s] right
 * before node s, then node s, then reduce[s] (reductions free memory), then
 * restore[s] (restorations allocate it). */
typedef struct {
  const PlTimingAnalysis *t;   /* of the unchanged graph; ids carry over to copies */
  GPtrArray **before, **reduce, **restore;
  Counts      counts;
} Placement;

static void
place (GPtrArray **slots, int step, PlNode *node)
{
  if (!slots[step])
    slots[step] = g_ptr_array_new ();
  g_ptr_array_add (slots[step], node);
}

static PlNode *
add_op (PlGraph *g, const char *op, const char *name, const char *suffix, PlValue *x, GError **error)
{
  g_autofree char *base = g_strconcat (name, suffix, NULL);
  return pl_rw_add_op (g, op, base, 1, &x, error);
}

/* Inserts c's reduction and restorations into g (a version of t's graph). */
static bool
apply_candidate (PlGraph *g, const Candidate *c, Placement *pl, GError **error)
{
  const PlTimingAnalysis *t = pl->t;
  PlValue *x = pl_graph_value_by_id (g, c->value_id);
  g_assert (x != NULL);
  GPtrArray **reduce_slots = c->anchor_before ? pl->before : pl->reduce;

  /* the reduction: x -> [CompressFp16 ->] [SwapOut ->] */
  PlValue *reduced = x;
  PlNode *last = NULL;
  if (c->compress)
    {
      if (!(last = add_op (g, "CompressFp16", c->name, "_f16", reduced, error)))
        return false;
      place (reduce_slots, c->anchor_step, last);
      reduced = last->outputs[0];
      pl->counts.compressed += c->bytes;
    }
  if (c->swap)
    {
      if (!(last = add_op (g, "SwapOut", c->name, "_host", reduced, error)))
        return false;
      place (reduce_slots, c->anchor_step, last);
      reduced = last->outputs[0];
      pl->counts.swapped += pl_swap_copied_bytes (c);
    }

  for (guint r = 0; r < c->restores->len; r++)
    {
      const Restore *rs = &g_array_index (c->restores, Restore, r);
      PlValue *restored = reduced;
      PlNode *first = NULL;
      if (c->swap)
        {
          if (!(first = add_op (g, "SwapIn", c->name, "_in", restored, error)))
            return false;
          place (pl->restore, rs->q_step, first);
          restored = first->outputs[0];
        }
      if (c->compress)
        {
          PlNode *d = add_op (g, "DecompressFp16", c->name, "_restored", restored, error);
          if (!d)
            return false;
          /* after its swap-in, right before the consumer; alone, after q */
          if (first)
            place (pl->before, rs->c_step, d);
          else
            place (pl->restore, rs->q_step, first = d);
          restored = d->outputs[0];
        }
      for (guint u = 0; u < rs->uses->len; u++)
        {
          const Use *use = &g_array_index (rs->uses, Use, u);
          pl_node_set_input (pl_graph_node_by_id (g, use->node_id), use->index, restored);
        }
      pl_node_add_control (first, pl_graph_node_by_id (g, t->order[rs->q_step]->id), PL_CONTROL_PREFETCH);
      pl->counts.prefetch++;
      pl->counts.restorations++;
    }

  if (c->to_output)
    {
      /* the output keeps its name: x becomes <x>_dev, the host value takes x's name */
      g_autofree char *dev = g_strconcat (c->name, "_dev", NULL);
      g_autofree char *dev_name = pl_graph_unique_name (g, dev);
      if (!pl_value_rename (x, dev_name, error) || !pl_value_rename (reduced, c->name, error))
        return false;
      for (guint i = 0; i < g->outputs->len; i++)
        if (g->outputs->pdata[i] == x)
          pl_graph_set_output (g, (int) i, reduced);
      pl->counts.outputs++;
    }

  if (c->serialize_step >= 0)
    {
      pl_node_add_control (pl_graph_node_by_id (g, t->order[c->serialize_step]->id), last, PL_CONTROL_SERIALIZE);
      pl->counts.serialize++;
    }
  return true;
}

/* Puts g's nodes in the planned order: t's schedule with the inserted nodes
 * spliced in. The order is topological, so pl_graph_topo_order (a min-heap
 * on insertion order) returns exactly it: the schedule is the plan. */
static void
reorder_nodes (PlGraph *g, const Placement *pl)
{
  const PlTimingAnalysis *t = pl->t;
  g_autoptr (GPtrArray) order = g_ptr_array_sized_new (g->nodes->len);
  for (int s = 0; s < t->n_steps; s++)
    {
      GPtrArray *slots[] = { pl->before[s], NULL, pl->reduce[s], pl->restore[s] };
      for (size_t k = 0; k < G_N_ELEMENTS (slots); k++)
        {
          if (k == 1)
            g_ptr_array_add (order, pl_graph_node_by_id (g, t->order[s]->id));
          for (guint i = 0; slots[k] && i < slots[k]->len; i++)
            g_ptr_array_add (order, slots[k]->pdata[i]);
        }
    }
  pl_graph_set_node_order (g, (PlNode *const *) order->pdata, (int) order->len);
}

/* Applies the first k candidates to g. */
bool
pl_swap_apply_plan (PlGraph *g, const PlTimingAnalysis *t, GPtrArray *cands, guint k, Counts *counts, GError **error)
{
  Placement pl = { .t = t };
  GPtrArray ***lists[] = { &pl.before, &pl.reduce, &pl.restore };
  for (size_t l = 0; l < G_N_ELEMENTS (lists); l++)
    *lists[l] = g_new0 (GPtrArray *, t->n_steps + 1);
  bool ok = true;
  for (guint i = 0; ok && i < MIN (k, cands->len); i++)
    ok = apply_candidate (g, cands->pdata[i], &pl, error);
  if (ok)
    reorder_nodes (g, &pl);
  for (size_t l = 0; l < G_N_ELEMENTS (lists); l++)
    {
      for (int s = 0; s <= t->n_steps; s++)
        if ((*lists[l])[s])
          g_ptr_array_unref ((*lists[l])[s]);
      g_free (*lists[l]);
    }
  if (counts)
    *counts = pl.counts;
  return ok;
}

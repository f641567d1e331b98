/* swap-plan.c — the swap pass's choice of tensors to move and the plan of
 * each (swap.c, steps 2 to 4): from the timing analysis's slack, the
 * tensors whose edges wait longer than th_tts and that are larger than th_s,
 * what reduces each (compress, swap or both) and where, its far consumers
 * grouped into restorations with their prefetch triggers, and the
 * allocation serialized after the reduction. Nothing here changes the
 * graph: swap-rewrite.c applies a plan.
 */
#define G_LOG_DOMAIN "passlab"
#include "swap-private.h"

static void
candidate_free (Candidate *c)
{
  for (guint i = 0; c->restores && i < c->restores->len; i++)
    g_array_unref (g_array_index (c->restores, Restore, i).uses);
  if (c->restores)
    g_array_unref (c->restores);
  g_free (c->name);
  g_free (c);
}

/* Time of the reduction plus one restoration: the least slack that can hide
 * them (the automatic threshold). */
static double
round_trip_ms (int64_t bytes, bool compress, bool swap, const PlTimingOptions *o)
{
  int64_t moved = compress ? bytes / 2 : bytes;
  double ms = 0;
  if (swap)
    ms += 2 * pl_timing_copy_ms (moved, o);
  if (compress)  /* each conversion reads one form and writes the other */
    ms += 2 * (o->launch_us * 1e-3 + (double) (bytes + bytes / 2) / (o->device_gbps * 1e9) * 1e3);
  return ms;
}

/* The restoration's copy time, which the prefetch trigger must leave before
 * the consumer; a decompression runs on the compute stream and cannot be
 * hidden, so compress-only restorations go right before their consumer. */
static double
restore_lead_ms (const Candidate *c, const PlTimingOptions *o)
{
  return c->swap ? pl_timing_copy_ms (pl_swap_copied_bytes (c), o) : 0.0;
}

static bool
is_memory_op (const PlNode *node)
{
  return node && pl_op_info (node->op)->category == PL_CAT_MEMORY;
}

/* Values the pass leaves alone: constants (weights, not in the device
 * curve), host values, what the memory ops make, and tensors a memory op
 * already reads (moved by an earlier run). */
static bool
movable (const PlValue *v)
{
  if (v->constant || is_memory_op (v->producer))
    return false;
  for (int u = 0; u < v->n_uses; u++)
    if (is_memory_op (v->uses[u].node))
      return false;
  return true;
}

/* The prefetch trigger of a restoration whose first consumer is at c_step:
 * in [lo, c_step - 1]; -1 when that is empty. */
static int
choose_q (const PlTimingAnalysis *t, const Params *p, int lo, int c_step, double lead_ms)
{
  if (lo > c_step - 1)
    return -1;
  if (p->prefetch_distance > 0)
    return MAX (lo, c_step - p->prefetch_distance);
  double need = t->trt[t->order[c_step]->id] - lead_ms;
  for (int s = c_step - 1; s >= lo; s--)
    if (t->finish[t->order[s]->id] <= need + 1e-12)
      return s;
  return lo;  /* the copy cannot be hidden: start it as early as the plan allows */
}

/* The step of the next node after the reduction that allocates at least
 * half of what it frees, before `limit` (at the latest the first prefetch
 * trigger); -1 if none. */
static int
choose_serialize (const PlTimingAnalysis *t, const Candidate *c, int limit)
{
  int64_t freed = c->bytes - pl_swap_kept_bytes (c);
  int first = c->anchor_before ? c->anchor_step : c->anchor_step + 1;
  for (int s = first; s < MIN (limit, t->n_steps); s++)
    {
      const PlNode *node = t->order[s];
      int64_t out = 0;
      for (int k = 0; k < node->n_outputs; k++)
        if (node->outputs[k] && !pl_value_on_host (node->outputs[k]))
          out += pl_value_bytes (node->outputs[k], t->options.sym_size, NULL);
      if (out > 0 && 2 * out >= freed)
        return s;
    }
  return -1;
}

/* The last tight step before `step` (tight: sorted steps of t's schedule),
 * -1 if none. */
static int
tight_before (const GArray *tight, int step)
{
  int last = -1;
  for (guint i = 0; tight && i < tight->len && g_array_index (tight, int, i) < step; i++)
    last = g_array_index (tight, int, i);
  return last;
}

/* Splits c's far edges (in schedule order) into restorations and picks
 * their prefetch triggers. Edges whose consumer comes too soon after the
 * reduction for a restoration are dropped (those consumers keep reading x).
 * No restored copy waits across a tight step it is not read by: a group
 * ends before it and the next restoration starts after it. */
static void
plan_restores (const PlTimingAnalysis *t, const Params *p, const GArray *tight, Candidate *c, GArray *far)
{
  double lead = restore_lead_ms (c, &t->options);
  double gap = MAX (c->threshold, lead);
  int lo = c->anchor_before ? c->anchor_step : c->anchor_step + 1;
  Restore *cur = NULL;
  double last_start = 0;
  int last_step = -1;

  for (guint i = 0; i < far->len; i++)
    {
      const PlTimingEdge *e = g_array_index (far, const PlTimingEdge *, i);
      int step = t->step[e->consumer->id];
      int wall = tight_before (tight, step);
      if (cur && (e->trt - last_start <= gap || step == last_step) && wall <= last_step)
        {
          g_array_append_val (cur->uses, ((Use) { e->consumer->id, e->index }));
          last_start = e->trt, last_step = step;
          continue;
        }
      /* a new restoration, no earlier than the previous group's last
       * consumer nor the last tight step before its own */
      int q = choose_q (t, p, MAX (cur ? MAX (lo, last_step) : lo, wall), step, lead);
      if (q < 0)
        continue;
      Restore r = { g_array_new (FALSE, FALSE, sizeof (Use)), step, q };
      g_array_append_val (r.uses, ((Use) { e->consumer->id, e->index }));
      g_array_append_val (c->restores, r);
      cur = &g_array_index (c->restores, Restore, c->restores->len - 1);
      last_start = e->trt, last_step = step;
    }
}

static int
compare_candidates (gconstpointer a, gconstpointer b)
{
  const Candidate *x = *(Candidate *const *) a, *y = *(Candidate *const *) b;
  if (x->bytes != y->bytes)
    return x->bytes < y->bytes ? 1 : -1;
  if (x->slack != y->slack)
    return x->slack < y->slack ? 1 : -1;
  return x->value_id < y->value_id ? -1 : x->value_id > y->value_id;
}

/* Every tensor with an edge of slack > th_tts and size > th_s, planned, the
 * largest first. */
GPtrArray *
pl_swap_plan_candidates (const PlTimingAnalysis *t, const Params *p, double th_tts, int64_t th_s, const GArray *tight)
{
  const PlGraph *g = t->graph;
  GPtrArray *cands = g_ptr_array_new_with_free_func ((GDestroyNotify) candidate_free);
  /* far edges per value id, in schedule order (t->edges is) */
  g_autoptr (GHashTable) far = g_hash_table_new_full (NULL, NULL, NULL, (GDestroyNotify) g_array_unref);
  g_autoptr (GHashTable) out_far = g_hash_table_new (NULL, NULL);

  for (int i = 0; i < t->n_edges; i++)
    {
      const PlTimingEdge *e = &t->edges[i];
      const PlValue *v = e->value;
      if (!v || e->bytes <= th_s || e->bytes <= 0 || v->constant || pl_value_on_host (v))
        continue;
      bool f32 = v->dtype == PL_DTYPE_F32;
      if (p->mode == MODE_COMPRESS && !f32)
        continue;
      bool compress = p->mode != MODE_SWAP && f32;
      bool swap = p->mode != MODE_COMPRESS;
      double th = th_tts >= 0 ? th_tts : round_trip_ms (e->bytes, compress, swap, &t->options);
      if (!(e->tts > th))
        continue;
      if (e->consumer == NULL)
        {
          /* delivered from host memory, in its own dtype (a plain swap, even in mode both) */
          if (p->outputs && p->mode != MODE_COMPRESS)
            g_hash_table_add (out_far, (gpointer) v);
          continue;
        }
      GArray *list = g_hash_table_lookup (far, v);
      if (!list)
        {
          list = g_array_new (FALSE, FALSE, sizeof (const PlTimingEdge *));
          g_hash_table_insert (far, (gpointer) v, list);
        }
      g_array_append_val (list, e);
    }

  g_autoptr (GHashTable) outputs = g_hash_table_new (NULL, NULL);
  for (guint i = 0; i < g->outputs->len; i++)
    g_hash_table_add (outputs, g->outputs->pdata[i]);

  /* one candidate per value, in value order (deterministic) */
  for (guint i = 0; i < g->values->len; i++)
    {
      const PlValue *v = g->values->pdata[i];
      GArray *list = g_hash_table_lookup (far, v);
      bool to_output = g_hash_table_contains (out_far, v);
      if ((!list && !to_output) || !movable (v))
        continue;
      /* an output that stays on the device keeps x there until the end: nothing to gain */
      if (!to_output && g_hash_table_contains (outputs, v))
        continue;

      Candidate *c = g_new0 (Candidate, 1);
      c->value_id = v->id;
      c->name = g_strdup (v->name);
      c->bytes = pl_value_bytes (v, t->options.sym_size, NULL);
      c->compress = p->mode != MODE_SWAP && v->dtype == PL_DTYPE_F32 && !to_output;
      c->swap = p->mode != MODE_COMPRESS;
      c->to_output = to_output;
      c->threshold = th_tts >= 0 ? th_tts : round_trip_ms (c->bytes, c->compress, c->swap, &t->options);
      c->restores = g_array_new (FALSE, FALSE, sizeof (Restore));
      if (v->producer)
        c->anchor_step = t->step[v->producer->id];
      else
        {
          /* a graph input: the reduction goes right before its first reader */
          c->anchor_before = true;
          c->anchor_step = t->n_steps;
          for (int u = 0; u < v->n_uses; u++)
            c->anchor_step = MIN (c->anchor_step, t->step[v->uses[u].node->id]);
          if (c->anchor_step >= t->n_steps)
            {
              candidate_free (c);   /* an input nobody reads: there is nothing to schedule around */
              continue;
            }
        }
      for (guint k = 0; list && k < list->len; k++)
        c->slack = MAX (c->slack, g_array_index (list, const PlTimingEdge *, k)->tts);
      if (to_output)
        c->slack = MAX (c->slack, t->makespan - t->tat[v->id]);
      if (list)
        plan_restores (t, p, tight, c, list);
      if (c->restores->len == 0 && !to_output)
        {
          candidate_free (c);
          continue;
        }
      int limit = c->restores->len > 0 ? g_array_index (c->restores, Restore, 0).q_step + 1 : t->n_steps;
      c->serialize_step = p->serialize ? choose_serialize (t, c, limit) : -1;
      g_ptr_array_add (cands, c);
    }
  g_ptr_array_sort (cands, compare_candidates);
  return cands;
}

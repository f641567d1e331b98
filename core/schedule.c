/* schedule.c — the memory profile of a graph: a schedule, each value's live
 * range in it, and the bytes live at every step.
 *
 * The schedule is pl_graph_topo_order (data and control edges, ties in
 * insertion order), so control edges that a pass inserts (swap-out before a
 * big allocation) move nodes and change the curve.
 *
 * Live ranges, as closed step intervals [first, last]:
 *   graph inputs     [0, last use]            (allocated before the run)
 *   intermediates    [producing step, last use]
 *   graph outputs    [..., n_steps - 1]       (kept until the end)
 * A value nobody reads is still live during the step that produces it (or
 * step 0 for an input). Constants are weights, not activations: they are
 * counted once in param_bytes and never in live_bytes.
 * Host values (SwapOut outputs, swapped to host memory) follow the same
 * live ranges on a second curve, host_live_bytes, and are left out of the
 * device curve: a swap-out frees its input's device memory from the step
 * after its last device reader, and the swap-in allocates it again.
 *
 * In-place sharing (pl_in_place_input; XLA's buffer assignment, TFLite's
 * and PyTorch's in-place ops do the same): an elementwise node writing
 * element i from the elements i of its inputs may write over an input it
 * reads for the last time. The output then lives in that input's memory:
 * both are live at the step that writes it, but its bytes are counted once
 * (the input's), and from the next step on as the output's. The runtime's
 * memory plan shares the same buffers by the same rule, so a binary op on
 * two dying activations holds two of them, not three.
 *
 * The curve is built with a difference array: O(values + uses + steps).
 */
#define G_LOG_DOMAIN "passlab"

#include "schedule.h"

/* Element size assumed when a value's dtype is not known (an opaque op's
 * outputs): f32, the common case. Flags the profile as assumed. */
#define ASSUMED_ELEMENT_SIZE 4

int64_t
pl_value_bytes (const PlValue *v, int64_t sym_size, bool *assumed)
{
  g_return_val_if_fail (v != NULL, 0);

  if (sym_size < 0)
    sym_size = 0;

  int64_t elem = (int64_t) pl_dtype_size (v->dtype);
  bool guessed = false;
  if (elem == 0)
    {
      elem = ASSUMED_ELEMENT_SIZE;
      guessed = true;
    }

  /* Unknown rank: assume one dim of sym_size. */
  int64_t numel = 1;
  if (v->shape.rank == PL_RANK_UNKNOWN)
    {
      numel = sym_size;
      guessed = true;
    }
  else
    {
      for (int i = 0; i < v->shape.rank; i++)
        {
          int64_t d = v->shape.dims[i].size;
          if (d < 0)
            {
              d = sym_size;
              guessed = true;
            }
          if (!pl_mul_overflow (numel, d, &numel))
            numel = PL_MAX_NUMEL;   /* saturate: a size past the limit is reported as the limit */
        }
    }
  if (numel > PL_MAX_NUMEL)
    numel = PL_MAX_NUMEL;

  if (guessed && assumed != NULL)
    *assumed = true;
  return numel * elem;
}

bool
pl_value_on_host (const PlValue *v)
{
  g_return_val_if_fail (v != NULL, false);
  return v->producer != NULL && v->producer->op == PL_OP_SwapOut;
}

void
pl_memory_profile_free (PlMemoryProfile *p)
{
  if (p == NULL)
    return;
  g_free (p->order);
  g_free (p->live_bytes);
  g_free (p->host_live_bytes);
  g_free (p);
}

/* The step index of every node of the schedule, keyed by node pointer. */
static GHashTable *
step_index (PlNode **order, int n)
{
  GHashTable *steps = g_hash_table_new (g_direct_hash, g_direct_equal);
  for (int i = 0; i < n; i++)
    g_hash_table_insert (steps, order[i], GINT_TO_POINTER (i));
  return steps;
}

/* The last step that reads v, or -1 if none does. */
static int
last_use_step (const PlValue *v, GHashTable *steps)
{
  int last = -1;
  for (int u = 0; u < v->n_uses; u++)
    {
      gpointer s;
      if (g_hash_table_lookup_extended (steps, v->uses[u].node, NULL, &s))
        last = MAX (last, GPOINTER_TO_INT (s));
    }
  return last;
}

/* --- in-place sharing ----------------------------------------------------------- */

/* An elementwise op, or a fusion of nothing else (constants aside): every
 * output element is computed from the same-index elements of the inputs
 * of its shape. */
static bool
elementwise_node (const PlNode *node)
{
  if (!node->body)
    {
      const PlOpInfo *info = pl_op_info (node->op);
      return info && info->category == PL_CAT_ELEMENTWISE;
    }
  for (guint i = 0; i < node->body->nodes->len; i++)
    {
      const PlNode *x = node->body->nodes->pdata[i];
      if (x->op != PL_OP_Constant && (x->body || !elementwise_node (x)))
        return false;
    }
  return true;
}

/* Whether out may be stored in in's memory, element for element. */
static bool
same_storage (const PlValue *in, const PlValue *out)
{
  size_t size = pl_dtype_size (in->dtype);
  return size > 0 && size == pl_dtype_size (out->dtype) && in->layout == out->layout &&
         in->shape.rank != PL_RANK_UNKNOWN && pl_shape_equal (&in->shape, &out->shape);
}

/* Whether in's memory is free to take: an intermediate of the device. */
static bool
overwritable (const PlValue *in)
{
  return in->constant == NULL && !in->is_input && in->producer != NULL && !pl_value_on_host (in) &&
         !pl_value_is_output (in);
}

int
pl_in_place_input (const PlNode *node, int out, const bool *dies)
{
  g_return_val_if_fail (node != NULL && dies != NULL, -1);
  if (out < 0 || out >= node->n_outputs || !node->outputs[out] || !elementwise_node (node))
    return -1;
  /* the outputs before `out` choose first; a value goes to one of them */
  g_autofree const PlValue **taken = g_new0 (const PlValue *, node->n_outputs);
  int choice = -1;
  for (int j = 0; j <= out; j++)
    {
      const PlValue *o = node->outputs[j];
      choice = -1;
      for (int k = 0; o && !pl_value_on_host (o) && k < node->n_inputs && choice < 0; k++)
        {
          const PlValue *in = node->inputs[k];
          bool ok = in && dies[k] && same_storage (in, o) && overwritable (in);
          for (int t = 0; ok && t < j; t++)
            ok = taken[t] != in;
          if (ok)
            choice = k;
        }
      taken[j] = choice >= 0 ? node->inputs[choice] : NULL;
    }
  return choice;
}

/* The graph outputs as a set: pl_value_is_output scans the output list. */
static GHashTable *
output_set (const PlGraph *g)
{
  GHashTable *outputs = g_hash_table_new (NULL, NULL);
  for (guint i = 0; i < g->outputs->len; i++)
    g_hash_table_add (outputs, g->outputs->pdata[i]);
  return outputs;
}

/* The outputs of node, run at `step`, that are written in place over an
 * input (pl_in_place_input with this schedule's last uses), into `shared`. */
static void
add_in_place_outputs (const PlNode *node, int step, GHashTable *steps, GHashTable *outputs, GHashTable *shared)
{
  if (node->n_inputs == 0 || !elementwise_node (node))
    return;
  g_autofree bool *dies = g_new0 (bool, node->n_inputs);
  for (int k = 0; k < node->n_inputs; k++)
    {
      const PlValue *v = node->inputs[k];
      dies[k] = v && v->constant == NULL && !g_hash_table_contains (outputs, v) && last_use_step (v, steps) == step;
    }
  for (int j = 0; j < node->n_outputs; j++)
    if (pl_in_place_input (node, j, dies) >= 0)
      g_hash_table_add (shared, node->outputs[j]);
}

/* The values written in place over an input, over the whole schedule. */
static GHashTable *
in_place_set (PlNode *const *order, int n, GHashTable *steps, GHashTable *outputs)
{
  GHashTable *shared = g_hash_table_new (NULL, NULL);
  for (int i = 0; i < n; i++)
    add_in_place_outputs (order[i], i, steps, outputs, shared);
  return shared;
}

/* v's live range [*first, *last] in a schedule of n steps (see the top of
 * the file); false for a constant, or when there is nothing to be live in. */
static bool
live_range (const PlValue *v, GHashTable *steps, GHashTable *outputs, int n, int *first, int *last)
{
  if (v->constant != NULL || n == 0)
    return false;
  /* A value with neither producer nor data (only in graphs under
   * construction) is treated like an input. */
  *first = 0;
  if (v->producer != NULL)
    {
      gpointer s;
      if (!g_hash_table_lookup_extended (steps, v->producer, NULL, &s))
        return false;   /* produced outside this graph's schedule: cannot happen in a verified graph */
      *first = GPOINTER_TO_INT (s);
    }
  *last = MAX (*first, last_use_step (v, steps));
  if (g_hash_table_contains (outputs, v))
    *last = n - 1;
  return true;
}

PlMemoryProfile *
pl_memory_profile (const PlGraph *g, int64_t sym_size, GError **error)
{
  g_return_val_if_fail (g != NULL, NULL);

  int n = 0;
  PlNode **order = pl_graph_topo_order (g, &n, error);
  if (order == NULL)
    return NULL;

  PlMemoryProfile *p = g_new0 (PlMemoryProfile, 1);
  p->n_steps = n;
  p->order = order;
  p->live_bytes = g_new0 (int64_t, MAX (n, 1));
  p->host_live_bytes = g_new0 (int64_t, MAX (n, 1));
  p->peak_step = -1;

  g_autoptr (GHashTable) steps = step_index (order, n);
  /* delta[i] changes the live total from step i on; delta[n] is past the end.
   * host_delta: the same for host values. */
  g_autofree int64_t *delta = g_new0 (int64_t, n + 1);
  g_autofree int64_t *host_delta = g_new0 (int64_t, n + 1);
  g_autoptr (GHashTable) outputs = output_set (g);
  g_autoptr (GHashTable) shared = in_place_set (order, n, steps, outputs);
  p->n_in_place = (int) g_hash_table_size (shared);

  for (guint i = 0; i < g->values->len; i++)
    {
      const PlValue *v = g_ptr_array_index (g->values, i);
      int64_t bytes = pl_value_bytes (v, sym_size, &p->assumed_sizes);

      if (v->constant != NULL)
        {
          p->param_bytes += bytes;
          continue;
        }
      if (v->is_input)
        p->input_bytes += bytes;
      int first, last;
      if (!live_range (v, steps, outputs, n, &first, &last))
        continue;

      int64_t *d = pl_value_on_host (v) ? host_delta : delta;
      /* written over an input: that input's bytes hold it at its own step */
      if (g_hash_table_contains (shared, v))
        first++;
      if (first > last)
        continue;
      d[first] += bytes;
      d[last + 1] -= bytes;
    }

  int64_t live = 0, host_live = 0;
  for (int i = 0; i < n; i++)
    {
      live += delta[i];
      host_live += host_delta[i];
      p->live_bytes[i] = live;
      p->host_live_bytes[i] = host_live;
      p->host_peak_bytes = MAX (p->host_peak_bytes, host_live);
      if (p->peak_step < 0 || live > p->peak_bytes)
        {
          p->peak_bytes = live;
          p->peak_step = i;
        }
    }
  /* With no steps, the inputs alone are what the graph holds. */
  if (p->input_bytes > p->peak_bytes)
    p->peak_bytes = p->input_bytes;
  return p;
}

GPtrArray *
pl_memory_profile_live_at (const PlMemoryProfile *p, const PlGraph *g, int step)
{
  g_return_val_if_fail (p != NULL && g != NULL, NULL);
  GPtrArray *live = g_ptr_array_new ();
  if (step < 0 || step >= p->n_steps)
    return live;
  g_autoptr (GHashTable) steps = step_index (p->order, p->n_steps);
  g_autoptr (GHashTable) outputs = output_set (g);
  g_autoptr (GHashTable) shared = g_hash_table_new (NULL, NULL);
  add_in_place_outputs (p->order[step], step, steps, outputs, shared);
  for (guint i = 0; i < g->values->len; i++)
    {
      PlValue *v = g_ptr_array_index (g->values, i);
      int first, last;
      if (live_range (v, steps, outputs, p->n_steps, &first, &last) && first <= step && step <= last &&
          !g_hash_table_contains (shared, v))
        g_ptr_array_add (live, v);
    }
  return live;
}

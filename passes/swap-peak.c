/* swap-peak.c — what the swap pass's plans leave live on the device (swap.c,
 * step 6): the planned device peak of a memory profile (with a
 * convolution's workspace), of a plan applied to a copy of the graph, and
 * the floor of the schedule, below which no plan goes. The budget search
 * (swap-budget.c) and the report (swap-report.c) measure with these.
 */
#define G_LOG_DOMAIN "passlab"
#include "swap-private.h"

/* Whether node runs a convolution (alone or in a fusion): the runtime's
 * im2col (ConvTranspose: column matrix) and packed weights live beside its
 * inputs and outputs. */
bool
pl_swap_runs_conv (const PlNode *node)
{
  if (node->op == PL_OP_Conv || node->op == PL_OP_ConvTranspose)
    return true;
  for (guint i = 0; node->body && i < node->body->nodes->len; i++)
    if (pl_swap_runs_conv (node->body->nodes->pdata[i]))
      return true;
  return false;
}

/* The planned device peak of the profile mem: each step's live bytes, plus
 * `workspace` while a convolution runs; *at (may be NULL): the step
 * reaching it. */
int64_t
pl_swap_planned_peak (const PlMemoryProfile *mem, int64_t workspace, int *at)
{
  int64_t peak = mem->peak_bytes;
  int where = MAX (mem->peak_step, 0);
  for (int s = 0; workspace > 0 && s < mem->n_steps; s++)
    if (mem->live_bytes[s] + workspace > peak && pl_swap_runs_conv (mem->order[s]))
      peak = mem->live_bytes[s] + workspace, where = s;
  if (at)
    *at = where;
  return peak;
}

/* The planned device peak with the first k candidates applied (to a copy),
 * and where it is reached: the step of t's schedule running then (an
 * inserted node counts as the next original node, which it is placed for). */
bool
pl_swap_peak_with (const PlGraph *g, const PlTimingAnalysis *t, const Params *p, GPtrArray *cands, guint k, int64_t *peak,
           int *at, GError **error)
{
  g_autoptr (PlGraph) copy = pl_graph_copy (g);
  if (!pl_swap_apply_plan (copy, t, cands, k, NULL, error))
    return false;
  g_autoptr (PlMemoryProfile) mem = pl_memory_profile (copy, t->options.sym_size, error);
  if (!mem)
    return false;
  int where;
  *peak = pl_swap_planned_peak (mem, p->workspace, &where);
  if (at)
    {
      *at = t->n_steps - 1;
      for (int s = where; s < mem->n_steps; s++)
        {
          guint32 id = mem->order[s]->id;
          if (id < t->n_node_ids && t->step[id] >= 0)
            {
              *at = t->step[id];
              break;
            }
        }
    }
  return true;
}

/* What the node at step s reads and writes in device memory: while it runs
 * those are live whatever is swapped, so no plan of this schedule has a
 * peak below the largest of them (the floor). An output that may be
 * written in place over an input (pl_in_place_input, as if every input
 * died here: a plan can make it so by restoring a copy for this node)
 * adds nothing: a binary elementwise op holds two tensors, not three. */
static int64_t
step_footprint (const PlTimingAnalysis *t, int s)
{
  const PlNode *node = t->order[s];
  g_autofree bool *dies = g_new (bool, MAX (node->n_inputs, 1));
  for (int k = 0; k < node->n_inputs; k++)
    dies[k] = true;
  int64_t bytes = 0;
  for (int k = 0; k < node->n_inputs + node->n_outputs; k++)
    {
      const PlValue *v = k < node->n_inputs ? node->inputs[k] : node->outputs[k - node->n_inputs];
      if (!v || v->constant || pl_value_on_host (v))
        continue;
      if (k >= node->n_inputs && pl_in_place_input (node, k - node->n_inputs, dies) >= 0)
        continue;
      bool seen = false;   /* a value read twice counts once */
      for (int j = 0; j < k && !seen; j++)
        seen = (j < node->n_inputs ? node->inputs[j] : node->outputs[j - node->n_inputs]) == v;
      if (!seen)
        bytes += pl_value_bytes (v, t->options.sym_size, NULL);
    }
  return bytes;
}

int64_t
pl_swap_schedule_floor (const PlTimingAnalysis *t, int64_t workspace, int *at)
{
  int64_t floor_bytes = 0;
  *at = -1;
  for (int s = 0; s < t->n_steps; s++)
    {
      int64_t b = step_footprint (t, s) + (pl_swap_runs_conv (t->order[s]) ? workspace : 0);
      if (b > floor_bytes)
        floor_bytes = b, *at = s;
    }
  return floor_bytes;
}

/* interp.c — the reference interpreter: runs a graph node by node in a
 * topological order, calling each op's reference implementation.
 *
 * Tensors live in a table indexed by value id and are released as soon as
 * their last reader ran, so peak memory follows the schedule's liveness.
 * Fusion nodes run their body recursively. */
#define G_LOG_DOMAIN "passlab"
#include "interp.h"

#include <string.h>

static bool
check_input (const PlValue *v, const PlTensor *t, GError **error)
{
  if (!t)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "no data given for input '%s'", v->name);
      return false;
    }
  if (v->dtype != PL_DTYPE_UNDEFINED && v->dtype != t->dtype)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "input '%s' is declared %s but was given %s",
                   v->name, pl_dtype_name (v->dtype), pl_dtype_name (t->dtype));
      return false;
    }
  bool ok = v->shape.rank < 0 || v->shape.rank == t->rank;
  for (int i = 0; ok && i < v->shape.rank; i++)
    ok = v->shape.dims[i].size < 0 || v->shape.dims[i].size == t->dims[i];
  if (!ok)
    {
      PlShape ts = pl_tensor_shape (t);
      g_autofree char *want = pl_shape_to_string (&v->shape);
      g_autofree char *got = pl_shape_to_string (&ts);
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "input '%s' is declared %s but was given %s",
                   v->name, want, got);
      return false;
    }
  return true;
}

/* Runs one node's body graph on the node's input tensors. */
static bool
eval_fusion (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  PlTensor **outs = pl_interp_run (node->body, inputs, NULL, error);
  if (!outs)
    return false;
  for (int i = 0; i < node->n_outputs; i++)
    outputs[i] = outs[i];
  g_free (outs);
  return true;
}

/* Evaluates node; on success outputs[] holds a tensor for every output slot. */
static bool
eval_node (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlOpInfo *info = pl_op_info (node->op);
  GError *local = NULL;
  bool ok;

  if (node->body)
    ok = eval_fusion (node, inputs, outputs, &local);
  else if (!info->eval)
    {
      g_set_error (&local, PL_ERROR, PL_ERROR_UNSUPPORTED, "op %s%s%s is not executable",
                   *node->domain ? node->domain : "", *node->domain ? "::" : "", node->op_type);
      ok = false;
    }
  else
    ok = info->eval (node, inputs, outputs, &local);

  for (int i = 0; ok && i < node->n_outputs; i++)
    {
      const PlValue *v = node->outputs[i];
      if (!v)
        continue;
      if (!outputs[i])
        g_set_error (&local, PL_ERROR, PL_ERROR_EXEC, "produced no tensor for output %d", i), ok = false;
      else if (v->dtype != PL_DTYPE_UNDEFINED && v->dtype != outputs[i]->dtype)
        g_set_error (&local, PL_ERROR, PL_ERROR_EXEC, "output '%s' was inferred %s but computed as %s",
                     v->name, pl_dtype_name (v->dtype), pl_dtype_name (outputs[i]->dtype)), ok = false;
    }
  if (!ok)
    {
      g_autofree char *d = pl_node_describe (node);
      g_set_error (error, PL_ERROR, local ? local->code : PL_ERROR_EXEC, "%s: %s", d,
                   local ? local->message : "failed");
      g_clear_error (&local);
    }
  return ok;
}

PlTensor **
pl_interp_run (const PlGraph *g, PlTensor *const *inputs, const PlInterpOptions *options, GError **error)
{
  int n;
  g_autofree PlNode **order = pl_graph_topo_order (g, &n, error);
  if (!order)
    return NULL;

  guint nv = g->next_value_id;
  g_autofree PlTensor **live = g_new0 (PlTensor *, MAX (nv, 1));
  g_autofree int *remaining = g_new0 (int, MAX (nv, 1));  /* reads still to come; -1: keep (output) */
  PlTensor **result = NULL;

  for (guint i = 0; i < g->values->len; i++)
    {
      PlValue *v = g->values->pdata[i];
      remaining[v->id] = v->n_uses;
      if (v->constant)
        live[v->id] = pl_tensor_ref (v->constant);
    }
  for (guint i = 0; i < g->outputs->len; i++)
    remaining[((PlValue *) g->outputs->pdata[i])->id] = -1;
  for (guint i = 0; i < g->inputs->len; i++)
    {
      PlValue *v = g->inputs->pdata[i];
      if (!check_input (v, inputs ? inputs[i] : NULL, error))
        goto out;
      live[v->id] = pl_tensor_ref (inputs[i]);
    }

  for (int k = 0; k < n; k++)
    {
      PlNode *node = order[k];
      /* Room for every input slot the op declares, so an omitted trailing
       * optional input reads as NULL instead of past the array. */
      int slots = MAX (node->n_inputs, pl_op_info (node->op)->max_inputs);
      g_autofree PlTensor **ins = g_new0 (PlTensor *, MAX (slots, 1));
      g_autofree PlTensor **outs = g_new0 (PlTensor *, MAX (node->n_outputs, 1));

      for (int i = 0; i < node->n_inputs; i++)
        if (node->inputs[i])
          ins[i] = live[node->inputs[i]->id];
      if (!eval_node (node, ins, outs, error))
        {
          for (int i = 0; i < node->n_outputs; i++)
            pl_tensor_unref (outs[i]);
          goto out;
        }
      for (int i = 0; i < node->n_outputs; i++)
        {
          if (node->outputs[i])
            live[node->outputs[i]->id] = outs[i];
          else
            pl_tensor_unref (outs[i]);   /* an omitted optional output */
        }
      if (options && options->hook)
        options->hook (node, outs, options->hook_data);
      /* Free what no later node reads. */
      for (int i = 0; i < node->n_inputs; i++)
        {
          PlValue *v = node->inputs[i];
          if (v && remaining[v->id] > 0 && --remaining[v->id] == 0)
            g_clear_pointer (&live[v->id], pl_tensor_unref);
        }
      for (int i = 0; i < node->n_outputs; i++)
        {
          PlValue *v = node->outputs[i];
          if (v && remaining[v->id] == 0)
            g_clear_pointer (&live[v->id], pl_tensor_unref);
        }
    }

  result = g_new0 (PlTensor *, MAX (g->outputs->len, 1));
  for (guint i = 0; i < g->outputs->len; i++)
    {
      PlValue *v = g->outputs->pdata[i];
      result[i] = live[v->id] ? pl_tensor_ref (live[v->id]) : NULL;
      if (!result[i])
        {
          g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "output '%s' was not computed", v->name);
          pl_interp_free_outputs (result, (int) i);
          result = NULL;
          break;
        }
    }

out:
  for (guint i = 0; i < nv; i++)
    pl_tensor_unref (live[i]);
  return result;
}

void
pl_interp_free_outputs (PlTensor **outputs, int n)
{
  if (!outputs)
    return;
  for (int i = 0; i < n; i++)
    pl_tensor_unref (outputs[i]);
  g_free (outputs);
}

PlTensor **
pl_random_inputs (const PlGraph *g, guint32 seed, int64_t sym_size, GError **error)
{
  g_autoptr (GRand) rand = g_rand_new_with_seed (seed);
  int n = (int) g->inputs->len;
  PlTensor **ts = g_new0 (PlTensor *, MAX (n, 1));

  for (int i = 0; i < n; i++)
    {
      PlValue *v = g->inputs->pdata[i];
      int64_t dims[PL_MAX_RANK];
      if (v->shape.rank < 0 || v->dtype == PL_DTYPE_UNDEFINED)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "input '%s' has an unknown %s", v->name,
                       v->shape.rank < 0 ? "rank" : "dtype");
          pl_interp_free_outputs (ts, i);
          return NULL;
        }
      for (int d = 0; d < v->shape.rank; d++)
        dims[d] = v->shape.dims[d].size >= 0 ? v->shape.dims[d].size : sym_size;
      ts[i] = pl_tensor_new (v->dtype, v->shape.rank, dims, error);
      if (!ts[i])
        {
          pl_interp_free_outputs (ts, i);
          return NULL;
        }
      if (pl_dtype_is_float (v->dtype))
        pl_tensor_fill_random (ts[i], rand, -1.0, 1.0);
      else
        pl_tensor_fill_random (ts[i], rand, 0, 4);
    }
  return ts;
}

/* graph.c — building, changing and copying graphs.
 *
 * Every mutation keeps three things in sync: a value's producer, a value's
 * use list (node, input slot), and the name/id lookup tables. Passes and the
 * Lua bindings go through these functions so the verifier's invariants hold
 * by construction.
 */
#define G_LOG_DOMAIN "passlab"
#include "graph.h"

#include <string.h>

/* --- values ------------------------------------------------------------------ */

static PlValue *
value_new (PlGraph *g, const char *name, guint32 id)
{
  PlValue *v = g_new0 (PlValue, 1);
  v->id = id;
  v->name = g_strdup (name);
  v->shape = pl_shape_unknown ();
  v->graph = g;
  g_ptr_array_add (g->values, v);
  g_hash_table_insert (g->value_by_name, v->name, v);
  g_hash_table_insert (g->value_by_id, GUINT_TO_POINTER (id), v);
  if (id >= g->next_value_id)
    g->next_value_id = id + 1;
  return v;
}

static void
value_free (PlValue *v)
{
  g_free (v->name);
  g_free (v->uses);
  pl_tensor_unref (v->constant);
  g_free (v);
}

static void
value_add_use (PlValue *v, PlNode *node, int index)
{
  if (v->n_uses == v->uses_cap)
    {
      v->uses_cap = MAX (4, v->uses_cap * 2);
      v->uses = g_renew (PlUse, v->uses, v->uses_cap);
    }
  v->uses[v->n_uses++] = (PlUse) { node, index };
}

static void
value_remove_use (PlValue *v, PlNode *node, int index)
{
  /* From the back: rewrites usually detach the most recent use first. */
  for (int i = v->n_uses - 1; i >= 0; i--)
    if (v->uses[i].node == node && v->uses[i].index == index)
      {
        v->uses[i] = v->uses[--v->n_uses];
        return;
      }
  g_assert_not_reached ();
}

/* Removes v from the graph's tables and frees it. */
static void
value_destroy (PlGraph *g, PlValue *v)
{
  g_hash_table_remove (g->value_by_name, v->name);
  g_hash_table_remove (g->value_by_id, GUINT_TO_POINTER (v->id));
  g_ptr_array_remove_fast (g->values, v);
  if (v->is_input)
    g_ptr_array_remove (g->inputs, v);
  value_free (v);
}

static bool
name_is_free (const PlGraph *g, const char *name, GError **error)
{
  if (!name || !*name)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "empty name");
      return false;
    }
  if (g_hash_table_contains (g->value_by_name, name))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "duplicate value name '%s'", name);
      return false;
    }
  return true;
}

/* --- graphs ------------------------------------------------------------------ */

PlGraph *
pl_graph_new (const char *name)
{
  PlGraph *g = g_new0 (PlGraph, 1);
  g->name = g_strdup (name ? name : "graph");
  g->nodes = g_ptr_array_new ();
  g->values = g_ptr_array_new ();
  g->inputs = g_ptr_array_new ();
  g->outputs = g_ptr_array_new ();
  g->value_by_name = g_hash_table_new (g_str_hash, g_str_equal);
  g->node_by_name = g_hash_table_new (g_str_hash, g_str_equal);
  g->node_by_id = g_hash_table_new (NULL, NULL);
  g->value_by_id = g_hash_table_new (NULL, NULL);
  return g;
}

static void
node_free (PlNode *node)
{
  for (int i = 0; i < node->n_attrs; i++)
    pl_attr_clear (&node->attrs[i]);
  g_free (node->attrs);
  g_free (node->inputs);
  g_free (node->outputs);
  g_free (node->controls);
  g_free (node->op_type);
  g_free (node->domain);
  g_free (node->name);
  if (node->body)
    pl_graph_free (node->body);
  g_free (node);
}

void
pl_graph_free (PlGraph *g)
{
  if (!g)
    return;
  for (guint i = 0; i < g->nodes->len; i++)
    node_free (g->nodes->pdata[i]);
  for (guint i = 0; i < g->values->len; i++)
    value_free (g->values->pdata[i]);
  g_ptr_array_free (g->nodes, TRUE);
  g_ptr_array_free (g->values, TRUE);
  g_ptr_array_free (g->inputs, TRUE);
  g_ptr_array_free (g->outputs, TRUE);
  g_hash_table_destroy (g->value_by_name);
  g_hash_table_destroy (g->node_by_name);
  g_hash_table_destroy (g->node_by_id);
  g_hash_table_destroy (g->value_by_id);
  g_free (g->name);
  g_free (g);
}

PlValue *
pl_graph_add_input (PlGraph *g, const char *name, PlDType dtype, const PlShape *shape, GError **error)
{
  g_return_val_if_fail (g != NULL, NULL);
  if (!name_is_free (g, name, error))
    return NULL;
  PlValue *v = value_new (g, name, g->next_value_id);
  v->dtype = dtype;
  v->shape = shape ? *shape : pl_shape_unknown ();
  v->is_input = true;
  g_ptr_array_add (g->inputs, v);
  return v;
}

PlValue *
pl_graph_add_constant (PlGraph *g, const char *name, PlTensor *t, GError **error)
{
  g_return_val_if_fail (g != NULL && t != NULL, NULL);
  if (!name_is_free (g, name, error))
    return NULL;
  PlValue *v = value_new (g, name, g->next_value_id);
  v->constant = pl_tensor_ref (t);
  v->dtype = t->dtype;
  v->shape = pl_tensor_shape (t);
  return v;
}

void
pl_graph_add_output (PlGraph *g, PlValue *v)
{
  g_return_if_fail (g != NULL && v != NULL && v->graph == g);
  g_ptr_array_add (g->outputs, v);
}

void
pl_graph_set_output (PlGraph *g, int index, PlValue *v)
{
  g_return_if_fail (index >= 0 && (guint) index < g->outputs->len && v->graph == g);
  g->outputs->pdata[index] = v;
}

PlValue *
pl_graph_find_value (const PlGraph *g, const char *name)
{
  return g_hash_table_lookup (g->value_by_name, name);
}

PlNode *
pl_graph_find_node (const PlGraph *g, const char *name)
{
  return g_hash_table_lookup (g->node_by_name, name);
}

PlNode *
pl_graph_node_by_id (const PlGraph *g, guint32 id)
{
  return g_hash_table_lookup (g->node_by_id, GUINT_TO_POINTER (id));
}

PlValue *
pl_graph_value_by_id (const PlGraph *g, guint32 id)
{
  return g_hash_table_lookup (g->value_by_id, GUINT_TO_POINTER (id));
}

char *
pl_graph_unique_name (const PlGraph *g, const char *base)
{
  if (!g_hash_table_contains (g->value_by_name, base) && !g_hash_table_contains (g->node_by_name, base))
    return g_strdup (base);
  for (guint k = 1;; k++)
    {
      char *name = g_strdup_printf ("%s_%u", base, k);
      if (!g_hash_table_contains (g->value_by_name, name) && !g_hash_table_contains (g->node_by_name, name))
        return name;
      g_free (name);
    }
}

/* Creates a node record with the given id (used by add_node and copy). */
static PlNode *
node_new (PlGraph *g, guint32 id, const char *op_type, const char *domain, const char *name)
{
  PlNode *node = g_new0 (PlNode, 1);
  node->id = id;
  node->op = pl_op_from_name (op_type, domain);
  node->op_type = g_strdup (op_type);
  node->domain = g_strdup (domain ? domain : "");
  node->name = g_strdup (name);
  node->graph = g;
  g_ptr_array_add (g->nodes, node);
  g_hash_table_insert (g->node_by_name, node->name, node);
  g_hash_table_insert (g->node_by_id, GUINT_TO_POINTER (id), node);
  if (id >= g->next_node_id)
    g->next_node_id = id + 1;
  return node;
}

PlNode *
pl_graph_add_node (PlGraph *g, const char *op_type, const char *domain, const char *name,
                   int n_inputs, PlValue *const *inputs, int n_outputs,
                   const char *const *output_names, GError **error)
{
  g_return_val_if_fail (g != NULL && op_type != NULL && n_inputs >= 0 && n_outputs >= 0, NULL);

  g_autofree char *node_name = NULL;
  if (name && *name)
    {
      if (g_hash_table_contains (g->node_by_name, name))
        {
          g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "duplicate node name '%s'", name);
          return NULL;
        }
      node_name = g_strdup (name);
    }
  else
    node_name = pl_graph_unique_name (g, op_type);

  for (int i = 0; i < n_inputs; i++)
    g_return_val_if_fail (inputs[i] == NULL || inputs[i]->graph == g, NULL);

  /* Check output names before creating anything, so a failure leaves g as it was. */
  for (int i = 0; output_names && i < n_outputs; i++)
    {
      const char *on = output_names[i];
      if (!on || !*on)
        continue;
      if (g_hash_table_contains (g->value_by_name, on))
        {
          g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "duplicate value name '%s'", on);
          return NULL;
        }
      for (int j = 0; j < i; j++)
        if (output_names[j] && strcmp (output_names[j], on) == 0)
          {
            g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "duplicate value name '%s'", on);
            return NULL;
          }
    }

  PlNode *node = node_new (g, g->next_node_id, op_type, domain, node_name);
  node->n_inputs = n_inputs;
  node->inputs = g_new0 (PlValue *, MAX (n_inputs, 1));
  for (int i = 0; i < n_inputs; i++)
    if ((node->inputs[i] = inputs[i]))
      value_add_use (inputs[i], node, i);

  node->n_outputs = n_outputs;
  node->outputs = g_new0 (PlValue *, MAX (n_outputs, 1));
  for (int i = 0; i < n_outputs; i++)
    {
      const char *on = output_names ? output_names[i] : NULL;
      if (on && !*on)
        continue;                           /* omitted optional output */
      g_autofree char *vname = NULL;
      if (on)
        vname = g_strdup (on);
      else
        {
          g_autofree char *base = n_outputs == 1 ? g_strdup (node_name)
                                                 : g_strdup_printf ("%s.%d", node_name, i);
          vname = pl_graph_unique_name (g, base);
        }
      PlValue *v = value_new (g, vname, g->next_value_id);
      v->producer = node;
      v->producer_index = i;
      node->outputs[i] = v;
    }
  return node;
}

void
pl_graph_remove_node (PlGraph *g, PlNode *node)
{
  g_return_if_fail (node != NULL && node->graph == g);
  for (int i = 0; i < node->n_outputs; i++)
    {
      PlValue *v = node->outputs[i];
      g_return_if_fail (v == NULL || (v->n_uses == 0 && !pl_value_is_output (v)));
    }
  /* Nodes that wait on this one lose that control edge. */
  g->n_control_edges -= node->n_controls;
  for (guint k = 0; g->n_control_edges > 0 && k < g->nodes->len; k++)
    {
      PlNode *other = g->nodes->pdata[k];
      for (int c = 0; c < other->n_controls;)
        if (other->controls[c].node == node)
          {
            other->controls[c] = other->controls[--other->n_controls];
            g->n_control_edges--;
          }
        else
          c++;
    }
  for (int i = 0; i < node->n_inputs; i++)
    if (node->inputs[i])
      value_remove_use (node->inputs[i], node, i);
  for (int i = 0; i < node->n_outputs; i++)
    if (node->outputs[i])
      value_destroy (g, node->outputs[i]);

  g_hash_table_remove (g->node_by_name, node->name);
  g_hash_table_remove (g->node_by_id, GUINT_TO_POINTER (node->id));
  g_ptr_array_remove (g->nodes, node);  /* keeps insertion order */
  node_free (node);
}

void
pl_graph_remove_nodes (PlGraph *g, PlNode *const *nodes, int n)
{
  if (n <= 0)
    return;
  g_autoptr (GHashTable) doomed = g_hash_table_new (NULL, NULL);
  for (int i = 0; i < n; i++)
    g_hash_table_add (doomed, nodes[i]);

  /* Unhook inputs first, so outputs read only inside the set have no uses. */
  for (int i = 0; i < n; i++)
    for (int k = 0; k < nodes[i]->n_inputs; k++)
      if (nodes[i]->inputs[k])
        {
          value_remove_use (nodes[i]->inputs[k], nodes[i], k);
          nodes[i]->inputs[k] = NULL;
        }
  for (int i = 0; i < n; i++)
    for (int k = 0; k < nodes[i]->n_outputs; k++)
      {
        PlValue *v = nodes[i]->outputs[k];
        g_return_if_fail (v == NULL || (v->n_uses == 0 && !pl_value_is_output (v)));
      }
  if (g->n_control_edges > 0)
    for (guint k = 0; k < g->nodes->len; k++)
      {
        PlNode *other = g->nodes->pdata[k];
        for (int c = 0; c < other->n_controls;)
          if (g_hash_table_contains (doomed, other->controls[c].node) || g_hash_table_contains (doomed, other))
            {
              other->controls[c] = other->controls[--other->n_controls];
              g->n_control_edges--;
            }
          else
            c++;
      }
  /* Compact the node list once, keeping order. */
  guint w = 0;
  for (guint k = 0; k < g->nodes->len; k++)
    if (!g_hash_table_contains (doomed, g->nodes->pdata[k]))
      g->nodes->pdata[w++] = g->nodes->pdata[k];
  g_ptr_array_set_size (g->nodes, w);

  g_autoptr (GHashTable) dead_values = g_hash_table_new (NULL, NULL);
  for (int i = 0; i < n; i++)
    {
      PlNode *node = nodes[i];
      for (int k = 0; k < node->n_outputs; k++)
        if (node->outputs[k])
          {
            g_hash_table_add (dead_values, node->outputs[k]);
            g_hash_table_remove (g->value_by_name, node->outputs[k]->name);
            g_hash_table_remove (g->value_by_id, GUINT_TO_POINTER (node->outputs[k]->id));
          }
      g_hash_table_remove (g->node_by_name, node->name);
      g_hash_table_remove (g->node_by_id, GUINT_TO_POINTER (node->id));
    }
  w = 0;
  for (guint k = 0; k < g->values->len; k++)
    if (g_hash_table_contains (dead_values, g->values->pdata[k]))
      value_free (g->values->pdata[k]);
    else
      g->values->pdata[w++] = g->values->pdata[k];
  g_ptr_array_set_size (g->values, w);
  for (int i = 0; i < n; i++)
    node_free (nodes[i]);
}

void
pl_graph_set_node_order (PlGraph *g, PlNode *const *order, int n)
{
  g_return_if_fail ((guint) n == g->nodes->len);
  for (int i = 0; i < n; i++)
    g_return_if_fail (order[i]->graph == g && pl_graph_node_by_id (g, order[i]->id) == order[i]);
  memcpy (g->nodes->pdata, order, sizeof (gpointer) * n);
}

void
pl_graph_remove_value (PlGraph *g, PlValue *v)
{
  g_return_if_fail (v != NULL && v->graph == g && v->producer == NULL && v->n_uses == 0);
  g_return_if_fail (!pl_value_is_output (v));
  value_destroy (g, v);
}

void
pl_graph_remove_values (PlGraph *g, PlValue *const *values, int n)
{
  if (n <= 0)
    return;
  g_autoptr (GHashTable) doomed = g_hash_table_new (NULL, NULL);
  for (int i = 0; i < n; i++)
    {
      PlValue *v = values[i];
      g_return_if_fail (v->graph == g && v->producer == NULL && v->n_uses == 0 && !pl_value_is_output (v));
      g_hash_table_add (doomed, v);
      g_hash_table_remove (g->value_by_name, v->name);
      g_hash_table_remove (g->value_by_id, GUINT_TO_POINTER (v->id));
    }
  guint w = 0;
  for (guint k = 0; k < g->values->len; k++)
    if (!g_hash_table_contains (doomed, g->values->pdata[k]))
      g->values->pdata[w++] = g->values->pdata[k];
  g_ptr_array_set_size (g->values, w);
  w = 0;
  for (guint k = 0; k < g->inputs->len; k++)
    if (!g_hash_table_contains (doomed, g->inputs->pdata[k]))
      g->inputs->pdata[w++] = g->inputs->pdata[k];
  g_ptr_array_set_size (g->inputs, w);
  for (int i = 0; i < n; i++)
    value_free (values[i]);
}

bool
pl_value_rename (PlValue *v, const char *name, GError **error)
{
  PlGraph *g = v->graph;
  if (strcmp (v->name, name) == 0)
    return true;
  if (!name_is_free (g, name, error))
    return false;
  g_hash_table_remove (g->value_by_name, v->name);
  g_free (v->name);
  v->name = g_strdup (name);
  g_hash_table_insert (g->value_by_name, v->name, v);
  return true;
}

bool
pl_value_is_output (const PlValue *v)
{
  GPtrArray *outs = v->graph->outputs;
  for (guint i = 0; i < outs->len; i++)
    if (outs->pdata[i] == v)
      return true;
  return false;
}

PlTensor *
pl_value_constant (const PlValue *v)
{
  if (!v)
    return NULL;
  if (v->constant)
    return v->constant;
  if (v->producer && v->producer->op == PL_OP_Constant)
    {
      const PlAttr *a = pl_node_attr (v->producer, "value");
      if (a && a->type == PL_ATTR_TENSOR)
        return a->t;
    }
  return NULL;
}

void
pl_value_replace_uses (PlValue *old_value, PlValue *new_value)
{
  g_return_if_fail (old_value != NULL && new_value != NULL && old_value->graph == new_value->graph);
  if (old_value == new_value)
    return;
  while (old_value->n_uses > 0)
    {
      PlUse u = old_value->uses[old_value->n_uses - 1];
      pl_node_set_input (u.node, u.index, new_value);
    }
  GPtrArray *outs = old_value->graph->outputs;
  for (guint i = 0; i < outs->len; i++)
    if (outs->pdata[i] == old_value)
      outs->pdata[i] = new_value;
}

void
pl_node_set_input (PlNode *node, int index, PlValue *v)
{
  g_return_if_fail (node != NULL && index >= 0);
  g_return_if_fail (v == NULL || v->graph == node->graph);
  if (index >= node->n_inputs)
    {
      node->inputs = g_renew (PlValue *, node->inputs, index + 1);
      for (int i = node->n_inputs; i <= index; i++)
        node->inputs[i] = NULL;
      node->n_inputs = index + 1;
    }
  if (node->inputs[index])
    value_remove_use (node->inputs[index], node, index);
  node->inputs[index] = v;
  if (v)
    value_add_use (v, node, index);
}

void
pl_node_add_control (PlNode *node, PlNode *after, PlControlKind kind)
{
  g_return_if_fail (node != NULL && after != NULL && node->graph == after->graph && node != after);
  for (int i = 0; i < node->n_controls; i++)
    if (node->controls[i].node == after && node->controls[i].kind == kind)
      return;
  node->controls = g_renew (PlControl, node->controls, node->n_controls + 1);
  node->controls[node->n_controls++] = (PlControl) { after, kind };
  node->graph->n_control_edges++;
}

void
pl_node_set_body (PlNode *node, PlGraph *body)
{
  g_return_if_fail (node != NULL);
  if (node->body && node->body != body)
    pl_graph_free (node->body);
  node->body = body;
}

char *
pl_node_describe (const PlNode *node)
{
  return g_strdup_printf ("node '%s' (%s)", node->name, node->op_type);
}

int64_t
pl_graph_param_bytes (const PlGraph *g)
{
  int64_t total = 0;
  for (guint i = 0; i < g->values->len; i++)
    {
      PlValue *v = g->values->pdata[i];
      if (v->constant)
        total += (int64_t) pl_tensor_nbytes (v->constant);
    }
  return total;
}

/* --- attributes -------------------------------------------------------------- */

void
pl_attr_clear (PlAttr *a)
{
  g_free (a->name);
  switch (a->type)
    {
    case PL_ATTR_STRING:  g_free (a->s); break;
    case PL_ATTR_INTS:    g_free (a->ints.v); break;
    case PL_ATTR_FLOATS:  g_free (a->floats.v); break;
    case PL_ATTR_STRINGS:
      for (int i = 0; i < a->strings.n; i++)
        g_free (a->strings.v[i]);
      g_free (a->strings.v);
      break;
    case PL_ATTR_TENSOR:  pl_tensor_unref (a->t); break;
    case PL_ATTR_GRAPH:   pl_graph_free (a->g); break;
    case PL_ATTR_INT:
    case PL_ATTR_FLOAT:   break;
    }
  memset (a, 0, sizeof *a);
}

void
pl_attr_copy (PlAttr *dst, const PlAttr *src)
{
  *dst = *src;
  dst->name = g_strdup (src->name);
  switch (src->type)
    {
    case PL_ATTR_STRING:  dst->s = g_strdup (src->s); break;
    case PL_ATTR_INTS:    dst->ints.v = g_memdup2 (src->ints.v, sizeof (int64_t) * src->ints.n); break;
    case PL_ATTR_FLOATS:  dst->floats.v = g_memdup2 (src->floats.v, sizeof (float) * src->floats.n); break;
    case PL_ATTR_STRINGS:
      dst->strings.v = g_new0 (char *, MAX (src->strings.n, 1));
      for (int i = 0; i < src->strings.n; i++)
        dst->strings.v[i] = g_strdup (src->strings.v[i]);
      break;
    case PL_ATTR_TENSOR:  dst->t = pl_tensor_ref (src->t); break;
    case PL_ATTR_GRAPH:   dst->g = pl_graph_copy (src->g); break;
    case PL_ATTR_INT:
    case PL_ATTR_FLOAT:   break;
    }
}

bool
pl_attr_equal (const PlAttr *a, const PlAttr *b)
{
  if (a->type != b->type || strcmp (a->name, b->name) != 0)
    return false;
  switch (a->type)
    {
    case PL_ATTR_INT:     return a->i == b->i;
    case PL_ATTR_FLOAT:   return memcmp (&a->f, &b->f, sizeof a->f) == 0;
    case PL_ATTR_STRING:  return strcmp (a->s, b->s) == 0;
    case PL_ATTR_INTS:
      return a->ints.n == b->ints.n && (a->ints.n == 0 || memcmp (a->ints.v, b->ints.v, sizeof (int64_t) * a->ints.n) == 0);
    case PL_ATTR_FLOATS:
      return a->floats.n == b->floats.n && (a->floats.n == 0 || memcmp (a->floats.v, b->floats.v, sizeof (float) * a->floats.n) == 0);
    case PL_ATTR_STRINGS:
      if (a->strings.n != b->strings.n)
        return false;
      for (int i = 0; i < a->strings.n; i++)
        if (strcmp (a->strings.v[i], b->strings.v[i]) != 0)
          return false;
      return true;
    case PL_ATTR_TENSOR:  return a->t == b->t;    /* shared data: same reference */
    case PL_ATTR_GRAPH:   return a->g->nodes->len == b->g->nodes->len;
    }
  return false;
}

const PlAttr *
pl_node_attr (const PlNode *node, const char *name)
{
  for (int i = 0; i < node->n_attrs; i++)
    if (strcmp (node->attrs[i].name, name) == 0)
      return &node->attrs[i];
  return NULL;
}

int64_t
pl_node_attr_int (const PlNode *node, const char *name, int64_t def)
{
  const PlAttr *a = pl_node_attr (node, name);
  if (a && a->type == PL_ATTR_INT)
    return a->i;
  if (a && a->type == PL_ATTR_FLOAT)
    return (int64_t) a->f;
  return def;
}

float
pl_node_attr_float (const PlNode *node, const char *name, float def)
{
  const PlAttr *a = pl_node_attr (node, name);
  if (a && a->type == PL_ATTR_FLOAT)
    return a->f;
  if (a && a->type == PL_ATTR_INT)
    return (float) a->i;
  return def;
}

const char *
pl_node_attr_string (const PlNode *node, const char *name, const char *def)
{
  const PlAttr *a = pl_node_attr (node, name);
  return a && a->type == PL_ATTR_STRING ? a->s : def;
}

bool
pl_node_attr_ints (const PlNode *node, const char *name, const int64_t **v, int *n)
{
  const PlAttr *a = pl_node_attr (node, name);
  if (a && a->type == PL_ATTR_INTS)
    {
      *v = a->ints.v;
      *n = a->ints.n;
      return true;
    }
  *v = NULL;
  *n = 0;
  return false;
}

bool
pl_node_attr_floats (const PlNode *node, const char *name, const float **v, int *n)
{
  const PlAttr *a = pl_node_attr (node, name);
  if (a && a->type == PL_ATTR_FLOATS)
    {
      *v = a->floats.v;
      *n = a->floats.n;
      return true;
    }
  *v = NULL;
  *n = 0;
  return false;
}

/* Returns the slot for attribute name, cleared and named, appending if new. */
static PlAttr *
attr_slot (PlNode *node, const char *name, PlAttrType type)
{
  PlAttr *a = (PlAttr *) pl_node_attr (node, name);
  if (a)
    pl_attr_clear (a);
  else
    {
      node->attrs = g_renew (PlAttr, node->attrs, node->n_attrs + 1);
      a = &node->attrs[node->n_attrs++];
    }
  memset (a, 0, sizeof *a);
  a->name = g_strdup (name);
  a->type = type;
  return a;
}

void
pl_node_set_attr_int (PlNode *node, const char *name, int64_t v)
{
  attr_slot (node, name, PL_ATTR_INT)->i = v;
}

void
pl_node_set_attr_float (PlNode *node, const char *name, float v)
{
  attr_slot (node, name, PL_ATTR_FLOAT)->f = v;
}

void
pl_node_set_attr_string (PlNode *node, const char *name, const char *v)
{
  attr_slot (node, name, PL_ATTR_STRING)->s = g_strdup (v);
}

void
pl_node_set_attr_ints (PlNode *node, const char *name, const int64_t *v, int n)
{
  PlAttr *a = attr_slot (node, name, PL_ATTR_INTS);
  a->ints.v = g_new0 (int64_t, MAX (n, 1));
  if (n > 0)
    memcpy (a->ints.v, v, sizeof (int64_t) * n);
  a->ints.n = n;
}

void
pl_node_set_attr_floats (PlNode *node, const char *name, const float *v, int n)
{
  PlAttr *a = attr_slot (node, name, PL_ATTR_FLOATS);
  a->floats.v = g_new0 (float, MAX (n, 1));
  if (n > 0)
    memcpy (a->floats.v, v, sizeof (float) * n);
  a->floats.n = n;
}

void
pl_node_set_attr_strings (PlNode *node, const char *name, const char *const *v, int n)
{
  PlAttr *a = attr_slot (node, name, PL_ATTR_STRINGS);
  a->strings.v = g_new0 (char *, MAX (n, 1));
  for (int i = 0; i < n; i++)
    a->strings.v[i] = g_strdup (v[i]);
  a->strings.n = n;
}

void
pl_node_set_attr_tensor (PlNode *node, const char *name, PlTensor *t)
{
  attr_slot (node, name, PL_ATTR_TENSOR)->t = pl_tensor_ref (t);
}

void
pl_node_set_attr_graph (PlNode *node, const char *name, PlGraph *g)
{
  attr_slot (node, name, PL_ATTR_GRAPH)->g = g;
}

void
pl_node_remove_attr (PlNode *node, const char *name)
{
  PlAttr *a = (PlAttr *) pl_node_attr (node, name);
  if (!a)
    return;
  pl_attr_clear (a);
  int i = (int) (a - node->attrs);
  memmove (a, a + 1, sizeof (PlAttr) * (node->n_attrs - i - 1));
  node->n_attrs--;
}

/* --- copy -------------------------------------------------------------------- */

static PlValue *
copy_value (PlGraph *dst, const PlValue *v)
{
  PlValue *c = value_new (dst, v->name, v->id);
  c->dtype = v->dtype;
  c->shape = v->shape;
  c->is_input = v->is_input;
  c->layout = v->layout;
  if (v->constant)
    c->constant = pl_tensor_ref (v->constant);
  return c;
}

PlGraph *
pl_graph_copy (const PlGraph *g)
{
  PlGraph *c = pl_graph_new (g->name);
  c->opset = g->opset;
  /* Old value/node -> new, so references translate in one pass. */
  g_autoptr (GHashTable) vmap = g_hash_table_new (NULL, NULL);
  g_autoptr (GHashTable) nmap = g_hash_table_new (NULL, NULL);

  for (guint i = 0; i < g->inputs->len; i++)
    {
      PlValue *v = g->inputs->pdata[i];
      PlValue *nv = copy_value (c, v);
      g_ptr_array_add (c->inputs, nv);
      g_hash_table_insert (vmap, v, nv);
    }
  for (guint i = 0; i < g->values->len; i++)
    {
      PlValue *v = g->values->pdata[i];
      if (v->producer == NULL && !v->is_input)
        g_hash_table_insert (vmap, v, copy_value (c, v));
    }
  for (guint k = 0; k < g->nodes->len; k++)
    {
      PlNode *n = g->nodes->pdata[k];
      PlNode *m = node_new (c, n->id, n->op_type, n->domain, n->name);
      m->op = n->op;
      m->n_outputs = n->n_outputs;
      m->outputs = g_new0 (PlValue *, MAX (n->n_outputs, 1));
      for (int i = 0; i < n->n_outputs; i++)
        if (n->outputs[i])
          {
            PlValue *nv = copy_value (c, n->outputs[i]);
            nv->producer = m;
            nv->producer_index = i;
            m->outputs[i] = nv;
            g_hash_table_insert (vmap, n->outputs[i], nv);
          }
      m->n_attrs = n->n_attrs;
      m->attrs = g_new0 (PlAttr, MAX (n->n_attrs, 1));
      for (int i = 0; i < n->n_attrs; i++)
        pl_attr_copy (&m->attrs[i], &n->attrs[i]);
      if (n->body)
        m->body = pl_graph_copy (n->body);
      g_hash_table_insert (nmap, n, m);
    }
  /* Inputs and control edges may point at nodes later in insertion order. */
  for (guint k = 0; k < g->nodes->len; k++)
    {
      PlNode *n = g->nodes->pdata[k];
      PlNode *m = g_hash_table_lookup (nmap, n);
      m->n_inputs = n->n_inputs;
      m->inputs = g_new0 (PlValue *, MAX (n->n_inputs, 1));
      for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i])
          {
            m->inputs[i] = g_hash_table_lookup (vmap, n->inputs[i]);
            value_add_use (m->inputs[i], m, i);
          }
      m->n_controls = n->n_controls;
      m->controls = g_new0 (PlControl, MAX (n->n_controls, 1));
      for (int i = 0; i < n->n_controls; i++)
        m->controls[i] = (PlControl) { g_hash_table_lookup (nmap, n->controls[i].node), n->controls[i].kind };
    }
  for (guint i = 0; i < g->outputs->len; i++)
    g_ptr_array_add (c->outputs, g_hash_table_lookup (vmap, g->outputs->pdata[i]));
  c->next_node_id = g->next_node_id;
  c->next_value_id = g->next_value_id;
  c->n_control_edges = g->n_control_edges;
  return c;
}

/* --- analysis ---------------------------------------------------------------- */

bool
pl_node_infer (PlNode *node, GError **error)
{
  const PlOpInfo *info = pl_op_info (node->op);
  GError *local = NULL;

  if (node->n_inputs < info->min_inputs || (info->max_inputs >= 0 && node->n_inputs > info->max_inputs) ||
      node->n_outputs < info->min_outputs || (info->max_outputs >= 0 && node->n_outputs > info->max_outputs))
    {
      g_autofree char *d = pl_node_describe (node);
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE,
                   "%s: has %d inputs and %d outputs, expects %d..%d inputs and %d..%d outputs",
                   d, node->n_inputs, node->n_outputs, info->min_inputs, info->max_inputs,
                   info->min_outputs, info->max_outputs);
      return false;
    }
  for (int i = 0; i < info->min_inputs && i < node->n_inputs; i++)
    if (node->inputs[i] == NULL)
      {
        g_autofree char *d = pl_node_describe (node);
        g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "%s: required input %d is missing", d, i);
        return false;
      }
  if (!info->infer)
    {
      for (int i = 0; i < node->n_outputs; i++)
        if (node->outputs[i])
          node->outputs[i]->shape = pl_shape_unknown ();
      return true;
    }
  if (!info->infer (node, &local))
    {
      g_autofree char *d = pl_node_describe (node);
      g_set_error (error, PL_ERROR, local->code, "%s: %s", d, local->message);
      g_error_free (local);
      return false;
    }
  return true;
}

bool
pl_graph_infer_shapes (PlGraph *g, GError **error)
{
  int n;
  g_autofree PlNode **order = pl_graph_topo_order (g, &n, error);
  if (!order)
    return false;
  for (int i = 0; i < n; i++)
    if (!pl_node_infer (order[i], error))
      return false;
  return true;
}

/* Kahn's algorithm over data and control edges. Ready nodes are taken in
 * insertion order (a min-heap on the insertion index), so an already
 * topological insertion order is kept as it is. */
PlNode **
pl_graph_topo_order (const PlGraph *g, int *n_nodes, GError **error)
{
  guint n = g->nodes->len;
  g_autoptr (GHashTable) index = g_hash_table_new (NULL, NULL);
  g_autofree int *pending = g_new0 (int, MAX (n, 1));
  g_autofree int *heap = g_new (int, MAX (n, 1));
  /* successors: for each node, the nodes that wait on it through a control edge */
  g_autofree GPtrArray **ctrl_succ = g_new0 (GPtrArray *, MAX (n, 1));
  int heap_len = 0;
  PlNode **order = g_new (PlNode *, MAX (n, 1));
  int done = 0;

  for (guint i = 0; i < n; i++)
    g_hash_table_insert (index, g->nodes->pdata[i], GUINT_TO_POINTER (i));
  for (guint i = 0; i < n; i++)
    {
      PlNode *node = g->nodes->pdata[i];
      for (int k = 0; k < node->n_inputs; k++)
        if (node->inputs[k] && node->inputs[k]->producer)
          pending[i]++;
      for (int k = 0; k < node->n_controls; k++)
        {
          guint p = GPOINTER_TO_UINT (g_hash_table_lookup (index, node->controls[k].node));
          if (!ctrl_succ[p])
            ctrl_succ[p] = g_ptr_array_new ();
          g_ptr_array_add (ctrl_succ[p], node);
          pending[i]++;
        }
    }

#define HEAP_PUSH(x) do { int j_ = heap_len++; heap[j_] = (x); \
    while (j_ > 0 && heap[(j_ - 1) / 2] > heap[j_]) { int t_ = heap[j_]; heap[j_] = heap[(j_ - 1) / 2]; \
      heap[(j_ - 1) / 2] = t_; j_ = (j_ - 1) / 2; } } while (0)

  for (guint i = 0; i < n; i++)
    if (pending[i] == 0)
      HEAP_PUSH ((int) i);

  while (heap_len > 0)
    {
      int top = heap[0];
      heap[0] = heap[--heap_len];
      for (int j = 0;;)
        {
          int l = 2 * j + 1, r = l + 1, m = j;
          if (l < heap_len && heap[l] < heap[m]) m = l;
          if (r < heap_len && heap[r] < heap[m]) m = r;
          if (m == j) break;
          int t = heap[j]; heap[j] = heap[m]; heap[m] = t; j = m;
        }
      PlNode *node = g->nodes->pdata[top];
      order[done++] = node;
      for (int o = 0; o < node->n_outputs; o++)
        {
          PlValue *v = node->outputs[o];
          for (int u = 0; v && u < v->n_uses; u++)
            {
              guint s = GPOINTER_TO_UINT (g_hash_table_lookup (index, v->uses[u].node));
              if (--pending[s] == 0)
                HEAP_PUSH ((int) s);
            }
        }
      if (ctrl_succ[top])
        for (guint k = 0; k < ctrl_succ[top]->len; k++)
          {
            guint s = GPOINTER_TO_UINT (g_hash_table_lookup (index, ctrl_succ[top]->pdata[k]));
            if (--pending[s] == 0)
              HEAP_PUSH ((int) s);
          }
    }
#undef HEAP_PUSH

  for (guint i = 0; i < n; i++)
    if (ctrl_succ[i])
      g_ptr_array_free (ctrl_succ[i], TRUE);

  if ((guint) done != n)
    {
      for (guint i = 0; i < n; i++)
        if (pending[i] > 0)
          {
            g_autofree char *d = pl_node_describe (g->nodes->pdata[i]);
            g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "the graph has a cycle through %s", d);
            break;
          }
      g_free (order);
      return NULL;
    }
  *n_nodes = (int) n;
  return order;
}

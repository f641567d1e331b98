/* dot-export.c — Graphviz DOT text for a graph.
 *
 * What the picture shows:
 *   op nodes        rounded boxes "name\nOp", filled by op category
 *   graph inputs    ellipses "name\ndtype[shape]"
 *   constants       notes (small, grey) "name\ndtype[shape]"
 *   graph outputs   double octagons "name"
 *   data edges      producer -> consumer, labelled "dtype[shape]", plus
 *                   " @NHWC" when the value has a non-default layout
 *   LayoutTransform a third label line "to NHWC"
 *   control edges   dashed, labelled "serialize" / "prefetch"
 *   fusion nodes    `subgraph cluster_<id>` holding the body, drawn inline:
 *                   the body's inputs stand for the fusion node's input
 *                   slots (by position), the producers of its outputs for
 *                   its output slots, so data flows through the cluster.
 *
 * DOT ids are built from stable node/value ids, never from names, so any
 * name is safe; names appear only in quoted, escaped labels. Nested bodies
 * get a prefix per level ("f5_" for the body of node 5) because ids are only
 * unique within one graph.
 */
#define G_LOG_DOMAIN "passlab"

#include "dot-export.h"

#include <string.h>

/* Fill colours by category (a light palette that keeps black text readable). */
static const char *
category_color (PlOpCategory cat)
{
  switch (cat)
    {
    case PL_CAT_ELEMENTWISE: return "#cfe2f3";  /* blue */
    case PL_CAT_BROADCAST:   return "#d9d2e9";  /* lilac */
    case PL_CAT_REDUCE:      return "#fce5cd";  /* orange */
    case PL_CAT_SHAPE:       return "#d9ead3";  /* green */
    case PL_CAT_COMPUTE:     return "#f4cccc";  /* red */
    case PL_CAT_MEMORY:      return "#fff2cc";  /* yellow */
    case PL_CAT_CONTROL:     return "#ead1dc";  /* pink */
    case PL_CAT_FUSION:      return "#f3f3f3";
    case PL_CAT_OPAQUE:
    case PL_CAT_COUNT:
    default:                 return "#e0e0e0";  /* grey */
    }
}

/* Appends s as the inside of a DOT double-quoted string. Backslashes and
 * quotes are escaped (so "\n" in a name stays two characters), line breaks
 * become DOT's \n, other control characters a space; invalid UTF-8 is
 * repaired, as Graphviz rejects it. */
static void
append_escaped (GString *out, const char *s)
{
  if (s == NULL)
    return;
  g_autofree char *valid = g_utf8_make_valid (s, -1);
  for (const char *c = valid; *c != '\0'; c++)
    {
      switch (*c)
        {
        case '"':  g_string_append (out, "\\\""); break;
        case '\\': g_string_append (out, "\\\\"); break;
        case '\n': g_string_append (out, "\\n"); break;
        case '\r': break;
        default:
          if ((unsigned char) *c < 0x20 || *c == 0x7f)
            g_string_append_c (out, ' ');
          else
            g_string_append_c (out, *c);
        }
    }
}

/* "f32[2, N]", "?[*]" when nothing is known; "f32[1, 64, 56, 56] @NHWC"
 * for a non-default layout (as the text format writes it). */
static char *
type_string (const PlValue *v)
{
  g_autofree char *shape = pl_shape_to_string (&v->shape);
  const char *dt = v->dtype == PL_DTYPE_UNDEFINED ? "?" : pl_dtype_name (v->dtype);
  if (v->layout != PL_LAYOUT_NCHW)
    return g_strdup_printf ("%s%s @%s", dt, shape, pl_layout_name (v->layout));
  return g_strdup_printf ("%s%s", dt, shape);
}

static bool
is_fusion (const PlNode *node)
{
  return node->body != NULL;
}

/* --- endpoints -------------------------------------------------------------
 * The DOT id an edge leaves from (a value's source) or arrives at (a use). */

static void endpoint_of_value (GString *out, const char *prefix, const PlValue *v);

/* The id standing for a fusion node when no body node does: an invisible
 * anchor inside its cluster. */
static void
anchor_id (GString *out, const char *prefix, const PlNode *node)
{
  g_string_append_printf (out, "\"%sn%u\"", prefix, node->id);
}

static char *
body_prefix (const char *prefix, const PlNode *node)
{
  return g_strdup_printf ("%sf%u_", prefix, node->id);
}

/* Where an edge carrying v starts. */
static void
endpoint_of_value (GString *out, const char *prefix, const PlValue *v)
{
  const PlNode *p = v->producer;
  if (p == NULL)
    {
      g_string_append_printf (out, "\"%s%c%u\"", prefix, v->constant ? 'c' : 'v', v->id);
      return;
    }
  if (is_fusion (p) && v->producer_index >= 0
      && (guint) v->producer_index < p->body->outputs->len)
    {
      g_autofree char *inner = body_prefix (prefix, p);
      endpoint_of_value (out, inner, g_ptr_array_index (p->body->outputs, v->producer_index));
      return;
    }
  if (is_fusion (p))
    {
      anchor_id (out, prefix, p);
      return;
    }
  g_string_append_printf (out, "\"%sn%u\"", prefix, p->id);
}

/* Where an edge into input slot `index` of node arrives. */
static void
endpoint_of_use (GString *out, const char *prefix, const PlNode *node, int index)
{
  if (is_fusion (node) && index >= 0 && (guint) index < node->body->inputs->len)
    {
      const PlValue *bin = g_ptr_array_index (node->body->inputs, index);
      g_autofree char *inner = body_prefix (prefix, node);
      g_string_append_printf (out, "\"%sv%u\"", inner, bin->id);
      return;
    }
  if (is_fusion (node))
    anchor_id (out, prefix, node);
  else
    g_string_append_printf (out, "\"%sn%u\"", prefix, node->id);
}

static void
cluster_attrs (GString *out, const char *prefix, const PlNode *node, bool head)
{
  if (is_fusion (node))
    g_string_append_printf (out, ", %s=\"cluster_%s%u\"", head ? "lhead" : "ltail",
                            prefix, node->id);
}

/* --- emitting ------------------------------------------------------------- */

static void
indent (GString *out, int depth)
{
  for (int i = 0; i < depth; i++)
    g_string_append (out, "  ");
}

static void
emit_value_node (GString *out, const char *prefix, const PlValue *v, int depth, bool body_input)
{
  g_autofree char *type = type_string (v);
  indent (out, depth);
  g_string_append_printf (out, "\"%s%c%u\" [label=\"", prefix, v->constant ? 'c' : 'v', v->id);
  append_escaped (out, v->name);
  g_string_append (out, "\\n");
  append_escaped (out, type);
  if (v->constant != NULL)
    g_string_append (out, "\", shape=note, fontsize=8, style=filled, fillcolor=\"#f3f3f3\", color=\"#999999\"];\n");
  else if (body_input)
    g_string_append (out, "\", shape=ellipse, fontsize=8, style=dashed];\n");
  else
    g_string_append (out, "\", shape=ellipse, style=filled, fillcolor=\"#ffffff\"];\n");
}

static void emit_graph_contents (GString *out, const PlGraph *g, const char *prefix,
                                 int depth, bool is_body);

static void
emit_op_node (GString *out, const char *prefix, const PlNode *node, int depth)
{
  const PlOpInfo *info = pl_op_info (node->op);
  PlOpCategory cat = info != NULL ? info->category : PL_CAT_OPAQUE;
  const char *op = node->op_type != NULL ? node->op_type : pl_op_name (node->op);

  if (is_fusion (node))
    {
      indent (out, depth);
      g_string_append_printf (out, "subgraph cluster_%s%u {\n", prefix, node->id);
      indent (out, depth + 1);
      g_string_append (out, "label=\"");
      append_escaped (out, node->name);
      g_string_append (out, "\\n");
      append_escaped (out, op);
      g_string_append_printf (out, "\"; style=\"rounded,filled\"; fillcolor=\"%s\"; color=\"#666666\";\n",
                              category_color (PL_CAT_FUSION));
      indent (out, depth + 1);
      anchor_id (out, prefix, node);
      g_string_append (out, " [shape=point, style=invis, width=0.01, label=\"\"];\n");
      g_autofree char *inner = body_prefix (prefix, node);
      emit_graph_contents (out, node->body, inner, depth + 1, true);
      indent (out, depth);
      g_string_append (out, "}\n");
      return;
    }

  indent (out, depth);
  g_string_append_printf (out, "\"%sn%u\" [label=\"", prefix, node->id);
  append_escaped (out, node->name);
  g_string_append (out, "\\n");
  if (node->domain != NULL && node->domain[0] != '\0')
    {
      append_escaped (out, node->domain);
      g_string_append_c (out, '.');
    }
  append_escaped (out, op);
  if (node->op == PL_OP_LayoutTransform)
    {
      g_string_append (out, "\\nto ");
      append_escaped (out, pl_node_attr_string (node, "to", "?"));
    }
  g_string_append_printf (out, "\", fillcolor=\"%s\"", category_color (cat));
  if (cat == PL_CAT_OPAQUE)
    g_string_append (out, ", style=\"rounded,filled,dashed\"");
  g_string_append (out, "];\n");
}

static void
emit_data_edges (GString *out, const PlGraph *g, const char *prefix, int depth)
{
  for (guint i = 0; i < g->nodes->len; i++)
    {
      const PlNode *node = g_ptr_array_index (g->nodes, i);
      for (int k = 0; k < node->n_inputs; k++)
        {
          const PlValue *v = node->inputs[k];
          if (v == NULL)
            continue;
          g_autofree char *type = type_string (v);
          indent (out, depth);
          endpoint_of_value (out, prefix, v);
          g_string_append (out, " -> ");
          endpoint_of_use (out, prefix, node, k);
          g_string_append (out, " [label=\"");
          append_escaped (out, type);
          g_string_append (out, "\"");
          if (v->constant != NULL)
            g_string_append (out, ", color=\"#999999\"");
          g_string_append (out, "];\n");
        }
    }
}

static void
emit_control_edges (GString *out, const PlGraph *g, const char *prefix, int depth)
{
  for (guint i = 0; i < g->nodes->len; i++)
    {
      const PlNode *node = g_ptr_array_index (g->nodes, i);
      for (int k = 0; k < node->n_controls; k++)
        {
          const PlNode *after = node->controls[k].node;
          if (after == NULL)
            continue;
          const char *kind = node->controls[k].kind == PL_CONTROL_PREFETCH ? "prefetch" : "serialize";
          indent (out, depth);
          g_string_append_printf (out, "\"%sn%u\" -> \"%sn%u\" [style=dashed, color=\"#cc0000\", "
                                  "fontcolor=\"#cc0000\", label=\"%s\"",
                                  prefix, after->id, prefix, node->id, kind);
          cluster_attrs (out, prefix, after, false);
          cluster_attrs (out, prefix, node, true);
          g_string_append (out, "];\n");
        }
    }
}

/* Nodes and edges of g. A fusion body's inputs are drawn as small dashed
 * ellipses (the slots), its outputs leave through the outer edges. */
static void
emit_graph_contents (GString *out, const PlGraph *g, const char *prefix, int depth, bool is_body)
{
  for (guint i = 0; i < g->values->len; i++)
    {
      const PlValue *v = g_ptr_array_index (g->values, i);
      if (v->constant != NULL || (v->producer == NULL && !is_body))
        emit_value_node (out, prefix, v, depth, false);
      else if (v->producer == NULL)
        emit_value_node (out, prefix, v, depth, true);
    }
  for (guint i = 0; i < g->nodes->len; i++)
    emit_op_node (out, prefix, g_ptr_array_index (g->nodes, i), depth);
  emit_data_edges (out, g, prefix, depth);
  emit_control_edges (out, g, prefix, depth);
}

char *
pl_dot_export (const PlGraph *g)
{
  g_return_val_if_fail (g != NULL, NULL);

  GString *out = g_string_new ("digraph \"");
  append_escaped (out, g->name != NULL ? g->name : "graph");
  g_string_append (out, "\" {\n"
                   "  graph [rankdir=TB, compound=true, fontname=\"Helvetica\", fontsize=10];\n"
                   "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n"
                   "  edge [fontname=\"Helvetica\", fontsize=8, color=\"#444444\"];\n");
  emit_graph_contents (out, g, "", 1, false);

  /* Graph outputs: one sink per slot (a value may be listed twice). */
  for (guint i = 0; i < g->outputs->len; i++)
    {
      const PlValue *v = g_ptr_array_index (g->outputs, i);
      if (v == NULL)
        continue;
      g_autofree char *type = type_string (v);
      g_string_append_printf (out, "  \"out%u\" [label=\"", i);
      append_escaped (out, v->name);
      g_string_append (out, "\", shape=doubleoctagon, style=filled, fillcolor=\"#ffffff\"];\n  ");
      endpoint_of_value (out, "", v);
      g_string_append_printf (out, " -> \"out%u\" [label=\"", i);
      append_escaped (out, type);
      g_string_append (out, "\"];\n");
    }
  g_string_append (out, "}\n");
  return g_string_free (out, FALSE);
}

bool
pl_dot_save (const PlGraph *g, const char *path, GError **error)
{
  g_return_val_if_fail (g != NULL && path != NULL, false);

  g_autofree char *text = pl_dot_export (g);
  g_autoptr (GError) local = NULL;
  if (!g_file_set_contents (path, text, -1, &local))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_IO, "cannot write %s: %s", path, local->message);
      return false;
    }
  return true;
}

/* text-print.c — writes a graph in the readable `.graph` text format
 * (grammar: the comment at the top of text-parse.c).
 *
 * The output is deterministic and parses back to a graph that prints the
 * same text: nodes in topological order, every output with its type when the
 * dtype is known, floats in the shortest form that reads back bit-exactly
 * (always with a '.' or an exponent, so they stay floats), names quoted
 * where they are not plain identifiers.
 */
#define G_LOG_DOMAIN "passlab"

#include "text-format.h"

#include <math.h>
#include <string.h>

/* --- names and scalars ---------------------------------------------------- */

/* An identifier is written bare; anything else, and "_" (which the parser
 * reads as an omitted input or output), is quoted. Keywords need no quoting:
 * the parser tells them from names by what follows. */
static bool
is_plain_name (const char *s)
{
  if (!s || !(g_ascii_isalpha (s[0]) || s[0] == '_') || strcmp (s, "_") == 0)
    return false;
  for (const char *p = s; *p; p++)
    if (!(g_ascii_isalnum (*p) || *p == '_' || *p == '.'))
      return false;
  return true;
}

static void
append_quoted (GString *out, const char *s)
{
  g_string_append_c (out, '"');
  for (const guint8 *p = (const guint8 *) (s ? s : ""); *p; p++)
    switch (*p)
      {
      case '"': g_string_append (out, "\\\""); break;
      case '\\': g_string_append (out, "\\\\"); break;
      case '\n': g_string_append (out, "\\n"); break;
      case '\t': g_string_append (out, "\\t"); break;
      case '\r': g_string_append (out, "\\r"); break;
      default:
        if (*p < 0x20 || *p == 0x7f)
          g_string_append_printf (out, "\\x%02x", *p);
        else
          g_string_append_c (out, (char) *p);
      }
  g_string_append_c (out, '"');
}

static void
append_name (GString *out, const char *name)
{
  if (is_plain_name (name))
    g_string_append (out, name);
  else
    append_quoted (out, name);
}

/* Converts a parsed double the way the parser stores it into `dtype`, and
 * back to double: the round-trip test for printed floats. */
static double
through_dtype (double d, PlDType dtype)
{
  switch (dtype)
    {
    case PL_DTYPE_F64: return d;
    case PL_DTYPE_F16: return pl_f16_to_f32 (pl_f32_to_f16 ((float) d));
    case PL_DTYPE_BF16: return pl_bf16_to_f32 (pl_f32_to_bf16 ((float) d));
    default: return (float) d;
    }
}

/* The shortest decimal that reads back to exactly v (v already holds a value
 * of `dtype`); integral values as "3.0". */
static void
append_float (GString *out, double v, PlDType dtype)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  if (isnan (v))
    {
      g_string_append (out, "nan");
      return;
    }
  if (isinf (v))
    {
      g_string_append (out, v < 0 ? "-inf" : "inf");
      return;
    }
  if (v == floor (v) && fabs (v) < 1e7)
    g_ascii_formatd (buf, sizeof buf, "%.0f", v);
  else
    {
      int max_digits = dtype == PL_DTYPE_F64 ? 17 : 9;
      for (int digits = 1; digits <= max_digits; digits++)
        {
          char fmt[8];
          g_snprintf (fmt, sizeof fmt, "%%.%dg", digits);
          g_ascii_formatd (buf, sizeof buf, fmt, v);
          double back = through_dtype (g_ascii_strtod (buf, NULL), dtype);
          if (memcmp (&back, &v, sizeof v) == 0)
            break;
        }
    }
  g_string_append (out, buf);
  if (!strpbrk (buf, ".eE"))
    g_string_append (out, ".0");
}

/* Element i of t as the text the parser reads back to the same bits. */
static void
append_element (GString *out, const PlTensor *t, int64_t i)
{
  const void *p = (const char *) t->data + i * pl_dtype_size (t->dtype);
  switch (t->dtype)
    {
    case PL_DTYPE_F32: append_float (out, *(const float *) p, t->dtype); break;
    case PL_DTYPE_F64: append_float (out, *(const double *) p, t->dtype); break;
    case PL_DTYPE_F16: append_float (out, pl_f16_to_f32 (*(const uint16_t *) p), t->dtype); break;
    case PL_DTYPE_BF16: append_float (out, pl_bf16_to_f32 (*(const uint16_t *) p), t->dtype); break;
    case PL_DTYPE_U64: g_string_append_printf (out, "%" G_GUINT64_FORMAT, *(const guint64 *) p); break;
    case PL_DTYPE_U32: g_string_append_printf (out, "%u", *(const guint32 *) p); break;
    case PL_DTYPE_U16: g_string_append_printf (out, "%u", *(const guint16 *) p); break;
    case PL_DTYPE_U8: case PL_DTYPE_BOOL: g_string_append_printf (out, "%u", *(const guint8 *) p); break;
    case PL_DTYPE_I8: g_string_append_printf (out, "%d", *(const gint8 *) p); break;
    case PL_DTYPE_I16: g_string_append_printf (out, "%d", *(const gint16 *) p); break;
    case PL_DTYPE_I32: g_string_append_printf (out, "%d", *(const gint32 *) p); break;
    default: g_string_append_printf (out, "%" G_GINT64_FORMAT, *(const gint64 *) p); break;
    }
}

/* --- types and data --------------------------------------------------------- */

static void
append_type (GString *out, PlDType dtype, const PlShape *shape)
{
  g_string_append (out, pl_dtype_name (dtype));
  g_string_append_c (out, '[');
  if (shape->rank == PL_RANK_UNKNOWN)
    g_string_append_c (out, '*');
  for (int i = 0; i < shape->rank && i < PL_MAX_RANK; i++)
    {
      const PlDim *d = &shape->dims[i];
      if (i > 0)
        g_string_append (out, ", ");
      if (d->size >= 0)
        g_string_append_printf (out, "%" G_GINT64_FORMAT, d->size);
      else if (d->sym)
        append_name (out, d->sym);
      else
        g_string_append_c (out, '?');
    }
  g_string_append_c (out, ']');
}

/* ` @NHWC` after a type; nothing for the default layout, so graphs without
 * layouts print as they always did. */
static void
append_layout (GString *out, PlLayout layout)
{
  if (layout != PL_LAYOUT_NCHW)
    g_string_append_printf (out, " @%s", pl_layout_name (layout));
}

/* Raw bytes: little-endian, as text-parse-values.c asserts the host is. */
static void
append_base64 (GString *out, const PlTensor *t)
{
  g_autofree char *b64 = g_base64_encode (t->data, pl_tensor_nbytes (t));
  g_string_append (out, "base64\"");
  g_string_append (out, b64);
  g_string_append_c (out, '"');
}

/* The data of t as a const statement or tensor attribute writes it:
 * a bare number for scalars, a list up to PL_TEXT_INLINE_LIMIT elements,
 * fill(v) when all elements are equal, else base64. */
static void
append_data (GString *out, const PlTensor *t)
{
  size_t es = pl_dtype_size (t->dtype);
  if (t->rank == 0)
    {
      append_element (out, t, 0);
      return;
    }
  if (t->numel > PL_TEXT_INLINE_LIMIT)
    {
      int64_t i = 1;
      while (i < t->numel && memcmp ((const char *) t->data + i * es, t->data, es) == 0)
        i++;
      if (i == t->numel)
        {
          g_string_append (out, "fill(");
          append_element (out, t, 0);
          g_string_append_c (out, ')');
        }
      else
        append_base64 (out, t);
      return;
    }
  g_string_append_c (out, '[');
  for (int64_t i = 0; i < t->numel; i++)
    {
      if (i > 0)
        g_string_append (out, ", ");
      append_element (out, t, i);
    }
  g_string_append_c (out, ']');
}

static void
append_tensor (GString *out, const PlTensor *t)
{
  PlShape shape = pl_tensor_shape (t);
  append_type (out, t->dtype, &shape);
  g_string_append_c (out, ' ');
  append_data (out, t);
}

/* --- graphs ------------------------------------------------------------------- */

static void append_graph (GString *out, const PlGraph *g, int indent);

static void
append_attr (GString *out, const PlAttr *a, int indent)
{
  append_name (out, a->name);
  g_string_append_c (out, '=');
  switch (a->type)
    {
    case PL_ATTR_INT:
      g_string_append_printf (out, "%" G_GINT64_FORMAT, a->i);
      break;
    case PL_ATTR_FLOAT:
      append_float (out, a->f, PL_DTYPE_F32);
      break;
    case PL_ATTR_STRING:
      append_quoted (out, a->s);
      break;
    case PL_ATTR_INTS:
      g_string_append_c (out, '[');
      for (int i = 0; i < a->ints.n; i++)
        g_string_append_printf (out, "%s%" G_GINT64_FORMAT, i ? ", " : "", a->ints.v[i]);
      g_string_append_c (out, ']');
      break;
    case PL_ATTR_FLOATS:
      g_string_append (out, a->floats.n == 0 ? "floats[" : "[");
      for (int i = 0; i < a->floats.n; i++)
        {
          if (i > 0)
            g_string_append (out, ", ");
          append_float (out, a->floats.v[i], PL_DTYPE_F32);
        }
      g_string_append_c (out, ']');
      break;
    case PL_ATTR_STRINGS:
      g_string_append (out, a->strings.n == 0 ? "strings[" : "[");
      for (int i = 0; i < a->strings.n; i++)
        {
          if (i > 0)
            g_string_append (out, ", ");
          append_quoted (out, a->strings.v[i]);
        }
      g_string_append_c (out, ']');
      break;
    case PL_ATTR_TENSOR:
      append_tensor (out, a->t);
      break;
    case PL_ATTR_GRAPH:
      append_graph (out, a->g, indent);
      break;
    }
}

static void
append_value_ref (GString *out, const PlValue *v)
{
  if (v)
    append_name (out, v->name);
  else
    g_string_append_c (out, '_');
}

/* `@name outs = domain::Op(args) {attrs} after(...) body graph ...` */
static void
append_node (GString *out, const PlNode *node, int indent)
{
  g_string_append_printf (out, "%*s", indent, "");
  const PlValue *first = node->n_outputs > 0 ? node->outputs[0] : NULL;
  if (!first || g_strcmp0 (first->name, node->name) != 0)
    {
      g_string_append_c (out, '@');
      append_name (out, node->name);
      g_string_append_c (out, ' ');
    }
  for (int i = 0; i < node->n_outputs; i++)
    {
      const PlValue *v = node->outputs[i];
      if (i > 0)
        g_string_append (out, ", ");
      append_value_ref (out, v);
      if (v && v->dtype != PL_DTYPE_UNDEFINED)
        {
          g_string_append (out, ": ");
          append_type (out, v->dtype, &v->shape);
        }
      if (v)
        append_layout (out, v->layout);
    }
  g_string_append (out, node->n_outputs > 0 ? " = " : "= ");
  if (node->domain && node->domain[0])
    {
      append_name (out, node->domain);
      g_string_append (out, "::");
    }
  append_name (out, node->op_type);
  g_string_append_c (out, '(');
  for (int i = 0; i < node->n_inputs; i++)
    {
      if (i > 0)
        g_string_append (out, ", ");
      append_value_ref (out, node->inputs[i]);
    }
  g_string_append_c (out, ')');
  if (node->n_attrs > 0)
    {
      g_string_append (out, " {");
      for (int i = 0; i < node->n_attrs; i++)
        {
          if (i > 0)
            g_string_append (out, ", ");
          append_attr (out, &node->attrs[i], indent);
        }
      g_string_append_c (out, '}');
    }
  if (node->n_controls > 0)
    {
      g_string_append (out, " after(");
      for (int i = 0; i < node->n_controls; i++)
        {
          const PlControl *c = &node->controls[i];
          g_string_append (out, i > 0 ? ", " : "");
          g_string_append (out, c->kind == PL_CONTROL_PREFETCH ? "prefetch: " : "serialize: ");
          append_name (out, c->node->name);
        }
      g_string_append_c (out, ')');
    }
  if (node->body)
    {
      g_string_append (out, " body ");
      append_graph (out, node->body, indent);
    }
  g_string_append_c (out, '\n');
}

/* `graph name opset N { ... }`; the caller has written the indentation of
 * the first line, `indent` is that of the closing brace. */
static void
append_graph (GString *out, const PlGraph *g, int indent)
{
  int inner = indent + 2;
  g_string_append (out, "graph ");
  /* pl_graph_new names an unnamed graph "graph": print that as no name. */
  if (g->name && g->name[0] && strcmp (g->name, "graph") != 0)
    {
      append_name (out, g->name);
      g_string_append_c (out, ' ');
    }
  if (g->opset > 0)
    g_string_append_printf (out, "opset %d ", g->opset);
  g_string_append (out, "{\n");

  for (guint i = 0; i < g->inputs->len; i++)
    {
      const PlValue *v = g_ptr_array_index (g->inputs, i);
      g_string_append_printf (out, "%*sinput ", inner, "");
      append_name (out, v->name);
      g_string_append (out, ": ");
      append_type (out, v->dtype, &v->shape);
      g_string_append_c (out, '\n');
    }
  for (guint i = 0; i < g->values->len; i++)
    {
      const PlValue *v = g_ptr_array_index (g->values, i);
      if (!v->constant || v->producer)
        continue;
      g_string_append_printf (out, "%*sconst ", inner, "");
      append_name (out, v->name);
      g_string_append (out, ": ");
      PlShape shape = pl_tensor_shape (v->constant);
      append_type (out, v->constant->dtype, &shape);
      g_string_append (out, " = ");
      append_data (out, v->constant);
      g_string_append_c (out, '\n');
    }

  /* A graph with a cycle has no topological order; print it in insertion
   * order anyway (it will not parse back, but it can be looked at). */
  int n = 0;
  g_autofree PlNode **order = pl_graph_topo_order (g, &n, NULL);
  for (int i = 0; i < (order ? n : (int) g->nodes->len); i++)
    append_node (out, order ? order[i] : g_ptr_array_index (g->nodes, i), inner);

  if (g->outputs->len > 0)
    {
      g_string_append_printf (out, "%*soutput ", inner, "");
      for (guint i = 0; i < g->outputs->len; i++)
        {
          if (i > 0)
            g_string_append (out, ", ");
          append_value_ref (out, g_ptr_array_index (g->outputs, i));
        }
      g_string_append_c (out, '\n');
    }
  g_string_append_printf (out, "%*s}", indent, "");
}

char *
pl_text_print (const PlGraph *g)
{
  g_return_val_if_fail (g != NULL, NULL);
  GString *out = g_string_new (NULL);
  append_graph (out, g, 0);
  g_string_append_c (out, '\n');
  return g_string_free (out, FALSE);
}

bool
pl_text_save (const PlGraph *g, const char *path, GError **error)
{
  g_autofree char *text = pl_text_print (g);
  g_autoptr (GError) err = NULL;
  if (!g_file_set_contents (path, text, -1, &err))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_IO, "%s", err->message);
      return false;
    }
  return true;
}

/* text-parse.c — reads the readable `.graph` text format (text-print.c writes it).
 *
 * A hand-written lexer (text-lex.c) and a recursive-descent parser build the
 * graph through the graph.h API and infer each node's types as soon as it is
 * read, so a mistake is reported at the line that makes it. Whitespace and newlines are
 * insignificant; `#` starts a comment that runs to the end of the line.
 *
 *   file      := graph EOF
 *   graph     := 'graph' [name] ['opset' INT] '{' { stmt } '}'
 *   stmt      := 'input' name ':' type
 *              | 'const' name ':' type '=' data
 *              | 'output' name { ',' name }
 *              | ['@' name] [out { ',' out }] '=' op '(' [arg { ',' arg }] ')'
 *                  ['{' [attr { ',' attr }] '}'] ['after' '(' ctl { ',' ctl } ')']
 *                  ['body' graph]
 *   out       := '_' | name [':' type] [layout]   '_' omits an optional output
 *   layout    := '@' ('NCHW' | 'NHWC' | 'CHWN')  the value's physical layout
 *   arg       := '_' | name                   '_' omits an optional input
 *   op        := [name '::'] name             domain::op_type
 *   ctl       := ('serialize' | 'prefetch') ':' name     a node defined earlier
 *   type      := dtype '[' [dim { ',' dim }] ']' | dtype '[' '*' ']'
 *   dtype     := f32 | f16 | bf16 | f64 | i8 ... i64 | u8 ... u64 | bool | undefined
 *   dim       := INT | name (a symbol) | '?'
 *   data      := '[' [num { ',' num }] ']'   flat, row-major
 *              | num                         single-element tensors
 *              | 'fill' '(' num ')' | 'base64' STRING   raw little-endian bytes
 *              | 'random' '(' [('seed' | 'lo' | 'hi') '=' num {, ...}] ')'
 *   attr      := name '=' value
 *   value     := num | STRING | '[' [item { ',' item }] ']'
 *              | ('ints' | 'floats' | 'strings') '[' ... ']'   typed (empty) lists
 *              | type data                   a tensor        | graph
 *   num       := ['-'] (INT | FLOAT | 'inf' | 'nan')
 *   name      := IDENT | STRING   IDENT is [A-Za-z_][A-Za-z0-9_.]*
 *
 * Strings are double-quoted with C escapes (\n \t \r \\ \" \' \xHH, two hex
 * digits). Keywords are known by what follows them, so a value may be called
 * `input`; only a value called `_` must be quoted. A number with '.' or an
 * exponent is a float: `alpha=1.0` is a FLOAT attribute, `axis=1` an INT, a
 * list with any float is FLOATS, `[]` is an empty INTS. random() defaults to
 * seed=0, lo=-1, hi=1 (integers: [lo, hi]). A node's name is its first
 * output's name unless `@name` says otherwise. Values and nodes must be
 * defined before they are used; nested graphs (bodies and graph attributes)
 * are closed scopes. An annotated output type must equal the inferred one,
 * or refine it where inference knows nothing (an unknown op, a data-dependent
 * dim); it then becomes the output's type. A layout annotation (layout.h;
 * absent means NCHW) is applied after inference: it needs a rank-4 value, a
 * LayoutTransform's must equal its `to`, and graph outputs have none (a
 * fusion body's outputs carry the fusion node's). Inputs are never annotated
 * (an '@' there starts the next statement's node name): a body's inputs
 * take the layouts of the node's inputs. The parsed graph is verified.
 *
 *   graph demo opset 17 {
 *     input x: f32[N, 4]
 *     const w: f32[4] = [0.5, 1.0, -2.0, inf]
 *     const axes: i64[1] = [1]
 *     y: f32[N, 4] = Mul(x, w)
 *     @sum1 s = ReduceSum(y, axes) {keepdims=0}
 *     r = Relu(s) after(serialize: sum1)
 *     output r
 *   }
 *
 * and with layouts:  t: f32[1, 64, 56, 56] @NHWC = LayoutTransform(x) {to="NHWC"}
 *                    c: f32[1, 64, 56, 56] @NHWC = Conv(t, w) {pads=[1, 1, 1, 1]}
 *
 * This file parses statements and graphs and holds the entry points; errors,
 * names, types and numbers are in text-parse-base.c, tensor data, attributes
 * and control edges in text-parse-values.c.
 */
#define G_LOG_DOMAIN "passlab"

#include "text-parse-private.h"

/* Nested graphs deeper than this are refused (and keep the C stack small). */
#define MAX_NESTING 32

/* --- statements ------------------------------------------------------------- */

static bool
check_new_value (Parser *P, PlGraph *g, const Loc *where, const char *name)
{
  return !pl_graph_find_value (g, name)
         || pl_text_parse_error_tok (P, where, "duplicate value name '%s'", name);
}

/* A name of a value defined earlier. */
static bool
parse_value_ref (Parser *P, PlGraph *g, const char *what, PlValue **v)
{
  Loc where = pl_text_parse_here (P);
  g_autofree char *name = NULL;
  if (!pl_text_parse_name (P, what, &name))
    return false;
  *v = pl_graph_find_value (g, name);
  return *v || pl_text_parse_error_tok (P, &where, "undefined value '%s'", name);
}

/* '@' LAYOUT, at the '@'; *where is the layout name's position. */
static bool
parse_layout (Parser *P, PlLayout *layout, Loc *where)
{
  pl_text_parse_advance (P); /* '@' */
  *where = pl_text_parse_here (P);
  Token *t = pl_text_parse_peek (P, 0);
  if (t->kind != T_IDENT)
    return pl_text_parse_error_expected (P, "a layout (NCHW, NHWC or CHWN)");
  if (!pl_layout_parse (t->text, layout))
    return pl_text_parse_error_tok (P, t, "unknown layout '%s' (expected NCHW, NHWC or CHWN)", t->text);
  pl_text_parse_advance (P);
  return true;
}

/* Gives v the annotated layout, if the rules allow (pl_layout_check_value). */
static bool
apply_layout (Parser *P, PlValue *v, PlLayout layout, const Loc *where, bool is_body)
{
  g_autoptr (GError) err = NULL;
  if (!pl_layout_check_value (layout, v, is_body, &err))
    return pl_text_parse_error_tok (P, where, "%s", err->message);
  v->layout = layout;
  return true;
}

/* 'input' name ':' type  |  'const' name ':' type '=' data */
static bool
parse_decl (Parser *P, PlGraph *g, bool is_const)
{
  g_autoptr (GError) err = NULL;
  g_autofree char *name = NULL;
  g_autoptr (PlTensor) t = NULL;
  PlDType dtype;
  PlShape shape;
  pl_text_parse_advance (P);
  Loc where = pl_text_parse_here (P);
  if (!pl_text_parse_name (P, is_const ? "a constant name" : "an input name", &name)
      || !check_new_value (P, g, &where, name) || !pl_text_parse_expect (P, ':', "':'")
      || !pl_text_parse_type (P, &dtype, &shape))
    return false;
  if (is_const
      && (!pl_text_parse_expect (P, '=', "'='") || !(t = pl_text_parse_data (P, &where, dtype, &shape))))
    return false;
  if (!(is_const ? pl_graph_add_constant (g, name, t, &err)
                 : pl_graph_add_input (g, name, dtype, &shape, &err)))
    return pl_text_parse_error_tok (P, &where, "%s", err->message);
  return true;
}

static bool
parse_output (Parser *P, PlGraph *g, bool is_body)
{
  pl_text_parse_advance (P);
  do
    {
      PlValue *v;
      Loc where = pl_text_parse_here (P);
      if (!parse_value_ref (P, g, "an output name", &v))
        return false;
      pl_graph_add_output (g, v);
      if (!apply_layout (P, v, v->layout, &where, is_body))
        return false;
    }
  while (pl_text_parse_accept (P, ','));
  return true;
}

/* One output on the left of '=': its name ("" when omitted) and annotation. */
typedef struct {
  char    *name;
  bool     typed;
  PlDType  dtype;
  PlShape  shape;
  Loc      where;
  bool     has_layout;
  PlLayout layout;
  Loc      layout_at;
} OutSpec;

static void
out_spec_clear (gpointer p)
{
  g_free (((OutSpec *) p)->name);
}

/* Whether an annotated type agrees with the inferred one: equal, or more
 * specific where inference knows nothing (the verifier's rule). */
static bool
type_refines (PlDType da, const PlShape *a, PlDType db, const PlShape *b)
{
  if (db != PL_DTYPE_UNDEFINED && da != db)
    return false;
  if (b->rank == PL_RANK_UNKNOWN)
    return true;
  if (a->rank != b->rank)
    return false;
  for (int i = 0; i < a->rank && i < PL_MAX_RANK; i++)
    if (!(b->dims[i].size < 0 && !b->dims[i].sym)
        && (a->dims[i].size != b->dims[i].size || a->dims[i].sym != b->dims[i].sym))
      return false;
  return true;
}

static bool
parse_outs (Parser *P, PlGraph *g, GArray *outs)
{
  while (!pl_text_parse_at (P, '='))
    {
      if (outs->len > 0 && !pl_text_parse_expect (P, ',', "',' or '='"))
        return false;
      OutSpec o = { 0 };
      o.where = pl_text_parse_here (P);
      if (pl_text_parse_at_word (P, 0, "_"))
        {
          pl_text_parse_advance (P);
          o.name = g_strdup ("");
          g_array_append_val (outs, o);
          continue;
        }
      if (!pl_text_parse_name (P, "an output name", &o.name))
        return false;
      g_array_append_val (outs, o);
      if (!check_new_value (P, g, &o.where, o.name))
        return false;
      for (guint i = 0; i + 1 < outs->len; i++)
        if (!strcmp (g_array_index (outs, OutSpec, i).name, o.name))
          return pl_text_parse_error_tok (P, &o.where, "duplicate value name '%s'", o.name);
      OutSpec *last = &g_array_index (outs, OutSpec, outs->len - 1);
      if (pl_text_parse_accept (P, ':'))
        {
          last->typed = true;
          if (!pl_text_parse_type (P, &last->dtype, &last->shape))
            return false;
        }
      if (pl_text_parse_at (P, '@'))
        {
          last->has_layout = true;
          if (!parse_layout (P, &last->layout, &last->layout_at))
            return false;
        }
    }
  return true;
}

static bool
parse_args (Parser *P, PlGraph *g, GPtrArray *args)
{
  if (!pl_text_parse_expect (P, '(', "'('"))
    return false;
  if (pl_text_parse_accept (P, ')'))
    return true;
  do
    {
      PlValue *v = NULL;
      if (pl_text_parse_at_word (P, 0, "_"))
        pl_text_parse_advance (P);
      else if (!parse_value_ref (P, g, "an input name or '_'", &v))
        return false;
      g_ptr_array_add (args, v);
    }
  while (pl_text_parse_accept (P, ','));
  return pl_text_parse_expect (P, ')', "',' or ')'");
}

/* Checks each annotated output against inference; an annotation that is
 * more specific (where inference knows nothing) becomes the output's type. */
static bool
check_annotations (Parser *P, PlNode *node, GArray *outs, bool is_body)
{
  for (guint i = 0; i < outs->len; i++)
    {
      OutSpec *o = &g_array_index (outs, OutSpec, i);
      PlValue *v = node->outputs[i];
      if (!o->typed || !v)
        continue;
      if (!type_refines (o->dtype, &o->shape, v->dtype, &v->shape))
        {
          g_autofree char *want = pl_text_parse_type_string (o->dtype, &o->shape);
          g_autofree char *got = pl_text_parse_type_string (v->dtype, &v->shape);
          pl_text_parse_error_tok (P, &o->where, "annotated type %s but inferred %s", want, got);
          return false;
        }
      v->dtype = o->dtype;
      v->shape = o->shape;
    }
  /* Layouts once every type is final: the rank decides. */
  for (guint i = 0; i < outs->len; i++)
    {
      OutSpec *o = &g_array_index (outs, OutSpec, i);
      if (o->has_layout && node->outputs[i]
          && !apply_layout (P, node->outputs[i], o->layout, &o->layout_at, is_body))
        return false;
    }
  return true;
}

/* A body's inputs stand for its node's inputs and take their layouts, and
 * so on into nested bodies (the text never writes an input's layout). */
static void
mirror_input_layouts (PlNode *node)
{
  for (int i = 0; i < node->n_inputs && i < (int) node->body->inputs->len; i++)
    if (node->inputs[i])
      ((PlValue *) node->body->inputs->pdata[i])->layout = node->inputs[i]->layout;
  for (guint k = 0; k < node->body->nodes->len; k++)
    {
      PlNode *inner = node->body->nodes->pdata[k];
      if (inner->body)
        mirror_input_layouts (inner);
    }
}

static bool
parse_node (Parser *P, PlGraph *g, bool is_body)
{
  g_autoptr (GError) err = NULL;
  g_autofree char *node_name = NULL, *op = NULL, *domain = NULL;
  g_autoptr (GArray) outs = g_array_new (FALSE, TRUE, sizeof (OutSpec));
  g_autoptr (GPtrArray) args = g_ptr_array_new ();
  g_array_set_clear_func (outs, out_spec_clear);
  Loc start = pl_text_parse_here (P), name_at = start, op_at;

  if (pl_text_parse_accept (P, '@'))
    {
      name_at = pl_text_parse_here (P);
      if (!pl_text_parse_name (P, "a node name", &node_name))
        return false;
    }
  else if (!pl_text_parse_at (P, T_IDENT) && !pl_text_parse_at (P, T_STRING))
    return pl_text_parse_error_expected (P, "a statement");
  if (!parse_outs (P, g, outs))
    return false;
  if (!node_name && outs->len > 0 && g_array_index (outs, OutSpec, 0).name[0])
    node_name = g_strdup (g_array_index (outs, OutSpec, 0).name);
  if (node_name && pl_graph_find_node (g, node_name))
    return pl_text_parse_error_tok (P, &name_at, "duplicate node name '%s'", node_name);
  if (!pl_text_parse_expect (P, '=', "'='"))
    return false;
  op_at = pl_text_parse_here (P);
  if (!pl_text_parse_name (P, "an op name", &op))
    return false;
  if (pl_text_parse_accept (P, T_DCOLON))
    {
      domain = g_steal_pointer (&op);
      if (!pl_text_parse_name (P, "an op name", &op))
        return false;
    }
  if (!parse_args (P, g, args))
    return false;

  g_autofree const char **names = g_new0 (const char *, outs->len + 1);
  for (guint i = 0; i < outs->len; i++)
    names[i] = g_array_index (outs, OutSpec, i).name;
  PlNode *node = pl_graph_add_node (g, op, domain, node_name, args->len,
                                    (PlValue *const *) args->pdata, outs->len, names, &err);
  if (!node)
    return pl_text_parse_error_tok (P, &op_at, "%s", err->message);
  if (pl_text_parse_at (P, '{') && !pl_text_parse_attrs (P, node))
    return false;
  if (pl_text_parse_at_word (P, 0, "after") && pl_text_parse_peek (P, 1)->kind == '('
      && !pl_text_parse_controls (P, node))
    return false;
  if (pl_text_parse_at_word (P, 0, "body") && pl_text_parse_at_word (P, 1, "graph"))
    {
      pl_text_parse_advance (P);
      PlGraph *body = pl_text_parse_graph (P, true);
      if (!body)
        return false;
      pl_node_set_body (node, body);
      if ((int) body->inputs->len != node->n_inputs || (int) body->outputs->len != node->n_outputs)
        return pl_text_parse_error_at (P, start.pos, start.line, PL_ERROR_PARSE,
                                       "the body has %u inputs and %u outputs, the node %d and %d",
                                       body->inputs->len, body->outputs->len, node->n_inputs, node->n_outputs);
      mirror_input_layouts (node);
    }
  if (!pl_node_infer (node, &err))
    return pl_text_parse_error_at (P, start.pos, start.line,
                                   err->domain == PL_ERROR ? err->code : PL_ERROR_PARSE, "%s", err->message);
  return check_annotations (P, node, outs, is_body);
}

static bool
is_decl (Parser *P, const char *word)
{
  int next = pl_text_parse_peek (P, 1)->kind;
  return pl_text_parse_at_word (P, 0, word) && (next == T_IDENT || next == T_STRING);
}

/* graph := 'graph' [name] ['opset' INT] '{' { stmt } '}' */
PlGraph *
pl_text_parse_graph (Parser *P, bool is_body)
{
  if (!pl_text_parse_at_word (P, 0, "graph"))
    return pl_text_parse_error_expected (P, "'graph'"), NULL;
  if (P->depth >= MAX_NESTING)
    return pl_text_parse_error_tok (P, pl_text_parse_peek (P, 0), "graphs nested more than %d deep", MAX_NESTING),
           NULL;
  pl_text_parse_advance (P);
  g_autofree char *name = NULL;
  if ((pl_text_parse_at (P, T_IDENT) || pl_text_parse_at (P, T_STRING))
      && !(pl_text_parse_at_word (P, 0, "opset") && pl_text_parse_peek (P, 1)->kind == T_INT)
      && !pl_text_parse_name (P, "a graph name", &name))
    return NULL;
  g_autoptr (PlGraph) g = pl_graph_new (name);
  if (pl_text_parse_at_word (P, 0, "opset"))
    {
      pl_text_parse_advance (P);
      Token *t = pl_text_parse_peek (P, 0);
      if (t->kind != T_INT)
        return pl_text_parse_error_expected (P, "an opset version"), NULL;
      if (t->mag > G_MAXINT)
        return pl_text_parse_error_tok (P, t, "opset version out of range"), NULL;
      g->opset = (int) t->mag;
      pl_text_parse_advance (P);
    }
  if (!pl_text_parse_expect (P, '{', "'{'"))
    return NULL;
  P->depth++;
  bool ok = true;
  while (ok && !pl_text_parse_accept (P, '}'))
    {
      if (pl_text_parse_at (P, T_EOF) || pl_text_parse_at (P, T_ERROR))
        ok = pl_text_parse_error_expected (P, "'}'");
      else if (is_decl (P, "input") || is_decl (P, "const"))
        ok = parse_decl (P, g, pl_text_parse_at_word (P, 0, "const"));
      else if (is_decl (P, "output"))
        ok = parse_output (P, g, is_body);
      else
        ok = parse_node (P, g, is_body);
    }
  P->depth--;
  return ok ? g_steal_pointer (&g) : NULL;
}

/* --- entry points --------------------------------------------------------------- */

PlGraph *
pl_text_parse (const char *text, gssize length, const char *filename, GError **error)
{
  g_return_val_if_fail (text != NULL, NULL);
  Parser P = { .filename = filename ? filename : "<string>" };
  pl_text_lex_init (&P.lx, text, length < 0 ? strlen (text) : (size_t) length);

  PlGraph *g = pl_text_parse_graph (&P, false);
  if (g && !pl_text_parse_at (&P, T_EOF))
    {
      pl_text_parse_error_expected (&P, "end of input");
      g_clear_pointer (&g, pl_graph_free);
    }
  /* A safety net: what parses must satisfy every IR invariant. */
  g_autoptr (GError) invalid = NULL;
  if (g && !pl_graph_verify (g, &invalid))
    {
      pl_text_parse_error_at (&P, P.lx.src, 1, PL_ERROR_INVALID, "%s", invalid->message);
      g_clear_pointer (&g, pl_graph_free);
    }
  pl_text_lex_clear (&P.lx);
  if (!g)
    {
      if (!P.error)
        g_set_error (&P.error, PL_ERROR, PL_ERROR_PARSE, "%s: parse error", P.filename);
      g_propagate_error (error, P.error);
    }
  return g;
}

PlGraph *
pl_text_load (const char *path, GError **error)
{
  g_autofree char *text = NULL;
  gsize length = 0;
  g_autoptr (GError) err = NULL;
  if (!g_file_get_contents (path, &text, &length, &err))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_IO, "%s", err->message);
      return NULL;
    }
  return pl_text_parse (text, length, path, error);
}

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
 */
#define G_LOG_DOMAIN "passlab"

#include "text-format.h"
#include "text-lex.h"

#include <math.h>
#include <string.h>

/* base64 data holds the tensor's bytes as they lie in memory, which is the
 * format's little-endian order on the hosts we build for. */
G_STATIC_ASSERT (G_BYTE_ORDER == G_LITTLE_ENDIAN);

/* Nested graphs deeper than this are refused (and keep the C stack small). */
#define MAX_NESTING 32

/* --- tokens ------------------------------------------------------------------ */

/* Where a token starts, for messages. */
typedef struct {
  const char *pos;
  int         line;
} Loc;

typedef struct {
  Lexer       lx;
  const char *filename;
  GError     *error;
  int         depth;
} Parser;

static Token *
peek (Parser *P, int k)
{
  return pl_text_lex_peek (&P->lx, k);
}

static void
advance (Parser *P)
{
  pl_text_lex_advance (&P->lx);
}

static bool
at (Parser *P, int kind)
{
  return peek (P, 0)->kind == kind;
}

static bool
at_word (Parser *P, int k, const char *word)
{
  Token *t = peek (P, k);
  return t->kind == T_IDENT && strcmp (t->text, word) == 0;
}

/* --- errors --------------------------------------------------------------- */

/* Sets P->error (the first error wins) to "file:line:col: message", the
 * source line and a caret under the column (counted in characters). Long
 * lines (base64 data) are cut to a window around the column. Returns false,
 * so that parse functions can `return error_at (...)`. */
static bool G_GNUC_PRINTF (5, 6)
error_at (Parser *P, const char *pos, int line, int code, const char *fmt, ...)
{
  if (P->error)
    return false;
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *raw_msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_autofree char *msg = g_utf8_make_valid (raw_msg, -1); /* names may hold any bytes */

  const char *ls = pos, *le = pos;
  while (ls > P->lx.src && ls[-1] != '\n')
    ls--;
  while (le < P->lx.end && *le != '\n')
    le++;
  if (le > ls && le[-1] == '\r')
    le--;
  int col = 1;
  for (const char *p = ls; p < pos; p++)
    if (((guint8) *p & 0xC0) != 0x80)
      col++;

  const char *ws = ls, *we = le;
  if (we - ws > 160)
    {
      ws = MAX (ls, pos - 70);
      we = MIN (le, pos + 70);
      while (ws < pos && ((guint8) *ws & 0xC0) == 0x80)
        ws++;
      while (we > pos && we < le && ((guint8) *we & 0xC0) == 0x80)
        we--;
    }
  GString *caret = g_string_new (ws > ls ? "   " : "");
  for (const char *p = ws; p < pos && p < we; p++)
    if (*p == '\t')
      g_string_append_c (caret, '\t');
    else if (((guint8) *p & 0xC0) != 0x80)
      g_string_append_c (caret, ' ');
  g_autofree char *raw = g_strndup (ws, we - ws);
  for (char *p = raw; *p; p++)
    if (*p == '\r')
      *p = ' ';
  g_autofree char *excerpt = g_utf8_make_valid (raw, -1);
  g_set_error (&P->error, PL_ERROR, code, "%s:%d:%d: %s\n  %s%s%s\n  %s^",
               P->filename, line, col, msg, ws > ls ? "..." : "", excerpt,
               we < le ? "..." : "", caret->str);
  g_string_free (caret, TRUE);
  return false;
}

#define error_tok(P, t, ...) error_at ((P), (t)->pos, (t)->line, PL_ERROR_PARSE, __VA_ARGS__)

static Loc
here (Parser *P)
{
  Token *t = peek (P, 0);
  return (Loc) { t->pos, t->line };
}

/* "expected X, got Y" at the current token (or the lexer's own message). */
static bool
error_expected (Parser *P, const char *what)
{
  Token *t = peek (P, 0);
  switch (t->kind)
    {
    case T_ERROR: error_tok (P, t, "%s", t->text); break;
    case T_EOF: error_tok (P, t, "expected %s, got end of input", what); break;
    case T_IDENT: error_tok (P, t, "expected %s, got '%s'", what, t->text); break;
    case T_STRING: error_tok (P, t, "expected %s, got a string", what); break;
    case T_INT: case T_FLOAT: error_tok (P, t, "expected %s, got a number", what); break;
    case T_DCOLON: error_tok (P, t, "expected %s, got '::'", what); break;
    default: error_tok (P, t, "expected %s, got '%c'", what, t->kind); break;
    }
  return false;
}

static bool
expect (Parser *P, int kind, const char *what)
{
  if (!at (P, kind))
    return error_expected (P, what);
  advance (P);
  return true;
}

static bool
accept (Parser *P, int kind)
{
  if (!at (P, kind))
    return false;
  advance (P);
  return true;
}

/* An identifier or a quoted name (not empty). *out is g_malloc'd. */
static bool
parse_name (Parser *P, const char *what, char **out)
{
  Token *t = peek (P, 0);
  if (t->kind != T_IDENT && t->kind != T_STRING)
    return error_expected (P, what);
  if (t->text[0] == '\0')
    return error_tok (P, t, "empty name");
  *out = g_steal_pointer (&t->text);
  advance (P);
  return true;
}

/* --- types and numbers ------------------------------------------------------ */

static char *
type_string (PlDType dtype, const PlShape *shape)
{
  g_autofree char *s = pl_shape_to_string (shape);
  return g_strdup_printf ("%s%s", pl_dtype_name (dtype), s);
}

static bool
parse_type (Parser *P, PlDType *dtype, PlShape *shape)
{
  Token *t = peek (P, 0);
  if (t->kind != T_IDENT)
    return error_expected (P, "a type");
  /* "undefined": an unknown element type (inputs of imported nested graphs) */
  *dtype = pl_dtype_from_name (t->text);
  if (*dtype == PL_DTYPE_UNDEFINED && strcmp (t->text, pl_dtype_name (PL_DTYPE_UNDEFINED)) != 0)
    return error_tok (P, t, "unknown dtype '%s'", t->text);
  advance (P);
  if (!expect (P, '[', "'['"))
    return false;
  *shape = pl_shape_scalar ();
  if (accept (P, '*'))
    {
      *shape = pl_shape_unknown ();
      return expect (P, ']', "']'");
    }
  int64_t numel = 1;
  while (!accept (P, ']'))
    {
      if (shape->rank > 0 && !expect (P, ',', "',' or ']'"))
        return false;
      t = peek (P, 0);
      if (shape->rank == PL_MAX_RANK)
        return error_tok (P, t, "rank exceeds the maximum of %d", PL_MAX_RANK);
      PlDim d;
      if (t->kind == T_INT)
        {
          if (t->mag > (guint64) PL_MAX_NUMEL || !pl_mul_overflow (numel, (int64_t) t->mag, &numel))
            return error_tok (P, t, "the tensor would have more than %" G_GINT64_FORMAT " elements",
                              PL_MAX_NUMEL);
          d = pl_dim_static ((int64_t) t->mag);
        }
      else if (t->kind == '?')
        d = pl_dim_unknown ();
      else if ((t->kind == T_IDENT || t->kind == T_STRING) && t->text[0] != '\0')
        d = pl_dim_symbol (t->text);
      else
        return error_expected (P, "a dimension (integer, symbol or '?')");
      advance (P);
      shape->dims[shape->rank++] = d;
    }
  return true;
}

typedef struct {
  bool    is_float;
  bool    neg;
  guint64 mag;  /* integers */
  double  d;    /* floats, sign included */
} Num;

static bool
parse_num (Parser *P, Num *n)
{
  memset (n, 0, sizeof *n);
  n->neg = accept (P, '-');
  Token *t = peek (P, 0);
  if (t->kind == T_INT)
    n->mag = t->mag;
  else if (t->kind == T_FLOAT)
    n->is_float = true, n->d = t->d;
  else if (t->kind == T_IDENT && (!strcmp (t->text, "inf") || !strcmp (t->text, "nan")))
    n->is_float = true, n->d = t->text[0] == 'i' ? INFINITY : NAN;
  else
    return error_expected (P, "a number");
  if (n->is_float && n->neg)
    n->d = -n->d;
  advance (P);
  return true;
}

static double
num_as_double (const Num *n)
{
  if (n->is_float)
    return n->d;
  return n->neg ? -(double) n->mag : (double) n->mag;
}

/* Checks an integer against [lo, hi] and returns it as int64 (u64 above
 * INT64_MAX wraps, as the tensor API does). */
static bool
num_to_int (Parser *P, const Loc *loc, const Num *n, int64_t lo, guint64 hi, const char *what,
            int64_t *out)
{
  if (n->is_float)
    return error_tok (P, loc, "expected an integer for %s, got a float", what);
  bool ok = n->neg ? (n->mag == 0 || (lo < 0 && n->mag - 1 <= (guint64) (-(lo + 1))))
                   : n->mag <= hi;
  if (!ok)
    return error_tok (P, loc, "%s%" G_GUINT64_FORMAT " is out of range for %s", n->neg ? "-" : "",
                      n->mag, what);
  *out = n->neg ? (n->mag == 0 ? 0 : -(int64_t) (n->mag - 1) - 1) : (int64_t) n->mag;
  return true;
}

static bool
num_to_float (Parser *P, const Loc *loc, const Num *n, float *out)
{
  double d = num_as_double (n);
  *out = (float) d;
  if (isfinite (d) && !isfinite (*out))
    return error_tok (P, loc, "%g is out of range for a 32-bit float", d);
  return true;
}

static void
int_range (PlDType dt, int64_t *lo, guint64 *hi)
{
  switch (dt)
    {
    case PL_DTYPE_I8: *lo = G_MININT8; *hi = G_MAXINT8; break;
    case PL_DTYPE_I16: *lo = G_MININT16; *hi = G_MAXINT16; break;
    case PL_DTYPE_I32: *lo = G_MININT32; *hi = G_MAXINT32; break;
    case PL_DTYPE_U8: *lo = 0; *hi = G_MAXUINT8; break;
    case PL_DTYPE_U16: *lo = 0; *hi = G_MAXUINT16; break;
    case PL_DTYPE_U32: *lo = 0; *hi = G_MAXUINT32; break;
    case PL_DTYPE_U64: *lo = 0; *hi = G_MAXUINT64; break;
    case PL_DTYPE_BOOL: *lo = 0; *hi = 1; break;
    default: *lo = G_MININT64; *hi = G_MAXINT64; break;
    }
}

/* Stores n as element i of t, checking that it fits the dtype. */
static bool
store_num (Parser *P, const Loc *loc, PlTensor *t, int64_t i, const Num *n)
{
  if (pl_dtype_is_float (t->dtype))
    {
      double d = num_as_double (n);
      pl_tensor_set_f64 (t, i, d);
      if (isfinite (d) && !isfinite (pl_tensor_get_f64 (t, i)))
        return error_tok (P, loc, "%g is out of range for %s", d, pl_dtype_name (t->dtype));
      return true;
    }
  int64_t lo, v;
  guint64 hi;
  int_range (t->dtype, &lo, &hi);
  if (!num_to_int (P, loc, n, lo, hi, pl_dtype_name (t->dtype), &v))
    return false;
  pl_tensor_set_i64 (t, i, v);  /* u64 above INT64_MAX wraps back to its bits */
  return true;
}

/* --- tensor data ------------------------------------------------------------ */

/* fill() and random() make data the text does not hold; a mistyped dim must
 * not make them fill all memory. 2^31 elements is 8 GiB of f32. */
#define MAX_GENERATED_NUMEL (((int64_t) 1) << 31)

static bool
check_generated_size (Parser *P, const Loc *loc, const char *what, const PlShape *shape)
{
  int64_t numel = pl_shape_numel (shape);
  return numel <= MAX_GENERATED_NUMEL
         || error_tok (P, loc, "%s() of %" G_GINT64_FORMAT " elements is too large (limit 2^31)",
                       what, numel);
}

static PlTensor *
new_tensor (Parser *P, const Loc *loc, PlDType dtype, const PlShape *shape)
{
  g_autoptr (GError) err = NULL;
  if (!pl_shape_is_static (shape))
    {
      g_autofree char *ts = type_string (dtype, shape);
      error_tok (P, loc, "tensor data needs a static type, not %s", ts);
      return NULL;
    }
  PlTensor *t = pl_tensor_new_shape (dtype, shape, &err);
  if (!t)
    error_tok (P, loc, "%s", err->message);
  return t;
}

static PlTensor *
parse_data_list (Parser *P, const Loc *loc, PlDType dtype, const PlShape *shape)
{
  g_autoptr (GArray) nums = g_array_new (FALSE, FALSE, sizeof (Num));
  g_autoptr (GArray) locs = g_array_new (FALSE, FALSE, sizeof (Loc));
  bool list = accept (P, '[');
  while (!list || !accept (P, ']'))
    {
      if (list && nums->len > 0 && !expect (P, ',', "',' or ']'"))
        return NULL;
      Loc where = here (P);
      Num n;
      if (!parse_num (P, &n))
        return NULL;
      g_array_append_val (nums, n);
      g_array_append_val (locs, where);
      if (!list)
        break;
    }
  int64_t numel = pl_shape_numel (shape);
  if (pl_shape_is_static (shape) && numel != (int64_t) nums->len)
    {
      g_autofree char *ts = type_string (dtype, shape);
      error_tok (P, loc, "data has %u values, type %s needs %" G_GINT64_FORMAT, nums->len, ts, numel);
      return NULL;
    }
  g_autoptr (PlTensor) t = new_tensor (P, loc, dtype, shape);
  if (!t)
    return NULL;
  for (guint i = 0; i < nums->len; i++)
    if (!store_num (P, &g_array_index (locs, Loc, i), t, i, &g_array_index (nums, Num, i)))
      return NULL;
  return g_steal_pointer (&t);
}

static PlTensor *
parse_data_fill (Parser *P, const Loc *loc, PlDType dtype, const PlShape *shape)
{
  Num n;
  advance (P);
  if (!expect (P, '(', "'('"))
    return NULL;
  Loc where = here (P);
  if (!parse_num (P, &n) || !expect (P, ')', "')'") || !check_generated_size (P, loc, "fill", shape))
    return NULL;
  g_autoptr (PlTensor) t = new_tensor (P, loc, dtype, shape);
  if (!t)
    return NULL;
  if (t->numel > 0 && !store_num (P, &where, t, 0, &n))
    return NULL;
  size_t es = pl_dtype_size (dtype);
  for (int64_t i = 1; i < t->numel; i++)
    memcpy ((char *) t->data + i * es, t->data, es);
  return g_steal_pointer (&t);
}

static PlTensor *
parse_data_random (Parser *P, const Loc *loc, PlDType dtype, const PlShape *shape)
{
  int64_t seed = 0;
  double lo = -1, hi = 1;
  advance (P);
  if (!expect (P, '(', "'('"))
    return NULL;
  if (!accept (P, ')'))
    {
      do
        {
          Loc where = here (P);
          char k = at_word (P, 0, "seed") ? 's' : at_word (P, 0, "lo") ? 'l'
                   : at_word (P, 0, "hi") ? 'h' : 0;
          Num n;
          if (!k)
            return error_expected (P, "seed=, lo= or hi="), NULL;
          advance (P);
          if (!expect (P, '=', "'='") || !parse_num (P, &n))
            return NULL;
          if (k == 's' && !num_to_int (P, &where, &n, 0, G_MAXUINT32, "seed", &seed))
            return NULL;
          if (k == 'l')
            lo = num_as_double (&n);
          else if (k == 'h')
            hi = num_as_double (&n);
        }
      while (accept (P, ','));
      if (!expect (P, ')', "',' or ')'"))
        return NULL;
    }
  if (!(lo <= hi) || !isfinite (lo) || !isfinite (hi)
      || (!pl_dtype_is_float (dtype) && (fabs (lo) > 1e15 || fabs (hi) > 1e15
                                          || floor (hi) - floor (lo) >= G_MAXINT32)))
    return error_tok (P, loc, "random() needs finite lo <= hi (integers: hi - lo < 2^31)"), NULL;
  if (!check_generated_size (P, loc, "random", shape))
    return NULL;
  g_autoptr (PlTensor) t = new_tensor (P, loc, dtype, shape);
  if (!t)
    return NULL;
  GRand *rand = g_rand_new_with_seed ((guint32) seed);
  pl_tensor_fill_random (t, rand, lo, hi);
  g_rand_free (rand);
  return g_steal_pointer (&t);
}

static bool
is_base64 (const char *s)
{
  size_t n = strlen (s);
  if (n % 4 != 0)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!g_ascii_isalnum (s[i]) && s[i] != '+' && s[i] != '/'
        && !(s[i] == '=' && i >= n - 2 && (i == n - 1 || s[n - 1] == '=')))
      return false;
  return true;
}

static PlTensor *
parse_data_base64 (Parser *P, const Loc *loc, PlDType dtype, const PlShape *shape)
{
  advance (P);
  Token *t = peek (P, 0);
  if (t->kind != T_STRING)
    return error_expected (P, "a base64 string"), NULL;
  if (!is_base64 (t->text))
    return error_tok (P, t, "invalid base64 data"), NULL;
  gsize n = 0;
  g_autofree guchar *bytes = t->text[0] ? g_base64_decode (t->text, &n) : NULL;
  /* Check the size before allocating what a mistyped shape may make huge. */
  int64_t numel = pl_shape_numel (shape);
  gsize want = numel >= 0 ? (gsize) numel * pl_dtype_size (dtype) : 0;
  if (numel >= 0 && n != want)
    {
      g_autofree char *ts = type_string (dtype, shape);
      error_tok (P, t, "data has %" G_GSIZE_FORMAT " bytes, type %s needs %" G_GSIZE_FORMAT, n, ts,
                 want);
      return NULL;
    }
  for (size_t i = 0; dtype == PL_DTYPE_BOOL && i < n; i++)
    if (bytes[i] > 1)
      return error_tok (P, t, "bool data must be 0 or 1"), NULL;
  g_autoptr (PlTensor) tensor = new_tensor (P, loc, dtype, shape);
  if (!tensor)
    return NULL;
  if (n > 0)
    memcpy (tensor->data, bytes, n);
  advance (P);
  return g_steal_pointer (&tensor);
}

/* data of the given type; loc is where errors about the whole tensor point. */
static PlTensor *
parse_data (Parser *P, const Loc *loc, PlDType dtype, const PlShape *shape)
{
  if (at_word (P, 0, "fill") && peek (P, 1)->kind == '(')
    return parse_data_fill (P, loc, dtype, shape);
  if (at_word (P, 0, "random") && peek (P, 1)->kind == '(')
    return parse_data_random (P, loc, dtype, shape);
  if (at_word (P, 0, "base64") && peek (P, 1)->kind == T_STRING)
    return parse_data_base64 (P, loc, dtype, shape);
  int k = peek (P, 0)->kind;
  if (k == '[' || k == '-' || k == T_INT || k == T_FLOAT || at_word (P, 0, "inf")
      || at_word (P, 0, "nan"))
    return parse_data_list (P, loc, dtype, shape);
  return error_expected (P, "tensor data ([...], fill(...), random(...) or base64\"...\")"), NULL;
}

/* --- attributes --------------------------------------------------------------- */

static PlGraph *parse_graph (Parser *P, bool is_body);

typedef enum { LIST_ANY, LIST_INTS, LIST_FLOATS, LIST_STRINGS } ListKind;

static bool
parse_attr_list (Parser *P, PlNode *node, const char *name, ListKind kind)
{
  g_autoptr (GArray) nums = g_array_new (FALSE, FALSE, sizeof (Num));
  g_autoptr (GArray) locs = g_array_new (FALSE, FALSE, sizeof (Loc));
  g_autoptr (GPtrArray) strs = g_ptr_array_new_with_free_func (g_free);
  bool any_float = false;
  if (!expect (P, '[', "'['"))
    return false;
  while (!accept (P, ']'))
    {
      if (nums->len + strs->len > 0 && !expect (P, ',', "',' or ']'"))
        return false;
      Token *t = peek (P, 0);
      Loc where = here (P);
      bool is_str = t->kind == T_STRING;
      if (kind == LIST_ANY)
        kind = is_str ? LIST_STRINGS : LIST_INTS;
      if (is_str != (kind == LIST_STRINGS))
        return error_expected (P, kind == LIST_STRINGS ? "a string" : "a number");
      if (is_str)
        {
          g_ptr_array_add (strs, g_steal_pointer (&t->text));
          advance (P);
          continue;
        }
      Num n;
      if (!parse_num (P, &n))
        return false;
      any_float |= n.is_float;
      g_array_append_val (nums, n);
      g_array_append_val (locs, where);
    }
  if (kind == LIST_STRINGS)
    {
      pl_node_set_attr_strings (node, name, (const char *const *) strs->pdata, strs->len);
      return true;
    }
  if (kind == LIST_FLOATS || any_float)
    {
      g_autofree float *v = g_new0 (float, nums->len + 1);
      for (guint i = 0; i < nums->len; i++)
        if (!num_to_float (P, &g_array_index (locs, Loc, i), &g_array_index (nums, Num, i), &v[i]))
          return false;
      pl_node_set_attr_floats (node, name, v, nums->len);
      return true;
    }
  g_autofree int64_t *v = g_new0 (int64_t, nums->len + 1);
  for (guint i = 0; i < nums->len; i++)
    if (!num_to_int (P, &g_array_index (locs, Loc, i), &g_array_index (nums, Num, i),
                     G_MININT64, G_MAXINT64, "an int64", &v[i]))
      return false;
  pl_node_set_attr_ints (node, name, v, nums->len);
  return true;
}

static bool
parse_attr_value (Parser *P, PlNode *node, const char *name)
{
  Token *t = peek (P, 0);
  Loc where = here (P);
  if (t->kind == T_STRING)
    {
      pl_node_set_attr_string (node, name, t->text);
      advance (P);
      return true;
    }
  if (t->kind == '[')
    return parse_attr_list (P, node, name, LIST_ANY);
  if (t->kind == T_IDENT && peek (P, 1)->kind == '[')
    {
      static const char *const list_words[] = { "ints", "floats", "strings" };
      for (int i = 0; i < 3; i++)
        if (!strcmp (t->text, list_words[i]))
          {
            advance (P);
            return parse_attr_list (P, node, name, (ListKind) (LIST_INTS + i));
          }
      PlDType dtype;
      PlShape shape;
      if (!parse_type (P, &dtype, &shape))
        return false;
      PlTensor *tensor = parse_data (P, &where, dtype, &shape);
      if (!tensor)
        return false;
      pl_node_set_attr_tensor (node, name, tensor);
      pl_tensor_unref (tensor);
      return true;
    }
  if (at_word (P, 0, "graph"))
    {
      PlGraph *g = parse_graph (P, false);
      if (!g)
        return false;
      pl_node_set_attr_graph (node, name, g);
      return true;
    }
  Num n;
  float f;
  int64_t v;
  if (!(t->kind == '-' || t->kind == T_INT || t->kind == T_FLOAT || at_word (P, 0, "inf")
        || at_word (P, 0, "nan")))
    return error_expected (P, "an attribute value");
  if (!parse_num (P, &n))
    return false;
  if (n.is_float && num_to_float (P, &where, &n, &f))
    pl_node_set_attr_float (node, name, f);
  else if (!n.is_float && num_to_int (P, &where, &n, G_MININT64, G_MAXINT64, "an int64", &v))
    pl_node_set_attr_int (node, name, v);
  return P->error == NULL;
}

static bool
parse_attrs (Parser *P, PlNode *node)
{
  advance (P); /* '{' */
  while (!accept (P, '}'))
    {
      if (node->n_attrs > 0 && !expect (P, ',', "',' or '}'"))
        return false;
      Loc where = here (P);
      g_autofree char *name = NULL;
      if (!parse_name (P, "an attribute name", &name))
        return false;
      if (pl_node_attr (node, name))
        return error_tok (P, &where, "duplicate attribute '%s'", name);
      if (!expect (P, '=', "'='") || !parse_attr_value (P, node, name))
        return false;
    }
  return true;
}

static bool
parse_controls (Parser *P, PlNode *node)
{
  advance (P); /* after */
  advance (P); /* ( */
  do
    {
      PlControlKind kind;
      if (at_word (P, 0, "serialize"))
        kind = PL_CONTROL_SERIALIZE;
      else if (at_word (P, 0, "prefetch"))
        kind = PL_CONTROL_PREFETCH;
      else
        return error_expected (P, "serialize: or prefetch:");
      advance (P);
      if (!expect (P, ':', "':'"))
        return false;
      Loc where = here (P);
      g_autofree char *name = NULL;
      if (!parse_name (P, "a node name", &name))
        return false;
      PlNode *other = pl_graph_find_node (node->graph, name);
      if (!other || other == node)
        return error_tok (P, &where, other ? "node '%s' cannot come after itself"
                                           : "undefined node '%s'", name);
      pl_node_add_control (node, other, kind);
    }
  while (accept (P, ','));
  return expect (P, ')', "',' or ')'");
}

/* --- statements ------------------------------------------------------------- */

static bool
check_new_value (Parser *P, PlGraph *g, const Loc *where, const char *name)
{
  return !pl_graph_find_value (g, name) || error_tok (P, where, "duplicate value name '%s'", name);
}

/* A name of a value defined earlier. */
static bool
parse_value_ref (Parser *P, PlGraph *g, const char *what, PlValue **v)
{
  Loc where = here (P);
  g_autofree char *name = NULL;
  if (!parse_name (P, what, &name))
    return false;
  *v = pl_graph_find_value (g, name);
  return *v || error_tok (P, &where, "undefined value '%s'", name);
}

/* '@' LAYOUT, at the '@'; *where is the layout name's position. */
static bool
parse_layout (Parser *P, PlLayout *layout, Loc *where)
{
  advance (P); /* '@' */
  *where = here (P);
  Token *t = peek (P, 0);
  if (t->kind != T_IDENT)
    return error_expected (P, "a layout (NCHW, NHWC or CHWN)");
  if (!pl_layout_parse (t->text, layout))
    return error_tok (P, t, "unknown layout '%s' (expected NCHW, NHWC or CHWN)", t->text);
  advance (P);
  return true;
}

/* Gives v the annotated layout, if the rules allow (pl_layout_check_value). */
static bool
apply_layout (Parser *P, PlValue *v, PlLayout layout, const Loc *where, bool is_body)
{
  g_autoptr (GError) err = NULL;
  if (!pl_layout_check_value (layout, v, is_body, &err))
    return error_tok (P, where, "%s", err->message);
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
  advance (P);
  Loc where = here (P);
  if (!parse_name (P, is_const ? "a constant name" : "an input name", &name)
      || !check_new_value (P, g, &where, name) || !expect (P, ':', "':'")
      || !parse_type (P, &dtype, &shape))
    return false;
  if (is_const && (!expect (P, '=', "'='") || !(t = parse_data (P, &where, dtype, &shape))))
    return false;
  if (!(is_const ? pl_graph_add_constant (g, name, t, &err)
                 : pl_graph_add_input (g, name, dtype, &shape, &err)))
    return error_tok (P, &where, "%s", err->message);
  return true;
}

static bool
parse_output (Parser *P, PlGraph *g, bool is_body)
{
  advance (P);
  do
    {
      PlValue *v;
      Loc where = here (P);
      if (!parse_value_ref (P, g, "an output name", &v))
        return false;
      pl_graph_add_output (g, v);
      if (!apply_layout (P, v, v->layout, &where, is_body))
        return false;
    }
  while (accept (P, ','));
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
  while (!at (P, '='))
    {
      if (outs->len > 0 && !expect (P, ',', "',' or '='"))
        return false;
      OutSpec o = { 0 };
      o.where = here (P);
      if (at_word (P, 0, "_"))
        {
          advance (P);
          o.name = g_strdup ("");
          g_array_append_val (outs, o);
          continue;
        }
      if (!parse_name (P, "an output name", &o.name))
        return false;
      g_array_append_val (outs, o);
      if (!check_new_value (P, g, &o.where, o.name))
        return false;
      for (guint i = 0; i + 1 < outs->len; i++)
        if (!strcmp (g_array_index (outs, OutSpec, i).name, o.name))
          return error_tok (P, &o.where, "duplicate value name '%s'", o.name);
      OutSpec *last = &g_array_index (outs, OutSpec, outs->len - 1);
      if (accept (P, ':'))
        {
          last->typed = true;
          if (!parse_type (P, &last->dtype, &last->shape))
            return false;
        }
      if (at (P, '@'))
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
  if (!expect (P, '(', "'('"))
    return false;
  if (accept (P, ')'))
    return true;
  do
    {
      PlValue *v = NULL;
      if (at_word (P, 0, "_"))
        advance (P);
      else if (!parse_value_ref (P, g, "an input name or '_'", &v))
        return false;
      g_ptr_array_add (args, v);
    }
  while (accept (P, ','));
  return expect (P, ')', "',' or ')'");
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
          g_autofree char *want = type_string (o->dtype, &o->shape);
          g_autofree char *got = type_string (v->dtype, &v->shape);
          error_tok (P, &o->where, "annotated type %s but inferred %s", want, got);
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
  Loc start = here (P), name_at = start, op_at;

  if (accept (P, '@'))
    {
      name_at = here (P);
      if (!parse_name (P, "a node name", &node_name))
        return false;
    }
  else if (!at (P, T_IDENT) && !at (P, T_STRING))
    return error_expected (P, "a statement");
  if (!parse_outs (P, g, outs))
    return false;
  if (!node_name && outs->len > 0 && g_array_index (outs, OutSpec, 0).name[0])
    node_name = g_strdup (g_array_index (outs, OutSpec, 0).name);
  if (node_name && pl_graph_find_node (g, node_name))
    return error_tok (P, &name_at, "duplicate node name '%s'", node_name);
  if (!expect (P, '=', "'='"))
    return false;
  op_at = here (P);
  if (!parse_name (P, "an op name", &op))
    return false;
  if (accept (P, T_DCOLON))
    {
      domain = g_steal_pointer (&op);
      if (!parse_name (P, "an op name", &op))
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
    return error_tok (P, &op_at, "%s", err->message);
  if (at (P, '{') && !parse_attrs (P, node))
    return false;
  if (at_word (P, 0, "after") && peek (P, 1)->kind == '(' && !parse_controls (P, node))
    return false;
  if (at_word (P, 0, "body") && at_word (P, 1, "graph"))
    {
      advance (P);
      PlGraph *body = parse_graph (P, true);
      if (!body)
        return false;
      pl_node_set_body (node, body);
      if ((int) body->inputs->len != node->n_inputs || (int) body->outputs->len != node->n_outputs)
        return error_at (P, start.pos, start.line, PL_ERROR_PARSE,
                         "the body has %u inputs and %u outputs, the node %d and %d",
                         body->inputs->len, body->outputs->len, node->n_inputs, node->n_outputs);
      mirror_input_layouts (node);
    }
  if (!pl_node_infer (node, &err))
    return error_at (P, start.pos, start.line,
                     err->domain == PL_ERROR ? err->code : PL_ERROR_PARSE, "%s", err->message);
  return check_annotations (P, node, outs, is_body);
}

static bool
is_decl (Parser *P, const char *word)
{
  int next = peek (P, 1)->kind;
  return at_word (P, 0, word) && (next == T_IDENT || next == T_STRING);
}

/* graph := 'graph' [name] ['opset' INT] '{' { stmt } '}' */
static PlGraph *
parse_graph (Parser *P, bool is_body)
{
  if (!at_word (P, 0, "graph"))
    return error_expected (P, "'graph'"), NULL;
  if (P->depth >= MAX_NESTING)
    return error_tok (P, peek (P, 0), "graphs nested more than %d deep", MAX_NESTING), NULL;
  advance (P);
  g_autofree char *name = NULL;
  if ((at (P, T_IDENT) || at (P, T_STRING)) && !(at_word (P, 0, "opset") && peek (P, 1)->kind == T_INT)
      && !parse_name (P, "a graph name", &name))
    return NULL;
  g_autoptr (PlGraph) g = pl_graph_new (name);
  if (at_word (P, 0, "opset"))
    {
      advance (P);
      Token *t = peek (P, 0);
      if (t->kind != T_INT)
        return error_expected (P, "an opset version"), NULL;
      if (t->mag > G_MAXINT)
        return error_tok (P, t, "opset version out of range"), NULL;
      g->opset = (int) t->mag;
      advance (P);
    }
  if (!expect (P, '{', "'{'"))
    return NULL;
  P->depth++;
  bool ok = true;
  while (ok && !accept (P, '}'))
    {
      if (at (P, T_EOF) || at (P, T_ERROR))
        ok = error_expected (P, "'}'");
      else if (is_decl (P, "input") || is_decl (P, "const"))
        ok = parse_decl (P, g, at_word (P, 0, "const"));
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

  PlGraph *g = parse_graph (&P, false);
  if (g && !at (&P, T_EOF))
    {
      error_expected (&P, "end of input");
      g_clear_pointer (&g, pl_graph_free);
    }
  /* A safety net: what parses must satisfy every IR invariant. */
  g_autoptr (GError) invalid = NULL;
  if (g && !pl_graph_verify (g, &invalid))
    {
      error_at (&P, P.lx.src, 1, PL_ERROR_INVALID, "%s", invalid->message);
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

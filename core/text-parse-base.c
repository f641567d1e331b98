/* text-parse-base.c — the `.graph` parser's base (the grammar is in
 * text-parse.c): error messages that quote the offending line with a caret
 * under the column, "expected X, got Y", and the small things every
 * statement is made of: names, types and numbers.
 */
#define G_LOG_DOMAIN "passlab"

#include "text-parse-private.h"

#include <math.h>

/* --- errors --------------------------------------------------------------- */

/* Sets P->error (the first error wins) to "file:line:col: message", the
 * source line and a caret under the column (counted in characters). Long
 * lines (base64 data) are cut to a window around the column. Returns false,
 * so that parse functions can `return pl_text_parse_error_at (...)`. */
bool G_GNUC_PRINTF (5, 6)
pl_text_parse_error_at (Parser *P, const char *pos, int line, int code, const char *fmt, ...)
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

/* "expected X, got Y" at the current token (or the lexer's own message). */
bool
pl_text_parse_error_expected (Parser *P, const char *what)
{
  Token *t = pl_text_parse_peek (P, 0);
  switch (t->kind)
    {
    case T_ERROR: pl_text_parse_error_tok (P, t, "%s", t->text); break;
    case T_EOF: pl_text_parse_error_tok (P, t, "expected %s, got end of input", what); break;
    case T_IDENT: pl_text_parse_error_tok (P, t, "expected %s, got '%s'", what, t->text); break;
    case T_STRING: pl_text_parse_error_tok (P, t, "expected %s, got a string", what); break;
    case T_INT: case T_FLOAT: pl_text_parse_error_tok (P, t, "expected %s, got a number", what); break;
    case T_DCOLON: pl_text_parse_error_tok (P, t, "expected %s, got '::'", what); break;
    default: pl_text_parse_error_tok (P, t, "expected %s, got '%c'", what, t->kind); break;
    }
  return false;
}

bool
pl_text_parse_expect (Parser *P, int kind, const char *what)
{
  if (!pl_text_parse_at (P, kind))
    return pl_text_parse_error_expected (P, what);
  pl_text_parse_advance (P);
  return true;
}

/* An identifier or a quoted name (not empty). *out is g_malloc'd. */
bool
pl_text_parse_name (Parser *P, const char *what, char **out)
{
  Token *t = pl_text_parse_peek (P, 0);
  if (t->kind != T_IDENT && t->kind != T_STRING)
    return pl_text_parse_error_expected (P, what);
  if (t->text[0] == '\0')
    return pl_text_parse_error_tok (P, t, "empty name");
  *out = g_steal_pointer (&t->text);
  pl_text_parse_advance (P);
  return true;
}

/* --- types and numbers ------------------------------------------------------ */

char *
pl_text_parse_type_string (PlDType dtype, const PlShape *shape)
{
  g_autofree char *s = pl_shape_to_string (shape);
  return g_strdup_printf ("%s%s", pl_dtype_name (dtype), s);
}

bool
pl_text_parse_type (Parser *P, PlDType *dtype, PlShape *shape)
{
  Token *t = pl_text_parse_peek (P, 0);
  if (t->kind != T_IDENT)
    return pl_text_parse_error_expected (P, "a type");
  /* "undefined": an unknown element type (inputs of imported nested graphs) */
  *dtype = pl_dtype_from_name (t->text);
  if (*dtype == PL_DTYPE_UNDEFINED && strcmp (t->text, pl_dtype_name (PL_DTYPE_UNDEFINED)) != 0)
    return pl_text_parse_error_tok (P, t, "unknown dtype '%s'", t->text);
  pl_text_parse_advance (P);
  if (!pl_text_parse_expect (P, '[', "'['"))
    return false;
  *shape = pl_shape_scalar ();
  if (pl_text_parse_accept (P, '*'))
    {
      *shape = pl_shape_unknown ();
      return pl_text_parse_expect (P, ']', "']'");
    }
  int64_t numel = 1;
  while (!pl_text_parse_accept (P, ']'))
    {
      if (shape->rank > 0 && !pl_text_parse_expect (P, ',', "',' or ']'"))
        return false;
      t = pl_text_parse_peek (P, 0);
      if (shape->rank == PL_MAX_RANK)
        return pl_text_parse_error_tok (P, t, "rank exceeds the maximum of %d", PL_MAX_RANK);
      PlDim d;
      if (t->kind == T_INT)
        {
          if (t->mag > (guint64) PL_MAX_NUMEL || !pl_mul_overflow (numel, (int64_t) t->mag, &numel))
            return pl_text_parse_error_tok (P, t, "the tensor would have more than %" G_GINT64_FORMAT
                                            " elements", PL_MAX_NUMEL);
          d = pl_dim_static ((int64_t) t->mag);
        }
      else if (t->kind == '?')
        d = pl_dim_unknown ();
      else if ((t->kind == T_IDENT || t->kind == T_STRING) && t->text[0] != '\0')
        d = pl_dim_symbol (t->text);
      else
        return pl_text_parse_error_expected (P, "a dimension (integer, symbol or '?')");
      pl_text_parse_advance (P);
      shape->dims[shape->rank++] = d;
    }
  return true;
}

bool
pl_text_parse_num (Parser *P, Num *n)
{
  memset (n, 0, sizeof *n);
  n->neg = pl_text_parse_accept (P, '-');
  Token *t = pl_text_parse_peek (P, 0);
  if (t->kind == T_INT)
    n->mag = t->mag;
  else if (t->kind == T_FLOAT)
    n->is_float = true, n->d = t->d;
  else if (t->kind == T_IDENT && (!strcmp (t->text, "inf") || !strcmp (t->text, "nan")))
    n->is_float = true, n->d = t->text[0] == 'i' ? INFINITY : NAN;
  else
    return pl_text_parse_error_expected (P, "a number");
  if (n->is_float && n->neg)
    n->d = -n->d;
  pl_text_parse_advance (P);
  return true;
}

double
pl_text_parse_num_as_double (const Num *n)
{
  if (n->is_float)
    return n->d;
  return n->neg ? -(double) n->mag : (double) n->mag;
}

/* Checks an integer against [lo, hi] and returns it as int64 (u64 above
 * INT64_MAX wraps, as the tensor API does). */
bool
pl_text_parse_num_to_int (Parser *P, const Loc *loc, const Num *n, int64_t lo, guint64 hi, const char *what,
                          int64_t *out)
{
  if (n->is_float)
    return pl_text_parse_error_tok (P, loc, "expected an integer for %s, got a float", what);
  bool ok = n->neg ? (n->mag == 0 || (lo < 0 && n->mag - 1 <= (guint64) (-(lo + 1))))
                   : n->mag <= hi;
  if (!ok)
    return pl_text_parse_error_tok (P, loc, "%s%" G_GUINT64_FORMAT " is out of range for %s",
                                    n->neg ? "-" : "", n->mag, what);
  *out = n->neg ? (n->mag == 0 ? 0 : -(int64_t) (n->mag - 1) - 1) : (int64_t) n->mag;
  return true;
}

bool
pl_text_parse_num_to_float (Parser *P, const Loc *loc, const Num *n, float *out)
{
  double d = pl_text_parse_num_as_double (n);
  *out = (float) d;
  if (isfinite (d) && !isfinite (*out))
    return pl_text_parse_error_tok (P, loc, "%g is out of range for a 32-bit float", d);
  return true;
}

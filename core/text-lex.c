/* text-lex.c — the lexer of the `.graph` text format (see text-lex.h;
 * text-parse.c documents the grammar). Identifiers, numbers, double-quoted
 * strings with C escapes, `::` and one-character punctuation; whitespace
 * and `#` comments are skipped. A malformed token becomes T_ERROR with a
 * message, which the parser reports with its position.
 */
#define G_LOG_DOMAIN "passlab"

#include "text-lex.h"

#include <errno.h>
#include <math.h>
#include <string.h>

static bool
is_ident_start (char c)
{
  return g_ascii_isalpha (c) || c == '_';
}

static bool
is_ident_char (char c)
{
  return g_ascii_isalnum (c) || c == '_' || c == '.';
}

static void
lex_error (Token *t, const char *pos, char *message)
{
  t->kind = T_ERROR;
  t->pos = pos;
  t->text = message;
}

static void
lex_number (Lexer *L, Token *t)
{
  const char *p = L->cur;
  bool is_float = false;
  while (p < L->end && g_ascii_isdigit (*p))
    p++;
  if (p < L->end && *p == '.')
    {
      is_float = true;
      for (p++; p < L->end && g_ascii_isdigit (*p); p++)
        ;
    }
  if (p < L->end && (*p == 'e' || *p == 'E'))
    {
      const char *q = p + 1;
      if (q < L->end && (*q == '+' || *q == '-'))
        q++;
      if (q < L->end && g_ascii_isdigit (*q))
        {
          is_float = true;
          for (p = q; p < L->end && g_ascii_isdigit (*p); p++)
            ;
        }
    }
  if (p < L->end && is_ident_char (*p))
    {
      for (; p < L->end && is_ident_char (*p); p++)
        ;
      lex_error (t, L->cur, g_strdup ("malformed number"));
      L->cur = p;
      return;
    }
  g_autofree char *s = g_strndup (L->cur, p - L->cur);
  L->cur = p;
  bool overflow = false;
  if (is_float)
    {
      errno = 0;
      t->kind = T_FLOAT;
      t->d = g_ascii_strtod (s, NULL);
      overflow = errno == ERANGE && isinf (t->d);
    }
  else
    {
      t->kind = T_INT;
      for (const char *c = s; *c && !overflow; c++)
        {
          overflow = t->mag > (G_MAXUINT64 - (guint64) (*c - '0')) / 10;
          t->mag = t->mag * 10 + (guint64) (*c - '0');
        }
    }
  if (overflow)
    lex_error (t, t->pos, g_strdup_printf ("%s %s is out of range", is_float ? "number" : "integer", s));
}

static int
hex_value (char c)
{
  return g_ascii_isxdigit (c) ? g_ascii_xdigit_value (c) : -1;
}

/* A double-quoted string on one line, with C escapes (\xHH: two digits). */
static void
lex_string (Lexer *L, Token *t)
{
  g_autoptr (GString) s = g_string_new (NULL);
  const char *p = L->cur + 1, *bad = NULL, *why = NULL;
  for (; !bad && p < L->end && *p != '"' && *p != '\n'; p++)
    {
      char c = p + 1 < L->end ? p[1] : '\0';
      int hi = p + 2 < L->end ? hex_value (p[2]) : -1, lo = p + 3 < L->end ? hex_value (p[3]) : -1;
      if (*p == '\0')
        bad = p, why = "NUL byte in string";
      else if (*p != '\\')
        g_string_append_c (s, *p);
      else if (c == 'x' && hi >= 0 && lo >= 0 && hi + lo > 0)
        g_string_append_c (s, (char) (hi * 16 + lo)), p += 3;
      else if (c && strchr ("ntr\\\"'", c))
        g_string_append_c (s, c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c), p++;
      else
        bad = p, why = c == 'x' ? "\\x needs two hex digits (not 00)" : "invalid escape in string";
    }
  if (!bad && (p >= L->end || *p != '"'))
    bad = t->pos, why = "unterminated string";
  L->cur = MIN (p + 1, L->end);
  if (bad)
    lex_error (t, bad, g_strdup (why));
  else
    {
      t->kind = T_STRING;
      t->text = g_string_free (g_steal_pointer (&s), FALSE);
    }
}

static void
lex (Lexer *L, Token *t)
{
  memset (t, 0, sizeof *t);
  for (;;)
    {
      while (L->cur < L->end && g_ascii_isspace (*L->cur))
        if (*L->cur++ == '\n')
          L->line++;
      if (L->cur < L->end && *L->cur == '#')
        {
          while (L->cur < L->end && *L->cur != '\n')
            L->cur++;
          continue;
        }
      break;
    }
  t->pos = L->cur;
  t->line = L->line;
  if (L->cur >= L->end)
    {
      t->kind = T_EOF;
      return;
    }
  char c = *L->cur;
  if (is_ident_start (c))
    {
      const char *p = L->cur;
      while (p < L->end && is_ident_char (*p))
        p++;
      t->kind = T_IDENT;
      t->text = g_strndup (L->cur, p - L->cur);
      L->cur = p;
    }
  else if (g_ascii_isdigit (c))
    lex_number (L, t);
  else if (c == '"')
    lex_string (L, t);
  else if (c == ':' && L->cur + 1 < L->end && L->cur[1] == ':')
    {
      t->kind = T_DCOLON;
      L->cur += 2;
    }
  else if (strchr ("{}()[],:=@-*?", c) && c != '\0')
    {
      t->kind = c;
      L->cur++;
    }
  else
    {
      L->cur++;
      if (g_ascii_isprint (c))
        lex_error (t, t->pos, g_strdup_printf ("unexpected character '%c'", c));
      else
        lex_error (t, t->pos, g_strdup_printf ("unexpected byte 0x%02x", (guint8) c));
    }
}

Token *
pl_text_lex_peek (Lexer *L, int k)
{
  while (L->n_tok <= k)
    lex (L, &L->tok[L->n_tok++]);
  return &L->tok[k];
}

void
pl_text_lex_advance (Lexer *L)
{
  pl_text_lex_peek (L, 0);
  g_free (L->tok[0].text);
  L->tok[0] = L->tok[1];
  memset (&L->tok[1], 0, sizeof L->tok[1]);
  L->n_tok--;
}

void
pl_text_lex_init (Lexer *L, const char *text, size_t length)
{
  *L = (Lexer) { .src = text, .cur = text, .end = text + length, .line = 1 };
  if (L->end - L->cur >= 3 && !memcmp (L->cur, "\xEF\xBB\xBF", 3))
    L->cur += 3; /* a UTF-8 byte-order mark */
}

void
pl_text_lex_clear (Lexer *L)
{
  for (int i = 0; i < L->n_tok; i++)
    g_free (L->tok[i].text);
  L->n_tok = 0;
}

/* text-parse-private.h — what the files of the `.graph` parser share (the
 * grammar is in text-parse.c): the parser state, token access, errors that
 * point at the text, and what one file parses for another: names, types and
 * numbers (text-parse-base.c), tensor data, attributes and control edges
 * (text-parse-values.c), and nested graphs (text-parse.c). Not installed;
 * only the text-parse*.c files include it. */
#pragma once

#include <string.h>

#include "text-format.h"
#include "text-lex.h"

G_BEGIN_DECLS

/* Where a token starts, for messages. */
typedef struct {
  const char *pos;
  int         line;
} Loc;

typedef struct {
  Lexer       lx;
  const char *filename;
  GError     *error;   /* the first error; later ones are dropped */
  int         depth;   /* graphs nested now */
} Parser;

/* A number as written, before the type it becomes is known. */
typedef struct {
  bool    is_float;
  bool    neg;
  guint64 mag;  /* integers */
  double  d;    /* floats, sign included */
} Num;

/* --- tokens ------------------------------------------------------------------ */

static inline Token *
pl_text_parse_peek (Parser *P, int k)
{
  return pl_text_lex_peek (&P->lx, k);
}

static inline void
pl_text_parse_advance (Parser *P)
{
  pl_text_lex_advance (&P->lx);
}

static inline bool
pl_text_parse_at (Parser *P, int kind)
{
  return pl_text_parse_peek (P, 0)->kind == kind;
}

/* Whether the k-th token ahead is the identifier word. */
static inline bool
pl_text_parse_at_word (Parser *P, int k, const char *word)
{
  Token *t = pl_text_parse_peek (P, k);
  return t->kind == T_IDENT && strcmp (t->text, word) == 0;
}

/* Skips a token of kind if it comes next; returns whether it did. */
static inline bool
pl_text_parse_accept (Parser *P, int kind)
{
  if (!pl_text_parse_at (P, kind))
    return false;
  pl_text_parse_advance (P);
  return true;
}

static inline Loc
pl_text_parse_here (Parser *P)
{
  Token *t = pl_text_parse_peek (P, 0);
  return (Loc) { t->pos, t->line };
}

/* --- text-parse-base.c: errors ------------------------------------------------ */

/* Sets P->error (the first error wins) to "file:line:col: message", the
 * source line and a caret under the column. Returns false, so that parse
 * functions can `return pl_text_parse_error_at (...)`. */
bool      pl_text_parse_error_at       (Parser *P, const char *pos, int line, int code, const char *fmt, ...)
                                        G_GNUC_PRINTF (5, 6);
/* The same at a token or a Loc t, with code PL_ERROR_PARSE. */
#define pl_text_parse_error_tok(P, t, ...) \
  pl_text_parse_error_at ((P), (t)->pos, (t)->line, PL_ERROR_PARSE, __VA_ARGS__)
/* "expected X, got Y" at the current token (or the lexer's own message). */
bool      pl_text_parse_error_expected (Parser *P, const char *what);
/* Skips a token of kind, or fails with "expected what". */
bool      pl_text_parse_expect         (Parser *P, int kind, const char *what);

/* --- text-parse-base.c: names, types and numbers ------------------------------ */

/* An identifier or a quoted name (not empty). *out is g_malloc'd. */
bool      pl_text_parse_name           (Parser *P, const char *what, char **out);
/* "f32[N, 4]", for messages (g_free). */
char     *pl_text_parse_type_string    (PlDType dtype, const PlShape *shape);
bool      pl_text_parse_type           (Parser *P, PlDType *dtype, PlShape *shape);
bool      pl_text_parse_num            (Parser *P, Num *n);
double    pl_text_parse_num_as_double  (const Num *n);
/* Checks an integer against [lo, hi] and returns it as int64 (u64 above
 * INT64_MAX wraps, as the tensor API does); what names the type in errors. */
bool      pl_text_parse_num_to_int     (Parser *P, const Loc *loc, const Num *n, int64_t lo, guint64 hi,
                                        const char *what, int64_t *out);
bool      pl_text_parse_num_to_float   (Parser *P, const Loc *loc, const Num *n, float *out);

/* --- text-parse-values.c ------------------------------------------------------ */

/* data of the given type; loc is where errors about the whole tensor point. */
PlTensor *pl_text_parse_data           (Parser *P, const Loc *loc, PlDType dtype, const PlShape *shape);
/* '{' attr { ',' attr } '}' onto node, at the '{'. */
bool      pl_text_parse_attrs          (Parser *P, PlNode *node);
/* 'after' '(' ctl { ',' ctl } ')' onto node, at 'after'. */
bool      pl_text_parse_controls       (Parser *P, PlNode *node);

/* --- text-parse.c ------------------------------------------------------------- */

/* graph := 'graph' [name] ['opset' INT] '{' { stmt } '}'; is_body: a fusion
 * node's body (its outputs may carry layouts). */
PlGraph  *pl_text_parse_graph          (Parser *P, bool is_body);

G_END_DECLS

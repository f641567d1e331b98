/* text-lex.h — the lexer of the `.graph` text format (text-lex.c), for its
 * parser (text-parse.c, which documents the grammar). Not part of the
 * public API. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <glib.h>

G_BEGIN_DECLS

/* Punctuation tokens use their character as kind; the others follow. */
enum {
  T_EOF = 256,
  T_ERROR,   /* text holds the message */
  T_IDENT,
  T_STRING,  /* text holds the decoded contents */
  T_INT,     /* mag holds the magnitude (sign is a separate '-') */
  T_FLOAT,   /* d holds the value */
  T_DCOLON,  /* '::' */
};

typedef struct {
  int         kind;
  const char *pos;   /* first byte in the source */
  int         line;
  char       *text;
  guint64     mag;
  double      d;
} Token;

/* The source and two tokens of lookahead. */
typedef struct {
  const char *src, *end, *cur;
  int         line;
  Token       tok[2];
  int         n_tok;
} Lexer;

/* Reads text[0..length) (a UTF-8 byte-order mark is skipped) from line 1. */
void   pl_text_lex_init    (Lexer *L, const char *text, size_t length);
/* Frees the lookahead tokens. */
void   pl_text_lex_clear   (Lexer *L);
/* The k-th token ahead (k < 2), lexed on demand; T_ERROR for bad input. */
Token *pl_text_lex_peek    (Lexer *L, int k);
/* Drops the current token. */
void   pl_text_lex_advance (Lexer *L);

G_END_DECLS

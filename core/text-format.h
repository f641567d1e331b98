/* text-format.h — the readable `.graph` text format.
 *
 * Grammar and examples: see the comment at the top of text-parse.c and
 * README.md ("The .graph text format"). The printer's output parses back to
 * a graph that prints identically (exact round trip).
 */
#pragma once

#include "graph.h"

G_BEGIN_DECLS

/* Parses text. filename is used in messages only ("<string>" if NULL).
 * Errors (PL_ERROR_PARSE, or SHAPE from inference) read
 *   file:line:col: message
 *     the offending line
 *         ^
 * Shapes are inferred; an annotated type that disagrees is an error. */
PlGraph *pl_text_parse      (const char *text, gssize length, const char *filename, GError **error);
PlGraph *pl_text_load       (const char *path, GError **error);

/* Prints g in topological order. Constants with more than
 * PL_TEXT_INLINE_LIMIT elements are printed as base64 of their bytes. */
#define PL_TEXT_INLINE_LIMIT 64
char    *pl_text_print      (const PlGraph *g);
bool     pl_text_save       (const PlGraph *g, const char *path, GError **error);

G_END_DECLS

/* dot-export.h — Graphviz DOT text for a graph (fusion nodes as clusters). */
#pragma once

#include "graph.h"

G_BEGIN_DECLS

char *pl_dot_export (const PlGraph *g);
bool  pl_dot_save   (const PlGraph *g, const char *path, GError **error);

G_END_DECLS

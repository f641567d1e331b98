/* graph-diff.h — the structural difference between two versions of a graph,
 * by stable node id: nodes added, removed, and changed (same id, different
 * op, attributes, inputs, control edges or output types). */
#pragma once

#include "graph.h"

G_BEGIN_DECLS

typedef struct {
  GArray *added;    /* guint32 ids present only in `after` */
  GArray *removed;  /* ids present only in `before` */
  GArray *changed;  /* ids in both whose node differs */
} PlGraphDiff;

PlGraphDiff *pl_graph_diff      (const PlGraph *before, const PlGraph *after);
void         pl_graph_diff_free (PlGraphDiff *d);
bool         pl_graph_diff_empty (const PlGraphDiff *d);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PlGraphDiff, pl_graph_diff_free)

G_END_DECLS

/* pl-inspector.h — the side panel describing what is selected: a node (op,
 * category, attributes, inputs with their producers, outputs with their
 * users, a fusion's kind and body), a graph input, constant or output, and
 * the current step (its pass, diff and report). Producers, users and body
 * nodes are links: clicking one emits "key-activated". */
#pragma once

#include <gtk/gtk.h>

#include "pass-manager.h"

G_BEGIN_DECLS

#define PL_TYPE_INSPECTOR (pl_inspector_get_type ())
G_DECLARE_FINAL_TYPE (PlInspector, pl_inspector, PL, INSPECTOR, GtkWidget)

GtkWidget  *pl_inspector_new   (void);
/* Describes key (a canvas key: "n12", "i3", "c7", "o0", "n5/n2"; NULL:
 * nothing selected) in graph, and step (its index step_index) below it.
 * graph and step are read now only; nothing is kept. */
void        pl_inspector_show  (PlInspector *self, const PlGraph *graph, const char *key,
                                const PlStep *step, int step_index);
void        pl_inspector_clear (PlInspector *self);
/* The heading shown (node name, or a placeholder). */
const char *pl_inspector_get_title (PlInspector *self);

/* The canvas key of the node or value called name in graph (searching
 * fusion bodies too), or NULL; g_free it. A string that already is a key
 * of graph is returned as it is. */
char       *pl_graph_key_for_name (const PlGraph *graph, const char *name);

/* Signal "key-activated" (const char *key): a producer/user/body link was clicked. */

G_END_DECLS

/* pl-graph-draw.h — drawing a laid-out graph with cairo: the canvas draws
 * through it on screen (inside gtk_snapshot_append_cairo) and the export
 * writes PNG and SVG files with the same code, so a file looks like the view.
 *
 * A PlGraphScene is a PlGraphLayout plus what one view shows on it: which
 * nodes and edges exist in the version on screen, their diff state, the
 * texts and data layouts of that version, the selection, the hovered node
 * and its lit neighbourhood, and per-node annotations. The canvas owns and
 * updates it. */
#pragma once

#include <cairo.h>

#include "pl-graph-layout.h"

G_BEGIN_DECLS

/* The canvas's background (r, g, b for cairo_set_source_rgb); edge labels
 * are haloed in it so they stay readable over edges. */
#define PL_GRAPH_BACKGROUND 0.973, 0.976, 0.984

typedef enum {
  PL_DRAW_HIDDEN,   /* not in the shown version (another version's node): not drawn */
  PL_DRAW_NORMAL,
  PL_DRAW_ADDED,    /* new in this step: green */
  PL_DRAW_CHANGED,  /* same id, different node: amber */
  PL_DRAW_REMOVED,  /* gone in this step: dashed grey ghost */
} PlDrawState;

/* Bits of PlGraphScene.node_lit / edge_lit around the hovered node. */
enum {
  PL_LIT_INPUT  = 1 << 0,  /* feeds the hovered node */
  PL_LIT_OUTPUT = 1 << 1,  /* reads the hovered node */
};

typedef struct {
  PlGraphLayout *layout;          /* a reference */
  guint8        *node_state;      /* PlDrawState per layout node */
  guint8        *edge_state;      /* PlDrawState per layout edge */
  guint8        *cluster_state;   /* PlDrawState per cluster */
  const char   **title;           /* per node: the shown version's texts (borrowed), */
  const char   **subtitle;        /*   NULL: the layout's */
  const char   **cluster_subtitle;
  const char   **edge_label;      /* per edge, NULL: the layout's */
  const char   **detail;          /* per node: the shown version's third line (NULL: none) */
  guint8        *node_layout;     /* per node: the PlLayout its detail speaks of */
  guint8        *node_transform;  /* per node: a LayoutTransform in the shown version */
  guint8        *edge_layout;     /* per edge: the PlLayout of the value it carries */
  char         **annotation;      /* per node, owned, may be NULL */
  float         *edge_bbox;       /* x0, y0, x1, y1 per edge */
  guint8        *node_lit;        /* PL_LIT_* per node */
  guint8        *edge_lit;        /* PL_LIT_* per edge */
  int            selected;        /* node index, or -1 */
  int            selected_cluster;/* cluster index, or -1 */
  int            hover;           /* node index, or -1 */
  GHashTable    *cluster_index;   /* cluster key -> index + 1 */
} PlGraphScene;

/* Every node and edge NORMAL, nothing selected. Takes a reference. */
PlGraphScene *pl_graph_scene_new  (PlGraphLayout *layout);
void          pl_graph_scene_free (PlGraphScene *s);
/* Shows one version on the scene (shown: a sketch of one graph): its boxes,
 * clusters and edges NORMAL with its texts, everything else HIDDEN. With
 * prev (the version before), keys only prev has are REMOVED ghosts and keys
 * only shown has are ADDED; top-level op nodes whose id is in changed_ids
 * (guint32 ids as pointers, may be NULL) are CHANGED. shown NULL: the
 * whole layout, NORMAL. The scene borrows the sketches' texts: keep them
 * alive while it is drawn. */
void          pl_graph_scene_show (PlGraphScene *s, const PlGraphSketch *shown,
                                   const PlGraphSketch *prev, GHashTable *changed_ids);
/* Index of the cluster with this key, or -1 (s may be NULL). */
int           pl_graph_scene_find_cluster (const PlGraphScene *s, const char *key);
/* Marks the neighbourhood of node (or nothing for -1) as lit. */
void          pl_graph_scene_set_hover (PlGraphScene *s, int node);
/* The texts node i shows in the version on screen (the layout's where the
 * scene has none). */
const char   *pl_graph_scene_node_title    (const PlGraphScene *s, int i);
const char   *pl_graph_scene_node_subtitle (const PlGraphScene *s, int i);
/* Whether node i is drawn and meets [x0, x1] × [y0, y1] (with its halo). */
bool          pl_graph_scene_node_visible  (const PlGraphScene *s, int i, double x0, double y0, double x1, double y1);
/* Node under (x, y) in layout coordinates, or -1; then the innermost
 * cluster under it in *cluster (or -1). Hidden nodes do not count. */
int           pl_graph_scene_hit  (const PlGraphScene *s, double x, double y, int *cluster);

/* Draws the part of the scene inside [x0, x1] × [y0, y1] (layout
 * coordinates; cr's transform maps layout coordinates to the target).
 * zoom = target pixels per layout unit decides the level of detail: below
 * about 0.45 no text, below 0.2 plain boxes and straight edges batched by
 * colour. */
void          pl_graph_scene_draw (const PlGraphScene *s, cairo_t *cr,
                                   double x0, double y0, double x1, double y1, double zoom);

/* The colour edges carrying a value in layout are drawn in (r, g, b in 0..1;
 * the default layout has the plain edge colour). */
void          pl_graph_layout_colour (PlLayout layout, double *r, double *g, double *b);
/* Which non-default layouts the shown version's edges carry (bit 1 << layout)
 * and whether it has LayoutTransform nodes: what a legend must explain. */
guint         pl_graph_scene_layouts_shown (const PlGraphScene *s, bool *transforms);
/* A small legend of the layout colours and the transform shape, with its
 * bottom-right corner at (x, y) in cr's units (widget pixels); nothing when
 * the shown version has no layouts. */
void          pl_graph_scene_draw_legend (const PlGraphScene *s, cairo_t *cr, double x, double y);

/* Writes [x, x+w] × [y, y+h] of the scene to path as PNG or SVG (by
 * extension) at scale (pixels per layout unit; a PNG is scaled down to stay
 * under 16,384 pixels a side and 64 megapixels). SVG files carry an
 * invisible text layer with the node names so they can be searched. */
bool          pl_graph_scene_export (const PlGraphScene *s, const char *path,
                                     double x, double y, double w, double h, double scale,
                                     GError **error);

G_END_DECLS

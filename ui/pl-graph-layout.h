/* pl-graph-layout.h — Graphviz `dot` layout of one graph version, or of
 * the union of several versions (so positions stay put while a person steps
 * through a pass history), with geometry copied out of cgraph into plain
 * structs keyed by our own stable keys. No GTK here: it runs in a worker
 * thread and is testable headless. Sketches (what versions show, below)
 * live in pl-graph-sketch.c; the Graphviz part, and the bands big graphs
 * are cut into, in pl-graph-layout.c.
 *
 * Keys: "n<id>" a node, "i<value id>" a graph input, "c<value id>" a
 * constant, "o<index>" a graph output, "n<fusion id>/n<id>" a node inside a
 * fusion body (nesting repeats the prefix).
 */
#pragma once

#include <gio/gio.h>

#include "graph.h"

G_BEGIN_DECLS

/* Text sizes (points = pixels at zoom 1) the canvas draws with; the layout
 * sizes boxes from them with a fixed average character width per size. */
#define PL_LAYOUT_TITLE_SIZE     11.0  /* node name, bold */
#define PL_LAYOUT_SUBTITLE_SIZE   9.0  /* op type */
#define PL_LAYOUT_SMALL_SIZE      8.5  /* pills (inputs, constants, outputs) and their type */
#define PL_LAYOUT_EDGE_LABEL_SIZE 7.5  /* "f32[2, 64]" on edges */

typedef enum {
  PL_LAYOUT_NODE_OP,
  PL_LAYOUT_NODE_INPUT,
  PL_LAYOUT_NODE_CONSTANT,
  PL_LAYOUT_NODE_OUTPUT,
  PL_LAYOUT_NODE_FUSION,     /* a collapsed fusion node */
} PlLayoutNodeKind;

typedef struct {
  char             *key;
  PlLayoutNodeKind  kind;
  guint32           id;          /* node id, or value id, or output index */
  double            x, y;        /* centre, in points, y down, origin at the top-left of the layout */
  double            width, height;
  char             *title;       /* node name / value name */
  char             *subtitle;    /* op type, or dtype+shape */
  PlOpCategory      category;
  int               cluster;     /* index into clusters, or -1 */
  char             *detail;      /* a third line, or NULL: a conv's "NHWC · direct 8×4×16",
                                  * a LayoutTransform's "→ NHWC" */
  PlLayout          data_layout; /* the layout the detail speaks of (colours it) */
  bool              transform;   /* a LayoutTransform: its own shape and colour */
} PlLayoutNode;

typedef struct {
  int     from, to;              /* indices into nodes */
  double *points;                /* cubic bezier: 1 + 3k points, (x, y) pairs, y down */
  int     n_points;
  bool    has_arrow;
  double  arrow_x, arrow_y;      /* arrow tip */
  char   *label;                 /* "f32[2, 64]" ("f32[1, 64, 56, 56] @NHWC") */
  double  label_x, label_y;
  bool    control;               /* a control edge (dashed) */
  PlLayout data_layout;          /* of the value carried (NCHW: the default) */
} PlLayoutEdge;

typedef struct {
  char   *key;                   /* the fusion node's key */
  double  x, y, width, height;   /* bounding box, top-left origin */
  char   *title;
  int     parent;                /* enclosing cluster or -1 */
} PlLayoutCluster;

typedef struct {
  gint             ref_count;
  PlLayoutNode    *nodes;
  int              n_nodes;
  PlLayoutEdge    *edges;
  int              n_edges;
  PlLayoutCluster *clusters;
  int              n_clusters;
  double           width, height;
  GHashTable      *index;        /* key -> GINT_TO_POINTER (node index + 1) */
  double           seconds;      /* time the layout took */
  bool             simplified;   /* large graph: cheaper ranking, no edge labels */
  /* Added: what the canvas needs to map a graph version onto this layout. */
  GHashTable      *collapsed;    /* fusion keys drawn as one box here (owned set) */
  bool             show_constants;
  int              n_sketch_nodes; /* drawable entries before collapsing */
  int              n_bands;      /* bands laid out separately (1: one dot run) */
} PlGraphLayout;

typedef struct {
  GHashTable *collapsed;       /* fusion node keys drawn as one box (NULL: all expanded) */
  bool        show_constants;  /* constants as their own boxes (default true; false hides small ones) */
  bool        left_to_right;   /* rankdir LR instead of TB */
  int         simplify_above;  /* more nodes than this: simplified layout (default 2000) */
  /* Added: in a simplified layout every fusion is collapsed except these
   * (NULL: none), so a person can still open one. */
  GHashTable *expanded;
  /* Big graphs are laid out in bands of about this many boxes (0: the
   * default, 400); see pl-graph-layout.c. */
  int         band_boxes;
  /* Called from the layout's thread after each band with the fraction done. */
  void      (*progress) (double fraction, gpointer data);
  gpointer    progress_data;
} PlLayoutOptions;

void            pl_layout_options_init (PlLayoutOptions *o);
/* Lays out the union of graphs[0..n) (one graph: just it). Blocking; checks
 * cancellable between phases. Error when Graphviz fails (its message). */
PlGraphLayout  *pl_graph_layout_compute (const PlGraph *const *graphs, int n_graphs,
                                         const PlLayoutOptions *options, GCancellable *cancellable,
                                         GError **error);
PlGraphLayout  *pl_graph_layout_ref     (PlGraphLayout *l);
void            pl_graph_layout_unref   (PlGraphLayout *l);
int             pl_graph_layout_find    (const PlGraphLayout *l, const char *key); /* -1 if absent */

/* --- sketches ----------------------------------------------------------------
 * What graph versions show, before any geometry: every drawable node (by
 * key, with its texts) and every edge, fully expanded. A fusion with body
 * nodes has an entry of kind FUSION that the body's entries name as parent;
 * edges run between leaves (into and out of bodies), except control edges,
 * which may name a fusion entry. Built on the main thread from the graphs
 * (cheap, and the graphs may be freed afterwards); the layout thread and the
 * canvas apply a collapse set to it. The union of several versions holds
 * every key of every version, with the texts of the latest one. */
typedef struct {
  char             *key;
  PlLayoutNodeKind  kind;
  guint32           id;
  char             *title;
  char             *subtitle;
  PlOpCategory      category;
  int               parent;      /* enclosing fusion entry, or -1 */
  bool              has_body;    /* a fusion with body nodes: a cluster when expanded */
  double            width, height; /* box size for the widest text of any version */
  char             *detail;      /* as in PlLayoutNode */
  PlLayout          data_layout;
  bool              transform;
} PlSketchNode;

typedef struct {
  int   from, to;                /* indices into nodes */
  char *label;                   /* "f32[2, 64]" (" @NHWC" appended for a non-default
                                  * layout), or the control kind */
  bool  control;
  PlLayout data_layout;          /* of the value carried */
} PlSketchEdge;

typedef struct {
  gint          ref_count;
  GArray       *nodes;           /* PlSketchNode */
  GArray       *edges;           /* PlSketchEdge */
  GHashTable   *index;           /* key -> GINT_TO_POINTER (node index + 1) */
} PlGraphSketch;

/* show_constants false leaves out constants of at most 16 elements (scalars,
 * shape vectors): they clutter big graphs and say little. */
PlGraphSketch *pl_graph_sketch_new       (const PlGraph *const *graphs, int n_graphs,
                                          bool show_constants);
PlGraphSketch *pl_graph_sketch_ref       (PlGraphSketch *s);
void           pl_graph_sketch_unref     (PlGraphSketch *s);
int            pl_graph_sketch_find      (const PlGraphSketch *s, const char *key); /* -1 if absent */
/* The entry that stands for entry i when the fusions in collapsed are drawn
 * as one box: i itself, or its outermost collapsed ancestor. */
int            pl_graph_sketch_visible   (const PlGraphSketch *s, int i, GHashTable *collapsed);
/* Keys of the fusions options collapse in s (taking simplification into
 * account); sets *simplified. A new set of char* keys. */
GHashTable    *pl_graph_sketch_collapsed (const PlGraphSketch *s, const PlLayoutOptions *options,
                                          bool *simplified);
/* The layout of a sketch (what pl_graph_layout_compute does after sketching).
 * Safe to call from any thread; Graphviz calls are serialized internally. */
PlGraphLayout *pl_graph_layout_compute_sketch (PlGraphSketch *s, const PlLayoutOptions *options,
                                               GCancellable *cancellable, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PlGraphLayout, pl_graph_layout_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (PlGraphSketch, pl_graph_sketch_unref)

G_END_DECLS

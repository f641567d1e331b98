/* pl-graph-canvas-private.h — what the files of PlGraphCanvas share: the
 * widget's struct and the few calls one part makes into another. Only the
 * pl-graph-canvas*.c files include it.
 *
 *   pl-graph-canvas.c        the widget: lifecycle, the snapshot and its
 *                            cached drawing, size, export
 *   pl-graph-canvas-scene.c  what is shown: the layout, the version and its
 *                            diff, selection, annotations, search
 *   pl-graph-canvas-input.c  the view (zoom, pan, fit) and the input that
 *                            moves it: gestures, scrolling, keys, hover,
 *                            tooltips
 *   pl-graph-canvas-jobs.c   layouts in a worker thread, the busy overlay,
 *                            fusions collapsed and expanded */
#pragma once

#include "pl-graph-canvas.h"
#include "pl-graph-draw.h"

G_BEGIN_DECLS

struct _PlGraphCanvas {
  GtkWidget        parent_instance;

  PlGraphLayout   *layout;
  PlGraphScene    *scene;
  PlGraphSketch   *shown;           /* the version on screen, and its predecessor */
  PlGraphSketch   *prev;
  GHashTable      *changed_ids;     /* node ids the diff says changed */
  bool             has_diff;
  GHashTable      *annotations;     /* key -> text, kept across layouts */
  char            *selected_key;

  /* view */
  double           zoom, ox, oy;
  bool             view_set;
  double           drag_ox, drag_oy, pinch_zoom;
  double           pointer_x, pointer_y;
  bool             pointer_in;
  gint64           draw_us;

  /* the drawn scene around the view: valid for one zoom and content */
  cairo_surface_t *cache;
  GdkTexture      *cache_texture;   /* the same pixels, made on demand for GL renderers */
  bool             cache_valid;
  double           cache_x, cache_y, cache_w, cache_h;  /* layout units */
  double           cache_zoom;
  int              cache_scale;

  /* layouts of our own */
  PlGraphSketch   *source;          /* the union sketch of the last layout_async */
  PlLayoutOptions  options;         /* with owned collapsed / expanded sets */
  GCancellable    *cancellable;
  guint            serial;
  gint            *progress;        /* permille, shared with the running task */
  gint64           busy_since;
  guint            busy_timer;
  GtkWidget       *busy_box, *busy_label;
  char            *message;         /* shown when there is nothing to draw */
};

enum { SIGNAL_SELECTION_CHANGED, SIGNAL_NODE_ACTIVATED, SIGNAL_LAYOUT_FINISHED, N_SIGNALS };
extern guint canvas_signals[N_SIGNALS];

/* pl-graph-canvas.c */
/* The content changed: the cached drawing is stale. */
void canvas_scene_changed   (PlGraphCanvas *self);
/* The text shown where there is no graph (NULL: the default). */
void canvas_set_message     (PlGraphCanvas *self, const char *message);

/* pl-graph-canvas-scene.c */
/* Shows a new layout (or none), keeping the view where it can. */
void canvas_install_layout  (PlGraphCanvas *self, PlGraphLayout *layout);
/* Centre of a key's box or cluster; false if the layout has neither. */
bool canvas_key_center      (PlGraphCanvas *self, const char *key, double *x, double *y);

/* pl-graph-canvas-input.c */
/* The view of a new graph. */
void     canvas_initial_view  (PlGraphCanvas *self);
void     canvas_input_init    (PlGraphCanvas *self);
gboolean canvas_query_tooltip (GtkWidget *widget, int wx, int wy, gboolean keyboard, GtkTooltip *tooltip);

/* pl-graph-canvas-jobs.c: the layout machinery's share of the widget's
 * lifecycle (options, the busy overlay, a running job). */
void canvas_jobs_init       (PlGraphCanvas *self);
void canvas_jobs_dispose    (PlGraphCanvas *self);
void canvas_jobs_finalize   (PlGraphCanvas *self);

G_END_DECLS

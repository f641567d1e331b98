/* pl-graph-draw-private.h — what the files drawing a PlGraphScene share: the
 * palette, the levels of detail, the shapes and the text machinery. Only
 * the pl-graph-draw*.c and pl-graph-scene.c files include it.
 *
 *   pl-graph-scene.c         the scene's state: which version it shows, diff
 *                            states, texts, hover, hit tests
 *   pl-graph-draw.c          the whole picture (level of detail, order),
 *                            shared shapes, clusters
 *   pl-graph-draw-nodes.c    boxes and pills, their colours and halos
 *   pl-graph-draw-edges.c    edge styles, routes and arrow heads
 *   pl-graph-draw-labels.c   fonts and text, annotation badges, edge labels
 *                            with their layout pills
 *   pl-graph-draw-legend.c   the legend of layout colours
 *   pl-graph-export.c        PNG and SVG files */
#pragma once

#include <pango/pangocairo.h>

#include "pl-graph-draw.h"

G_BEGIN_DECLS

#define LOD_TEXT    0.45   /* below: no text */
#define LOD_LABELS  0.7    /* below: no edge labels */
#define LOD_SIMPLE  0.2    /* below: batched boxes and straight edges */
#define CORNER      6.0

/* --- the palette ------------------------------------------------------------------ */

typedef struct { double r, g, b; } Rgb;

#define HEX(h) { ((h) >> 16 & 0xff) / 255.0, ((h) >> 8 & 0xff) / 255.0, ((h) & 0xff) / 255.0 }

/* Fill and border per PlOpCategory. */
static const Rgb cat_fill[PL_CAT_COUNT] = {
  [PL_CAT_ELEMENTWISE] = HEX (0xd7eaf8),  /* sky blue */
  [PL_CAT_BROADCAST]   = HEX (0xe6def4),  /* lilac */
  [PL_CAT_REDUCE]      = HEX (0xfde4c3),  /* orange */
  [PL_CAT_SHAPE]       = HEX (0xd3eee3),  /* bluish green */
  [PL_CAT_COMPUTE]     = HEX (0xf8d2c2),  /* vermillion */
  [PL_CAT_MEMORY]      = HEX (0xf8f1b8),  /* yellow */
  [PL_CAT_CONTROL]     = HEX (0xf3dbe9),  /* reddish purple */
  [PL_CAT_FUSION]      = HEX (0xe6e9f0),  /* slate */
  [PL_CAT_OPAQUE]      = HEX (0xe3e3e3),  /* grey */
};
static const Rgb cat_border[PL_CAT_COUNT] = {
  [PL_CAT_ELEMENTWISE] = HEX (0x4a9bd1),
  [PL_CAT_BROADCAST]   = HEX (0x8e74c4),
  [PL_CAT_REDUCE]      = HEX (0xd48a00),
  [PL_CAT_SHAPE]       = HEX (0x2a9a74),
  [PL_CAT_COMPUTE]     = HEX (0xc8561c),
  [PL_CAT_MEMORY]      = HEX (0xb9a800),
  [PL_CAT_CONTROL]     = HEX (0xb8679a),
  [PL_CAT_FUSION]      = HEX (0x66708a),
  [PL_CAT_OPAQUE]      = HEX (0x8a8a8a),
};

static const Rgb c_text = HEX (0x1e1e1e), c_subtext = HEX (0x5a5a5a), c_edge = HEX (0x8c8c8c),
                 c_edge_const = HEX (0xbdbdbd), c_control = HEX (0xc01c28), c_ghost = HEX (0x9a9a9a),
                 c_added = HEX (0x26a269), c_changed = HEX (0xe5a50a), c_select = HEX (0x1c71d8),
                 c_lit_in = HEX (0xe66100), c_lit_out = HEX (0x5e3c99), c_cluster = HEX (0xf4f5f8),
                 c_cluster_border = HEX (0xa3a9b8), c_badge = HEX (0x3d3846);

/* Per PlLayout: the edge colour (NCHW: the plain edge's) and a light tint
 * for the fill of the transform that makes it. */
G_STATIC_ASSERT (PL_LAYOUT_COUNT == 3);
static const Rgb layout_line[PL_LAYOUT_COUNT] = {
  [PL_LAYOUT_NCHW] = HEX (0x8c8c8c),
  [PL_LAYOUT_NHWC] = HEX (0x00897b),  /* teal (Okabe–Ito bluish green, darker) */
  [PL_LAYOUT_CHWN] = HEX (0xb0528f),  /* reddish purple */
};
static const Rgb layout_tint[PL_LAYOUT_COUNT] = {
  [PL_LAYOUT_NCHW] = HEX (0xeeeeee),
  [PL_LAYOUT_NHWC] = HEX (0xcdeee9),
  [PL_LAYOUT_CHWN] = HEX (0xf3d9ea),
};

static inline void
set_rgb (cairo_t *cr, Rgb c, double alpha)
{
  cairo_set_source_rgba (cr, c.r, c.g, c.b, alpha);
}

/* A stored layout byte as a PlLayout (anything unknown: the default). */
static inline PlLayout
layout_index (guint8 layout)
{
  return layout < PL_LAYOUT_COUNT ? (PlLayout) layout : PL_LAYOUT_NCHW;
}

static inline PlOpCategory
category_of (const PlLayoutNode *n)
{
  return n->category < PL_CAT_COUNT ? n->category : PL_CAT_OPAQUE;
}

/* --- pl-graph-draw.c: shapes ------------------------------------------------------ */

void pl_draw_rounded_rect (cairo_t *cr, double x, double y, double w, double h, double r);
/* A box with pointed left and right ends: a LayoutTransform. */
void pl_draw_hexagon      (cairo_t *cr, double x, double y, double w, double h);

/* --- pl-graph-draw-labels.c: text ------------------------------------------------- */

/* One Pango layout and the fonts of a picture, made once per draw. */
typedef struct {
  PangoLayout          *layout;
  PangoFontDescription *title, *subtitle, *small, *small_bold, *edge, *edge_bold, *cluster;
} PlDrawText;

PangoFontDescription *pl_draw_font (double size, PangoWeight weight);
void   pl_draw_text_init  (PlDrawText *t, cairo_t *cr);
void   pl_draw_text_clear (PlDrawText *t);
/* Sets the text of t's layout (len bytes of s, -1: all) at its natural
 * width; returns its width and puts its height in *h. */
double pl_draw_set_text   (PlDrawText *t, PangoFontDescription *fd, const char *s, int len, double *h);
/* Shows text centred on (cx, cy) — or left-aligned at cx when left — at most
 * max_w wide (ellipsized in the middle); gives back its logical size. */
void   pl_draw_show_text  (cairo_t *cr, PlDrawText *t, const char *s, PangoFontDescription *fd, double cx,
                           double cy, double max_w, bool left, double *out_w, double *out_h);
/* An annotation in a dark pill on node n's top-right corner. */
void   pl_draw_badge      (cairo_t *cr, PlDrawText *t, const PlLayoutNode *n, const char *text);
/* The labels of the visible edges, over everything else. */
void   pl_draw_edge_labels (const PlGraphScene *s, cairo_t *cr, PlDrawText *t, double x0, double y0, double x1,
                            double y1);

/* --- pl-graph-draw-nodes.c, pl-graph-draw-edges.c --------------------------------- */

/* Whether n, with its halo, meets [x0, x1] × [y0, y1]. */
bool pl_draw_node_visible (const PlLayoutNode *n, double x0, double y0, double x1, double y1);
void pl_draw_node         (const PlGraphScene *s, cairo_t *cr, PlDrawText *t, int i, double zoom);
/* Far out: boxes as plain rectangles batched by colour, and the halos. */
void pl_draw_nodes_simple (const PlGraphScene *s, cairo_t *cr, double x0, double y0, double x1, double y1,
                           double zoom);
/* The visible edges batched by style; simple: straight, without arrows. */
void pl_draw_edges        (const PlGraphScene *s, cairo_t *cr, double x0, double y0, double x1, double y1,
                           double zoom, bool simple);

G_END_DECLS

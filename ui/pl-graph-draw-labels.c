/* pl-graph-draw-labels.c — text on the picture: the fonts (absolute sizes
 * in layout units, unhinted so text scales smoothly with the zoom), text
 * centred or left-aligned and ellipsized to a width, a node's annotation in
 * a dark pill on its corner, and edge labels ("f32[1, 64, 56, 56]" in grey,
 * then a non-default layout's name in white on a pill of its colour),
 * haloed in the background so they read over edges. */
#define G_LOG_DOMAIN "passlab"

#include "pl-graph-draw-private.h"

#include <string.h>

PangoFontDescription *
pl_draw_font (double size, PangoWeight weight)
{
  PangoFontDescription *d = pango_font_description_from_string ("Sans");
  pango_font_description_set_absolute_size (d, size * PANGO_SCALE);
  pango_font_description_set_weight (d, weight);
  return d;
}

void
pl_draw_text_init (PlDrawText *t, cairo_t *cr)
{
  t->layout = pango_cairo_create_layout (cr);
  /* Metrics that scale smoothly with the zoom (no hinting jumps). */
  cairo_font_options_t *fo = cairo_font_options_create ();
  cairo_font_options_set_hint_metrics (fo, CAIRO_HINT_METRICS_OFF);
  cairo_font_options_set_hint_style (fo, CAIRO_HINT_STYLE_NONE);
  pango_cairo_context_set_font_options (pango_layout_get_context (t->layout), fo);
  cairo_font_options_destroy (fo);
  pango_layout_context_changed (t->layout);
  t->title = pl_draw_font (PL_LAYOUT_TITLE_SIZE, PANGO_WEIGHT_BOLD);
  t->subtitle = pl_draw_font (PL_LAYOUT_SUBTITLE_SIZE, PANGO_WEIGHT_NORMAL);
  t->small = pl_draw_font (PL_LAYOUT_SMALL_SIZE, PANGO_WEIGHT_NORMAL);
  t->small_bold = pl_draw_font (PL_LAYOUT_SMALL_SIZE, PANGO_WEIGHT_BOLD);
  t->edge = pl_draw_font (PL_LAYOUT_EDGE_LABEL_SIZE, PANGO_WEIGHT_NORMAL);
  t->edge_bold = pl_draw_font (PL_LAYOUT_EDGE_LABEL_SIZE, PANGO_WEIGHT_BOLD);
  t->cluster = pl_draw_font (10.0, PANGO_WEIGHT_BOLD);
}

void
pl_draw_text_clear (PlDrawText *t)
{
  g_object_unref (t->layout);
  pango_font_description_free (t->title);
  pango_font_description_free (t->subtitle);
  pango_font_description_free (t->small);
  pango_font_description_free (t->small_bold);
  pango_font_description_free (t->edge);
  pango_font_description_free (t->edge_bold);
  pango_font_description_free (t->cluster);
}

double
pl_draw_set_text (PlDrawText *t, PangoFontDescription *fd, const char *s, int len, double *h)
{
  PangoRectangle r;
  pango_layout_set_font_description (t->layout, fd);
  pango_layout_set_width (t->layout, -1);
  pango_layout_set_text (t->layout, s, len);
  pango_layout_get_extents (t->layout, NULL, &r);
  *h = (double) r.height / PANGO_SCALE;
  return (double) r.width / PANGO_SCALE;
}

void
pl_draw_show_text (cairo_t *cr, PlDrawText *t, const char *s, PangoFontDescription *fd, double cx, double cy,
                   double max_w, bool left, double *out_w, double *out_h)
{
  double h, w = pl_draw_set_text (t, fd, s != NULL ? s : "", -1, &h);
  if (max_w > 0 && w > max_w)
    {
      pango_layout_set_width (t->layout, (int) (max_w * PANGO_SCALE));
      pango_layout_set_ellipsize (t->layout, PANGO_ELLIPSIZE_MIDDLE);
      w = max_w;
    }
  cairo_move_to (cr, left ? cx : cx - w / 2, cy - h / 2);
  pango_cairo_show_layout (cr, t->layout);
  if (out_w != NULL)
    *out_w = w;
  if (out_h != NULL)
    *out_h = h;
}

void
pl_draw_badge (cairo_t *cr, PlDrawText *t, const PlLayoutNode *n, const char *text)
{
  double th, tw = pl_draw_set_text (t, t->edge, text, -1, &th);
  double w = tw + 8, h = th + 2;
  double x = n->x + n->width / 2 - w + 4, y = n->y - n->height / 2 - h / 2 - 1;
  pl_draw_rounded_rect (cr, x, y, w, h, h / 2);
  set_rgb (cr, c_badge, 0.92);
  cairo_fill (cr);
  cairo_set_source_rgb (cr, 1, 1, 1);
  cairo_move_to (cr, x + 4, y + 1);
  pango_cairo_show_layout (cr, t->layout);
}

/* label in grey, then for a non-default layout its name in white on the
 * layout's colour (the sketch's " @NHWC" suffix, or alone where the layout
 * has no labels). */
static void
draw_edge_label (const PlGraphScene *s, cairo_t *cr, PlDrawText *t, int i, const char *label)
{
  const PlLayoutEdge *e = &s->layout->edges[i];
  PlLayout lay = layout_index (s->edge_layout[i]);
  const char *suffix = lay != PL_LAYOUT_NCHW ? pl_layout_name (lay) : NULL;
  int len = label != NULL ? (int) strlen (label) : 0;
  const char *at = suffix != NULL && label != NULL ? g_strrstr (label, " @") : NULL;
  if (at != NULL)
    len = (int) (at - label);
  double h = 0, hs = 0;
  double wp = len > 0 ? pl_draw_set_text (t, t->edge, label, len, &h) : 0;
  double ws = suffix != NULL ? pl_draw_set_text (t, t->edge_bold, suffix, -1, &hs) + 6 : 0;
  double gap = wp > 0 && ws > 0 ? 3 : 0, w = wp + gap + ws;
  h = MAX (h, hs);
  double x = e->label_x - w / 2, y = e->label_y - h / 2;
  /* A halo of the background keeps labels readable over edges. */
  pl_draw_rounded_rect (cr, x - 1.5, y, w + 3, h, 2);
  cairo_set_source_rgba (cr, PL_GRAPH_BACKGROUND, 0.8);
  cairo_fill (cr);
  if (wp > 0)
    {
      pl_draw_set_text (t, t->edge, label, len, &h);
      set_rgb (cr, s->edge_lit[i] ? c_subtext : c_ghost, s->edge_state[i] == PL_DRAW_REMOVED ? 0.5 : 1.0);
      cairo_move_to (cr, x, e->label_y - h / 2);
      pango_cairo_show_layout (cr, t->layout);
    }
  if (suffix != NULL)
    {
      double xs = x + wp + gap;
      pl_draw_rounded_rect (cr, xs, e->label_y - hs / 2 - 0.5, ws, hs + 1, (hs + 1) / 2);
      set_rgb (cr, layout_line[lay], 1.0);
      cairo_fill (cr);
      pl_draw_set_text (t, t->edge_bold, suffix, -1, &hs);
      cairo_set_source_rgb (cr, 1, 1, 1);
      cairo_move_to (cr, xs + 3, e->label_y - hs / 2);
      pango_cairo_show_layout (cr, t->layout);
    }
}

void
pl_draw_edge_labels (const PlGraphScene *s, cairo_t *cr, PlDrawText *t, double x0, double y0, double x1,
                     double y1)
{
  const PlGraphLayout *l = s->layout;
  for (int i = 0; i < l->n_edges; i++)
    {
      const PlLayoutEdge *e = &l->edges[i];
      const char *label = s->edge_label[i] != NULL ? s->edge_label[i] : e->label;
      if ((label == NULL && s->edge_layout[i] == PL_LAYOUT_NCHW) || s->edge_state[i] == PL_DRAW_HIDDEN
          || e->label_x < x0 - 60 || e->label_x > x1 + 60 || e->label_y < y0 - 10 || e->label_y > y1 + 10)
        continue;
      draw_edge_label (s, cr, t, i, label);
    }
}

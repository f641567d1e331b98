/* pl-graph-draw-edges.c — the edges of a scene: dot's bezier routes (far
 * out, straight lines) with arrow heads, styled by what they carry (data,
 * a constant, control, data in a non-default layout), by the diff (removed:
 * a dashed ghost) and by hover (a hovered node's inputs and outputs), and
 * batched into one stroke and one arrow fill per style. Their labels:
 * pl-graph-draw-labels.c. */
#define G_LOG_DOMAIN "passlab"

#include "pl-graph-draw-private.h"

#include <math.h>

/* STYLE_NHWC, STYLE_CHWN: data in that layout (STYLE_DATA - 1 + layout). */
typedef enum { STYLE_DATA, STYLE_NHWC, STYLE_CHWN, STYLE_CONST, STYLE_CONTROL, STYLE_GHOST, STYLE_IN, STYLE_OUT,
               N_STYLES } EdgeStyle;
G_STATIC_ASSERT (STYLE_DATA + PL_LAYOUT_NHWC == STYLE_NHWC && STYLE_DATA + PL_LAYOUT_CHWN == STYLE_CHWN);

static EdgeStyle
edge_style (const PlGraphScene *s, int i)
{
  const PlLayoutEdge *e = &s->layout->edges[i];
  if (s->edge_lit[i] & PL_LIT_INPUT)
    return STYLE_IN;
  if (s->edge_lit[i] & PL_LIT_OUTPUT)
    return STYLE_OUT;
  if (s->edge_state[i] == PL_DRAW_REMOVED)
    return STYLE_GHOST;
  if (e->control)
    return STYLE_CONTROL;
  if (s->edge_layout[i] != PL_LAYOUT_NCHW)
    return STYLE_DATA + layout_index (s->edge_layout[i]);
  if (s->layout->nodes[e->from].kind == PL_LAYOUT_NODE_CONSTANT)
    return STYLE_CONST;
  return STYLE_DATA;
}

static void
style_stroke (cairo_t *cr, EdgeStyle st, double zoom)
{
  static const double dash[] = { 5.0, 3.0 };
  double px = 1.0 / zoom;
  cairo_set_dash (cr, NULL, 0, 0);
  switch (st)
    {
    case STYLE_IN:      set_rgb (cr, c_lit_in, 1.0);  cairo_set_line_width (cr, MAX (2.2, 2 * px)); break;
    case STYLE_OUT:     set_rgb (cr, c_lit_out, 1.0); cairo_set_line_width (cr, MAX (2.2, 2 * px)); break;
    case STYLE_GHOST:   set_rgb (cr, c_ghost, 0.8);   cairo_set_line_width (cr, 1.0);
                        cairo_set_dash (cr, dash, 2, 0); break;
    case STYLE_CONTROL: set_rgb (cr, c_control, 0.9); cairo_set_line_width (cr, 1.2);
                        cairo_set_dash (cr, dash, 2, 0); break;
    case STYLE_CONST:   set_rgb (cr, c_edge_const, 1.0); cairo_set_line_width (cr, MAX (1.0, 0.6 * px)); break;
    case STYLE_NHWC:
    case STYLE_CHWN:    set_rgb (cr, layout_line[st - STYLE_DATA], 1.0);
                        cairo_set_line_width (cr, MAX (2.0, 1.5 * px)); break;
    case STYLE_DATA:
    case N_STYLES:
    default:            set_rgb (cr, c_edge, 1.0);    cairo_set_line_width (cr, MAX (1.2, 0.8 * px)); break;
    }
}

/* Whether edge i is shown in this style and its bounding box meets the
 * rectangle. */
static bool
edge_drawn (const PlGraphScene *s, int i, int style, double x0, double y0, double x1, double y1)
{
  const float *bb = &s->edge_bbox[4 * i];
  return s->edge_state[i] != PL_DRAW_HIDDEN && bb[2] >= x0 && bb[0] <= x1 && bb[3] >= y0 && bb[1] <= y1
         && (int) edge_style (s, i) == style;
}

static void
arrow_path (cairo_t *cr, const PlLayoutEdge *e, double size)
{
  int last = e->n_points - 1;
  double bx = e->points[2 * last], by = e->points[2 * last + 1];
  double tx = e->arrow_x, ty = e->arrow_y;
  if (!e->has_arrow)
    {
      /* No arrow from dot: a small one pointing along the last piece. */
      tx = bx;
      ty = by;
      double px = e->points[2 * (last - 1)], py = e->points[2 * (last - 1) + 1];
      double d = hypot (tx - px, ty - py);
      if (d < 1e-6)
        return;
      bx = tx - (tx - px) / d * size;
      by = ty - (ty - py) / d * size;
    }
  double dx = tx - bx, dy = ty - by, d = hypot (dx, dy);
  if (d < 1e-6)
    return;
  double nx = -dy / d * d * 0.4, ny = dx / d * d * 0.4;
  cairo_move_to (cr, tx, ty);
  cairo_line_to (cr, bx + nx, by + ny);
  cairo_line_to (cr, bx - nx, by - ny);
  cairo_close_path (cr);
}

void
pl_draw_edges (const PlGraphScene *s, cairo_t *cr, double x0, double y0, double x1, double y1, double zoom,
               bool simple)
{
  const PlGraphLayout *l = s->layout;
  for (int st = 0; st < N_STYLES; st++)
    {
      bool any = false;
      for (int i = 0; i < l->n_edges; i++)
        {
          if (!edge_drawn (s, i, st, x0, y0, x1, y1))
            continue;
          const PlLayoutEdge *e = &l->edges[i];
          any = true;
          cairo_move_to (cr, e->points[0], e->points[1]);
          if (simple)
            {
              int last = e->n_points - 1;
              cairo_line_to (cr, e->points[2 * last], e->points[2 * last + 1]);
              continue;
            }
          for (int k = 1; k + 2 < e->n_points; k += 3)
            cairo_curve_to (cr, e->points[2 * k], e->points[2 * k + 1], e->points[2 * k + 2],
                            e->points[2 * k + 3], e->points[2 * k + 4], e->points[2 * k + 5]);
        }
      if (!any)
        continue;
      style_stroke (cr, st, zoom);
      cairo_stroke (cr);
      if (simple)
        continue;
      for (int i = 0; i < l->n_edges; i++)
        if (edge_drawn (s, i, st, x0, y0, x1, y1))
          arrow_path (cr, &l->edges[i], 7.0);
      cairo_set_dash (cr, NULL, 0, 0);
      cairo_fill (cr);
    }
}

/* pl-graph-draw-nodes.c — the nodes of a scene: op boxes (rounded, or a
 * hexagon for a LayoutTransform), collapsed fusions with a double border,
 * input / constant / output pills, each with its colours, texts and halo
 * (diff state, selection, hover neighbourhood); and far out, all boxes as
 * plain rectangles batched into one fill per colour. */
#define G_LOG_DOMAIN "passlab"

#include "pl-graph-draw-private.h"

bool
pl_draw_node_visible (const PlLayoutNode *n, double x0, double y0, double x1, double y1)
{
  return n->x + n->width / 2 + 8 >= x0 && n->x - n->width / 2 - 8 <= x1
         && n->y + n->height / 2 + 12 >= y0 && n->y - n->height / 2 - 8 <= y1;
}

/* Inputs, constants and outputs are pills; ops and fusions boxes. */
static bool
is_pill (const PlLayoutNode *n)
{
  return n->kind != PL_LAYOUT_NODE_OP && n->kind != PL_LAYOUT_NODE_FUSION;
}

/* The path of node i's shape, grown by `grow` on every side. */
static void
node_path (cairo_t *cr, const PlGraphScene *s, int i, double grow)
{
  const PlLayoutNode *n = &s->layout->nodes[i];
  double x = n->x - n->width / 2 - grow, y = n->y - n->height / 2 - grow;
  double w = n->width + 2 * grow, h = n->height + 2 * grow;
  if (s->node_transform[i] && n->kind == PL_LAYOUT_NODE_OP)
    pl_draw_hexagon (cr, x, y, w, h);
  else
    pl_draw_rounded_rect (cr, x, y, w, h, is_pill (n) ? h / 2 : CORNER + grow);
}

static void
node_colors (const PlGraphScene *s, int i, Rgb *fill, Rgb *border)
{
  const PlLayoutNode *n = &s->layout->nodes[i];
  switch (n->kind)
    {
    case PL_LAYOUT_NODE_INPUT:    *fill = (Rgb) HEX (0xffffff); *border = (Rgb) HEX (0x6f7a8c); break;
    case PL_LAYOUT_NODE_CONSTANT: *fill = (Rgb) HEX (0xf3f3f3); *border = (Rgb) HEX (0xb5b5b5); break;
    case PL_LAYOUT_NODE_OUTPUT:   *fill = (Rgb) HEX (0xffffff); *border = (Rgb) HEX (0x3d3846); break;
    case PL_LAYOUT_NODE_OP:
    case PL_LAYOUT_NODE_FUSION:
    default:
      if (s->node_transform[i])
        {
          *fill = layout_tint[layout_index (s->node_layout[i])];
          *border = layout_line[layout_index (s->node_layout[i])];
          break;
        }
      *fill = cat_fill[category_of (n)];
      *border = cat_border[category_of (n)];
    }
}

/* An outline around the node: diff state, selection, hover neighbourhood. */
static void
node_halo (const PlGraphScene *s, cairo_t *cr, int i, double zoom)
{
  guint8 st = s->node_state[i];
  double px = 1.0 / zoom;  /* one screen pixel, so halos stay visible far out */
  if (st == PL_DRAW_ADDED || st == PL_DRAW_CHANGED)
    {
      Rgb c = st == PL_DRAW_ADDED ? c_added : c_changed;
      node_path (cr, s, i, MAX (4.0, 3 * px));
      set_rgb (cr, c, 0.28);
      cairo_fill (cr);
      node_path (cr, s, i, 1.0);
      set_rgb (cr, c, 1.0);
      cairo_set_line_width (cr, MAX (2.5, 2 * px));
      cairo_stroke (cr);
    }
  if (s->node_lit[i] != 0 && i != s->hover)
    {
      node_path (cr, s, i, 1.5);
      set_rgb (cr, (s->node_lit[i] & PL_LIT_INPUT) ? c_lit_in : c_lit_out, 1.0);
      cairo_set_line_width (cr, MAX (2.0, 2 * px));
      cairo_stroke (cr);
    }
  if (i == s->selected || i == s->hover)
    {
      node_path (cr, s, i, i == s->selected ? 2.5 : 1.5);
      set_rgb (cr, i == s->selected ? c_select : c_badge, i == s->selected ? 1.0 : 0.7);
      cairo_set_line_width (cr, MAX (i == s->selected ? 3.0 : 2.0, 2 * px));
      cairo_stroke (cr);
    }
}

/* Title, op (or a pill's type) and a box's third line, then its annotation. */
static void
node_texts (const PlGraphScene *s, cairo_t *cr, PlDrawText *t, int i, bool ghost)
{
  const PlLayoutNode *n = &s->layout->nodes[i];
  double alpha = ghost ? 0.55 : 1.0;
  double max_w = n->width - (s->node_transform[i] ? 18 : 10);
  bool box = !is_pill (n);
  const char *detail = box ? s->detail[i] : NULL;
  double up = detail != NULL ? 6.0 : 0.0;  /* room for the third line */
  set_rgb (cr, c_text, alpha);
  pl_draw_show_text (cr, t, pl_graph_scene_node_title (s, i), box ? t->title : t->small_bold, n->x,
                     n->y - (box ? 7.0 : 6.0) - up, max_w, false, NULL, NULL);
  set_rgb (cr, c_subtext, alpha);
  pl_draw_show_text (cr, t, pl_graph_scene_node_subtitle (s, i), box ? t->subtitle : t->small, n->x,
                     n->y + (box ? 8.0 : 6.5) - up, max_w, false, NULL, NULL);
  if (detail != NULL)
    {
      /* A default-layout detail (an NCHW conv's impl) in the plain text colour. */
      PlLayout lay = layout_index (s->node_layout[i]);
      set_rgb (cr, lay == PL_LAYOUT_NCHW ? c_subtext : layout_line[lay], alpha);
      pl_draw_show_text (cr, t, detail, t->small_bold, n->x, n->y + 20.0 - up, max_w, false, NULL, NULL);
    }
  if (s->annotation[i] != NULL && !ghost)
    pl_draw_badge (cr, t, n, s->annotation[i]);
}

void
pl_draw_node (const PlGraphScene *s, cairo_t *cr, PlDrawText *t, int i, double zoom)
{
  const PlLayoutNode *n = &s->layout->nodes[i];
  bool ghost = s->node_state[i] == PL_DRAW_REMOVED;
  Rgb fill, border;
  node_colors (s, i, &fill, &border);

  node_halo (s, cr, i, zoom);
  node_path (cr, s, i, 0);
  if (ghost)
    {
      cairo_set_source_rgba (cr, 1, 1, 1, 0.5);
      cairo_fill_preserve (cr);
      static const double dash[] = { 4.0, 3.0 };
      cairo_set_dash (cr, dash, 2, 0);
      set_rgb (cr, c_ghost, 1.0);
      cairo_set_line_width (cr, 1.2);
      cairo_stroke (cr);
      cairo_set_dash (cr, NULL, 0, 0);
    }
  else
    {
      set_rgb (cr, fill, 1.0);
      cairo_fill_preserve (cr);
      set_rgb (cr, border, 1.0);
      cairo_set_line_width (cr, n->kind == PL_LAYOUT_NODE_OUTPUT || s->node_transform[i] ? 2.0 : 1.0);
      if (category_of (n) == PL_CAT_OPAQUE && n->kind == PL_LAYOUT_NODE_OP)
        {
          static const double dash[] = { 3.0, 2.0 };
          cairo_set_dash (cr, dash, 2, 0);
        }
      cairo_stroke (cr);
      cairo_set_dash (cr, NULL, 0, 0);
      if (n->kind == PL_LAYOUT_NODE_FUSION)
        {
          /* A collapsed fusion: a second border says "there is more inside". */
          node_path (cr, s, i, -3.0);
          cairo_set_line_width (cr, 0.8);
          cairo_stroke (cr);
        }
    }
  if (zoom >= LOD_TEXT)
    node_texts (s, cr, t, i, ghost);
}

void
pl_draw_nodes_simple (const PlGraphScene *s, cairo_t *cr, double x0, double y0, double x1, double y1,
                      double zoom)
{
  const PlGraphLayout *l = s->layout;
  double min = 1.5 / zoom;  /* at least ~1.5 px, so a far overview still shows every node */
  for (int pass = 0; pass <= PL_CAT_COUNT + PL_LAYOUT_COUNT; pass++)
    {
      bool any = false;
      for (int i = 0; i < l->n_nodes; i++)
        {
          const PlLayoutNode *n = &l->nodes[i];
          guint8 st = s->node_state[i];
          if (!pl_graph_scene_node_visible (s, i, x0, y0, x1, y1))
            continue;
          /* Passes 0..COUNT-1: op categories; pass COUNT: pills and ghosts;
           * then one per layout: the transforms into it. */
          int want = is_pill (n) || st == PL_DRAW_REMOVED ? PL_CAT_COUNT
                     : s->node_transform[i] ? PL_CAT_COUNT + 1 + (int) layout_index (s->node_layout[i])
                                    : (int) category_of (n);
          if (want != pass)
            continue;
          double w = MAX (n->width, min), h = MAX (n->height, min);
          cairo_rectangle (cr, n->x - w / 2, n->y - h / 2, w, h);
          any = true;
        }
      if (!any)
        continue;
      if (pass == PL_CAT_COUNT)
        set_rgb (cr, c_ghost, 0.8);
      else if (pass > PL_CAT_COUNT)
        set_rgb (cr, layout_line[pass - PL_CAT_COUNT - 1], 1.0);
      else
        set_rgb (cr, cat_border[pass], 1.0);
      cairo_fill (cr);
    }
  /* Diff states, selection and hover still show far out. */
  for (int i = 0; i < l->n_nodes; i++)
    {
      const PlLayoutNode *n = &l->nodes[i];
      guint8 st = s->node_state[i];
      if ((st == PL_DRAW_NORMAL || st == PL_DRAW_HIDDEN || st == PL_DRAW_REMOVED)
          && i != s->selected && i != s->hover && s->node_lit[i] == 0)
        continue;
      if (pl_draw_node_visible (n, x0, y0, x1, y1))
        node_halo (s, cr, i, zoom);
    }
}

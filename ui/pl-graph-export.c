/* pl-graph-export.c — a scene as a PNG or SVG file, drawn by the same
 * pl_graph_scene_draw as the canvas, so a file looks like the view (see
 * pl_graph_scene_export in pl-graph-draw.h). */
#define G_LOG_DOMAIN "passlab"

#include "pl-graph-draw.h"

#include <cairo-svg.h>
#include <math.h>
#include <string.h>

/* The invisible, searchable text layer of an SVG: cairo writes glyphs as
 * paths, so without it no viewer could find a node by name. */
static char *
svg_text_layer (const PlGraphScene *s, double x, double y, double w, double h, double scale)
{
  const PlGraphLayout *l = s->layout;
  char sc[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd (sc, sizeof sc, "%.4f", scale);
  GString *out = g_string_new (NULL);
  g_string_append_printf (out, "<g id=\"passlab-text\" transform=\"scale(%s)\" fill=\"#000000\" "
                          "fill-opacity=\"0\" font-family=\"sans-serif\" font-size=\"9\">\n", sc);
  for (int i = 0; i < l->n_nodes; i++)
    {
      const PlLayoutNode *n = &l->nodes[i];
      if (!pl_graph_scene_node_visible (s, i, x, y, x + w, y + h))
        continue;
      g_autofree char *title = g_markup_escape_text (pl_graph_scene_node_title (s, i), -1);
      g_autofree char *sub = g_markup_escape_text (pl_graph_scene_node_subtitle (s, i) != NULL ? pl_graph_scene_node_subtitle (s, i) : "", -1);
      char bx[G_ASCII_DTOSTR_BUF_SIZE], by[G_ASCII_DTOSTR_BUF_SIZE];
      g_ascii_formatd (bx, sizeof bx, "%.1f", n->x - n->width / 2 + 4 - x);
      g_ascii_formatd (by, sizeof by, "%.1f", n->y - y);
      g_string_append_printf (out, "<text x=\"%s\" y=\"%s\"><title>%s %s</title>%s %s</text>\n",
                              bx, by, title, sub, title, sub);
    }
  g_string_append (out, "</g>\n");
  return g_string_free (out, FALSE);
}

static bool
svg_add_text_layer (const char *path, const char *layer, GError **error)
{
  g_autofree char *svg = NULL;
  gsize len = 0;
  if (!g_file_get_contents (path, &svg, &len, error))
    return false;
  char *end = g_strrstr (svg, "</svg>");
  if (end == NULL)
    return true;
  *end = '\0';
  g_autofree char *joined = g_strconcat (svg, layer, "</svg>\n", NULL);
  return g_file_set_contents (path, joined, -1, error);
}

bool
pl_graph_scene_export (const PlGraphScene *s, const char *path, double x, double y, double w,
                       double h, double scale, GError **error)
{
  g_return_val_if_fail (s != NULL && path != NULL, false);
  bool svg = g_str_has_suffix (path, ".svg") || g_str_has_suffix (path, ".SVG");
  bool png = g_str_has_suffix (path, ".png") || g_str_has_suffix (path, ".PNG");
  if (!svg && !png)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_IO, "cannot export %s: the name must end in .png or .svg", path);
      return false;
    }
  if (w <= 0 || h <= 0 || scale <= 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_IO, "cannot export %s: nothing to draw", path);
      return false;
    }
  if (png)
    {
      /* Cairo images are limited to 32,767 pixels a side; memory to less. */
      scale = MIN (scale, 16384.0 / MAX (w, h));
      scale = MIN (scale, sqrt (64e6 / (w * h)));
    }
  int pw = MAX (1, (int) ceil (w * scale)), ph = MAX (1, (int) ceil (h * scale));
  cairo_surface_t *surface = svg ? cairo_svg_surface_create (path, w * scale, h * scale)
                                 : cairo_image_surface_create (CAIRO_FORMAT_ARGB32, pw, ph);
  if (cairo_surface_status (surface) != CAIRO_STATUS_SUCCESS)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_IO, "cannot export %s: %s", path,
                   cairo_status_to_string (cairo_surface_status (surface)));
      cairo_surface_destroy (surface);
      return false;
    }
  cairo_t *cr = cairo_create (surface);
  cairo_set_source_rgb (cr, 1, 1, 1);
  cairo_paint (cr);
  cairo_scale (cr, scale, scale);
  cairo_translate (cr, -x, -y);
  /* Files get full detail where text is still legible at their scale. */
  pl_graph_scene_draw (s, cr, x, y, x + w, y + h, svg ? MAX (scale, 1.0) : scale);
  cairo_destroy (cr);
  cairo_status_t status = CAIRO_STATUS_SUCCESS;
  if (png)
    status = cairo_surface_write_to_png (surface, path);
  cairo_surface_finish (surface);
  if (status == CAIRO_STATUS_SUCCESS)
    status = cairo_surface_status (surface);
  cairo_surface_destroy (surface);
  if (status != CAIRO_STATUS_SUCCESS)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_IO, "cannot write %s: %s", path,
                   cairo_status_to_string (status));
      return false;
    }
  if (svg)
    {
      g_autofree char *layer = svg_text_layer (s, x, y, w, h, scale);
      return svg_add_text_layer (path, layer, error);
    }
  return true;
}

/* ops-vision.c — the ops detection and spatial-transformer models need:
 * NonMaxSuppression, RoiAlign, GridSample and MaxUnpool — their shape
 * inference and reference evaluation (ONNX semantics up to opset 17). No
 * backend generates them: they are COMPUTE ops the backends run through
 * the reference fallback.
 *
 * Each follows the ONNX reference implementation (onnx/reference/ops/
 * op_non_max_suppression.py, op_roi_align.py, op_grid_sample.py,
 * op_max_unpool.py), itself a port of onnxruntime's kernels, including
 * where those differ from the prose of the spec: RoiAlign's max mode takes
 * the largest weighted corner of each sample rather than the largest
 * interpolated value, and MaxUnpool's indices count into the unpooled
 * shape, which output_shape then pads at the end. Everything is computed
 * in double and stored in the output's dtype.
 *
 * NonMaxSuppression's output has a data-dependent first dim, unknown to
 * inference (as NonZero's and Compress's are).
 */
#define G_LOG_DOMAIN "passlab"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops-nn-private.h"
#include "ops-shape-private.h"

static const PlDType float_types[] = { PL_DTYPE_F32, PL_DTYPE_F16, PL_DTYPE_BF16, PL_DTYPE_F64, PL_DTYPE_UNDEFINED };
static const PlDType i64_only[] = { PL_DTYPE_I64, PL_DTYPE_UNDEFINED };

/* --- shape checks ------------------------------------------------------------------ */

/* Fails unless s has `rank` dims and dim k is want[k] wherever both are
 * known (want[k] < 0: any size); layout names the expected form in the
 * message. An unknown rank passes. */
static bool
check_shape (const PlShape *s, int rank, const int64_t *want, const char *what, const char *layout, GError **error)
{
  if (s->rank == PL_RANK_UNKNOWN)
    return true;
  bool ok = s->rank == rank;
  for (int k = 0; ok && want && k < rank; k++)
    ok = want[k] < 0 || !pl_dim_is_static (s->dims[k]) || s->dims[k].size == want[k];
  if (ok)
    return true;
  g_autofree char *str = pl_shape_to_string (s);
  g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "%s must be %s, not %s", what, layout, str);
  return false;
}

/* Fails when dim ka of a and dim kb of b are both static and differ. */
static bool
check_same_dim (const PlShape *a, int ka, const PlShape *b, int kb, const char *what, GError **error)
{
  if (a->rank <= ka || b->rank <= kb)
    return true;
  PlDim x = a->dims[ka], y = b->dims[kb];
  if (!pl_dim_is_static (x) || !pl_dim_is_static (y) || x.size == y.size)
    return true;
  g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "%s differ: %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT, what,
               x.size, y.size);
  return false;
}

/* The shape of input i, or an unknown shape when it is omitted. */
static PlShape
input_shape (const PlNode *node, int i)
{
  const PlValue *v = pl_input (node, i);
  return v ? v->shape : pl_shape_unknown ();
}

/* --- NonMaxSuppression ------------------------------------------------------------- */

/* boxes [B, N, 4], scores [B, C, N]; the optional max_output_boxes_per_class,
 * iou_threshold and score_threshold hold one value each (or none). */
static bool
nms_check (const PlNode *node, const PlShape *boxes, const PlShape *scores, GError **error)
{
  static const char *const scalars[] = { "max_output_boxes_per_class", "iou_threshold", "score_threshold" };
  int64_t cpb = pl_node_attr_int (node, "center_point_box", 0);

  if (cpb != 0 && cpb != 1)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "center_point_box must be 0 or 1, not %" G_GINT64_FORMAT,
                   cpb);
      return false;
    }
  if (!check_shape (boxes, 3, (const int64_t[]) { -1, -1, 4 }, "boxes", "[num_batches, boxes, 4]", error)
      || !check_shape (scores, 3, NULL, "scores", "[num_batches, classes, boxes]", error)
      || !check_same_dim (boxes, 0, scores, 0, "the batch sizes of boxes and scores", error)
      || !check_same_dim (boxes, 1, scores, 2, "the box counts of boxes and scores", error))
    return false;
  for (int i = 2; i < 5; i++)
    {
      PlShape s = input_shape (node, i);
      int64_t n = pl_shape_numel (&s);
      if (s.rank > 1 || n > 1)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "%s must hold one value", scalars[i - 2]);
          return false;
        }
    }
  return true;
}

static bool
nms_infer (PlNode *node, GError **error)
{
  PlShape out = { .rank = 2, .dims = { pl_dim_unknown (), pl_dim_static (3) } };

  if (!pl_require_dtype (node, 0, float_types, error) || !pl_require_dtype (node, 1, float_types, error)
      || (pl_input (node, 2) && !pl_require_dtype (node, 2, i64_only, error))
      || (pl_input (node, 3) && !pl_require_dtype (node, 3, float_types, error))
      || (pl_input (node, 4) && !pl_require_dtype (node, 4, float_types, error))
      || !nms_check (node, &pl_input (node, 0)->shape, &pl_input (node, 1)->shape, error))
    return false;
  pl_set_output (node, 0, PL_DTYPE_I64, &out);
  return true;
}

/* Box b's corners (x0, y0, x1, y1): from [y1, x1, y2, x2] in either
 * order, or from [x_center, y_center, width, height]. */
static void
box_corners (const double *b, bool center, double *c)
{
  if (center)
    {
      c[0] = b[0] - b[2] / 2;
      c[1] = b[1] - b[3] / 2;
      c[2] = b[0] + b[2] / 2;
      c[3] = b[1] + b[3] / 2;
      return;
    }
  c[0] = MIN (b[1], b[3]);
  c[1] = MIN (b[0], b[2]);
  c[2] = MAX (b[1], b[3]);
  c[3] = MAX (b[0], b[2]);
}

/* Whether box a suppresses box b: intersection over union above the
 * threshold. Boxes that do not overlap, or have no area, never do. */
static bool
suppresses (const double *a, const double *b, bool center, double iou_threshold)
{
  double ca[4], cb[4];

  box_corners (a, center, ca);
  box_corners (b, center, cb);
  double w = MIN (ca[2], cb[2]) - MAX (ca[0], cb[0]), h = MIN (ca[3], cb[3]) - MAX (ca[1], cb[1]);
  if (!(w > 0 && h > 0))
    return false;
  double inter = w * h, area_a = (ca[2] - ca[0]) * (ca[3] - ca[1]), area_b = (cb[2] - cb[0]) * (cb[3] - cb[1]);
  double uni = area_a + area_b - inter;
  if (!(area_a > 0 && area_b > 0 && uni > 0))
    return false;
  return inter / uni > iou_threshold;
}

typedef struct {
  double  score;
  int64_t box;
} Candidate;

/* Highest score first, ties to the lower box index; NaN scores last. */
static int
by_score (const void *pa, const void *pb)
{
  const Candidate *a = pa, *b = pb;
  if (isnan (a->score) != isnan (b->score))
    return isnan (a->score) ? 1 : -1;
  if (a->score != b->score)
    return a->score > b->score ? -1 : 1;
  return a->box < b->box ? -1 : a->box > b->box;
}

/* The first value of an optional one-value input; dflt when absent or empty. */
static double
optional_value (PlTensor *const *inputs, const PlNode *node, int i, double dflt, bool *given)
{
  const PlTensor *t = i < node->n_inputs ? inputs[i] : NULL;
  bool has = t && t->numel > 0;
  if (given)
    *given = has;
  return has ? pl_tensor_get_f64 (t, 0) : dflt;
}

/* Greedy selection per (batch, class): take the candidates by falling
 * score, keeping each that no kept box suppresses, up to the limit. */
static bool
nms_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *boxes = inputs[0], *scores = inputs[1];
  PlShape sb = pl_tensor_shape (boxes), ss = pl_tensor_shape (scores);
  if (!nms_check (node, &sb, &ss, error))
    return pl_exec_error (error);
  const bool center = pl_node_attr_int (node, "center_point_box", 0) == 1;
  double limit = MAX (optional_value (inputs, node, 2, 0, NULL), 0);
  double iou = optional_value (inputs, node, 3, 0, NULL);
  bool has_threshold;
  double threshold = optional_value (inputs, node, 4, 0, &has_threshold);
  const int64_t n_batches = boxes->dims[0], n_boxes = boxes->dims[1], n_classes = scores->dims[1];
  g_autofree double *bv = pl_nn_load_f64 (boxes), *sv = pl_nn_load_f64 (scores);
  g_autofree Candidate *cand = g_new (Candidate, MAX (n_boxes, 1));
  g_autofree int64_t *kept = g_new (int64_t, MAX (n_boxes, 1));
  g_autoptr (GArray) rows = g_array_new (FALSE, FALSE, 3 * sizeof (int64_t));

  for (int64_t b = 0; b < n_batches; b++)
    for (int64_t c = 0; c < n_classes; c++)
      {
        const double *score = sv + (b * n_classes + c) * n_boxes, *box = bv + b * n_boxes * 4;
        int64_t n = 0, n_kept = 0;
        for (int64_t i = 0; i < n_boxes; i++)
          if (!has_threshold || score[i] > threshold)
            cand[n++] = (Candidate) { score[i], i };
        qsort (cand, n, sizeof *cand, by_score);
        for (int64_t i = 0; i < n && n_kept < limit; i++)
          {
            bool keep = true;
            for (int64_t k = 0; k < n_kept && keep; k++)
              keep = !suppresses (box + 4 * kept[k], box + 4 * cand[i].box, center, iou);
            if (!keep)
              continue;
            kept[n_kept++] = cand[i].box;
            g_array_append_val (rows, ((int64_t[3]) { b, c, cand[i].box }));
          }
      }
  outputs[0] = pl_out_new (PL_DTYPE_I64, 2, (int64_t[]) { rows->len, 3 }, error);
  if (!outputs[0])
    return false;
  memcpy (outputs[0]->data, rows->data, rows->len * 3 * sizeof (int64_t));
  return true;
}

/* --- RoiAlign ---------------------------------------------------------------------- */

typedef PlRoiAlignAttrs RoiAttrs;

bool
pl_roi_align_attrs (const PlNode *node, PlRoiAlignAttrs *ra, GError **error)
{
  /* opset 16 added the attribute with half_pixel; before it, the output_half_pixel arithmetic */
  const char *mode = pl_node_attr_string (node, "mode", "avg");
  const char *coord = pl_node_attr_string (node, "coordinate_transformation_mode",
                                           pl_node_opset (node) < 16 ? "output_half_pixel" : "half_pixel");

  ra->avg = g_str_equal (mode, "avg");
  ra->half_pixel = g_str_equal (coord, "half_pixel");
  ra->height = pl_node_attr_int (node, "output_height", 1);
  ra->width = pl_node_attr_int (node, "output_width", 1);
  ra->sampling_ratio = pl_node_attr_int (node, "sampling_ratio", 0);
  ra->spatial_scale = pl_node_attr_float (node, "spatial_scale", 1.0f);
  if ((!ra->avg && !g_str_equal (mode, "max")) || (!ra->half_pixel && !g_str_equal (coord, "output_half_pixel")))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "mode '%s', coordinate_transformation_mode '%s'", mode,
                   coord);
      return false;
    }
  if (ra->height < 1 || ra->width < 1 || ra->sampling_ratio < 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "output_height and output_width must be positive and "
                   "sampling_ratio not negative");
      return false;
    }
  return true;
}

/* X [N, C, H, W], rois [R, 4], batch_indices [R] -> [R, C, output_height, output_width]. */
static bool
roi_plan (const PlNode *node, const PlShape *x, const PlShape *rois, const PlShape *idx, RoiAttrs *ra, PlShape *out,
          GError **error)
{
  if (!pl_roi_align_attrs (node, ra, error)
      || !check_shape (x, 4, NULL, "X", "[N, C, H, W]", error)
      || !check_shape (rois, 2, (const int64_t[]) { -1, 4 }, "rois", "[num_rois, 4]", error)
      || !check_shape (idx, 1, NULL, "batch_indices", "[num_rois]", error)
      || !check_same_dim (rois, 0, idx, 0, "the roi counts of rois and batch_indices", error))
    return false;
  *out = (PlShape) { .rank = 4, .dims = { pl_dim_unknown (), pl_dim_unknown (), pl_dim_static (ra->height),
                                          pl_dim_static (ra->width) } };
  if (rois->rank == 2)
    out->dims[0] = rois->dims[0];
  if (!pl_dim_is_static (out->dims[0]) && idx->rank == 1)
    out->dims[0] = idx->dims[0];
  if (x->rank == 4)
    out->dims[1] = x->dims[1];
  return true;
}

static bool
roi_align_infer (PlNode *node, GError **error)
{
  RoiAttrs ra;
  PlShape out;

  if (!pl_require_dtype (node, 0, float_types, error) || !pl_require_dtype (node, 1, float_types, error)
      || !pl_require_dtype (node, 2, i64_only, error)
      || !roi_plan (node, &pl_input (node, 0)->shape, &pl_input (node, 1)->shape, &pl_input (node, 2)->shape, &ra,
                    &out, error))
    return false;
  pl_set_output (node, 0, pl_input (node, 0)->dtype, &out);
  return true;
}

/* One bilinear sample of an H x W plane: four offsets and their weights,
 * all zero for a point more than one pixel outside. The point clamps to
 * the plane (Detectron's rule, which ONNX adopts). */
typedef struct {
  int64_t pos[4];
  double  w[4];
} RoiSample;

static RoiSample
roi_sample (double y, double x, int64_t h, int64_t w)
{
  RoiSample s = { { 0 }, { 0 } };
  if (y < -1.0 || y > h || x < -1.0 || x > w || h == 0 || w == 0)
    return s;
  y = MAX (y, 0);
  x = MAX (x, 0);
  int64_t y0 = (int64_t) y, x0 = (int64_t) x, y1 = y0 + 1, x1 = x0 + 1;
  if (y0 >= h - 1)
    y = y0 = y1 = h - 1;
  if (x0 >= w - 1)
    x = x0 = x1 = w - 1;
  double ly = y - y0, lx = x - x0, hy = 1 - ly, hx = 1 - lx;
  s = (RoiSample) { { y0 * w + x0, y0 * w + x1, y1 * w + x0, y1 * w + x1 }, { hy * hx, hy * lx, ly * hx, ly * lx } };
  return s;
}

/* One roi of all channels: each output bin is the mean (or max) of a
 * grid of samples inside it. Fails when a huge roi would need more
 * samples than memory holds. */
static bool
roi_align_one (const RoiAttrs *ra, const double *roi, const double *plane, int64_t channels, int64_t h, int64_t w,
               double *y, GError **error)
{
  /* no rounding of the roi: that is the point of RoiAlign */
  double off = ra->half_pixel ? 0.5 : 0.0;
  double x0 = roi[0] * ra->spatial_scale - off, y0 = roi[1] * ra->spatial_scale - off;
  double rw = roi[2] * ra->spatial_scale - off - x0, rh = roi[3] * ra->spatial_scale - off - y0;
  if (!ra->half_pixel)
    {
      /* output_half_pixel forces malformed rois to 1 x 1 */
      rw = MAX (rw, 1.0);
      rh = MAX (rh, 1.0);
    }
  double bh = rh / ra->height, bw = rw / ra->width;
  double sh = ra->sampling_ratio > 0 ? ra->sampling_ratio : MAX (ceil (bh), 0);
  double sw = ra->sampling_ratio > 0 ? ra->sampling_ratio : MAX (ceil (bw), 0);
  int64_t n_bins = ra->height * ra->width;
  if (!(sh * sw * n_bins <= 1e8))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "a roi of %g x %g needs %g samples", rh, rw, sh * sw * n_bins);
      return false;
    }
  const int64_t gh = (int64_t) sh, gw = (int64_t) sw, n_samples = gh * gw;
  g_autofree RoiSample *samples = g_new (RoiSample, MAX (n_bins * n_samples, 1));

  for (int64_t ph = 0, k = 0; ph < ra->height; ph++)
    for (int64_t pw = 0; pw < ra->width; pw++)
      for (int64_t iy = 0; iy < gh; iy++)
        for (int64_t ix = 0; ix < gw; ix++, k++)
          samples[k] = roi_sample (y0 + ph * bh + (iy + 0.5) * bh / gh, x0 + pw * bw + (ix + 0.5) * bw / gw, h, w);
  for (int64_t c = 0; c < channels; c++, plane += h * w)
    for (int64_t bin = 0; bin < n_bins; bin++)
      {
        const RoiSample *s = samples + bin * n_samples;
        double acc = 0;
        for (int64_t k = 0; k < n_samples; k++)
          {
            double v[4];
            for (int j = 0; j < 4; j++)
              v[j] = s[k].w[j] * plane[s[k].pos[j]];
            if (ra->avg)
              acc += v[0] + v[1] + v[2] + v[3];
            else
              {
                /* the largest weighted corner, as the ONNX reference and onnxruntime do */
                double m = MAX (MAX (v[0], v[1]), MAX (v[2], v[3]));
                acc = k == 0 ? m : MAX (acc, m);
              }
          }
        y[c * n_bins + bin] = ra->avg ? acc / MAX (n_samples, 1) : acc;
      }
  return true;
}

static bool
roi_align_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0], *rois = inputs[1], *idx = inputs[2];
  PlShape sx = pl_tensor_shape (x), sr = pl_tensor_shape (rois), si = pl_tensor_shape (idx), so;
  RoiAttrs ra;
  if (!roi_plan (node, &sx, &sr, &si, &ra, &so, error))
    return pl_exec_error (error);
  PlTensor *y = outputs[0] = pl_tensor_new_shape (x->dtype, &so, error);
  if (!y)
    return false;
  const int64_t channels = x->dims[1], h = x->dims[2], w = x->dims[3], per_roi = channels * ra.height * ra.width;
  g_autofree double *xv = pl_nn_load_f64 (x), *rv = pl_nn_load_f64 (rois);
  g_autofree double *yv = g_new0 (double, MAX (y->numel, 1));
  for (int64_t r = 0; r < y->dims[0]; r++)
    {
      int64_t b = pl_tensor_get_i64 (idx, r);
      if (b < 0 || b >= x->dims[0])
        {
          g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "batch index %" G_GINT64_FORMAT " of roi %" G_GINT64_FORMAT
                       " is outside the batch of %" G_GINT64_FORMAT, b, r, x->dims[0]);
          return false;
        }
      if (!roi_align_one (&ra, rv + 4 * r, xv + b * channels * h * w, channels, h, w, yv + r * per_roi, error))
        return false;
    }
  pl_nn_store_f64 (y, yv);
  return true;
}

/* --- GridSample -------------------------------------------------------------------- */

typedef enum { GRID_LINEAR, GRID_NEAREST, GRID_CUBIC } GridMode;
typedef enum { GRID_ZEROS, GRID_BORDER, GRID_REFLECTION } GridPadding;

typedef struct {
  GridMode    mode;
  GridPadding padding;
  bool        align_corners;
} GridAttrs;

static bool
grid_attrs (const PlNode *node, GridAttrs *ga, GError **error)
{
  static const char *const modes[] = { "bilinear", "nearest", "bicubic", NULL };
  static const char *const paddings[] = { "zeros", "border", "reflection", NULL };
  const char *mode = pl_node_attr_string (node, "mode", "bilinear");
  const char *padding = pl_node_attr_string (node, "padding_mode", "zeros");
  int m = 0, p = 0;

  while (modes[m] && strcmp (modes[m], mode) != 0)
    m++;
  while (paddings[p] && strcmp (paddings[p], padding) != 0)
    p++;
  if (!modes[m] || !paddings[p])
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "mode '%s', padding_mode '%s'", mode, padding);
      return false;
    }
  ga->mode = (GridMode) m;
  ga->padding = (GridPadding) p;
  ga->align_corners = pl_node_attr_int (node, "align_corners", 0) != 0;
  return true;
}

/* X [N, C, H, W], grid [N, H_out, W_out, 2] -> [N, C, H_out, W_out]. */
static bool
grid_plan (const PlNode *node, const PlShape *x, const PlShape *grid, GridAttrs *ga, PlShape *out, GError **error)
{
  if (!grid_attrs (node, ga, error)
      || !check_shape (x, 4, NULL, "X", "[N, C, H, W]", error)
      || !check_shape (grid, 4, (const int64_t[]) { -1, -1, -1, 2 }, "grid", "[N, H_out, W_out, 2]", error)
      || !check_same_dim (x, 0, grid, 0, "the batch sizes of X and grid", error))
    return false;
  *out = pl_rank_shape (4);
  if (x->rank == 4)
    {
      out->dims[0] = x->dims[0];
      out->dims[1] = x->dims[1];
    }
  if (grid->rank == 4)
    {
      out->dims[2] = grid->dims[1];
      out->dims[3] = grid->dims[2];
      if (!pl_dim_is_static (out->dims[0]))
        out->dims[0] = grid->dims[0];
    }
  return true;
}

static bool
grid_sample_infer (PlNode *node, GError **error)
{
  GridAttrs ga;
  PlShape out;

  if (!pl_require_dtype (node, 0, float_types, error) || !pl_require_dtype (node, 1, float_types, error)
      || !grid_plan (node, &pl_input (node, 0)->shape, &pl_input (node, 1)->shape, &ga, &out, error))
    return false;
  pl_set_output (node, 0, pl_input (node, 0)->dtype, &out);
  return true;
}

/* Reflects x off lo and hi until it lies between them. */
static double
reflect (double x, double lo, double hi)
{
  double range = hi - lo;
  if (!(range > 0))
    return lo;
  if (x >= lo && x <= hi)
    return x;
  double dx = x < lo ? lo - x : x - hi, n = floor (dx / range), r = dx - n * range;
  bool even = fmod (n, 2) == 0;
  return (x < lo) == even ? lo + r : hi - r;
}

/* The neighbours of one coordinate along an axis: index (-1: a zero
 * outside the image) and weight. */
typedef struct {
  int     n;
  int64_t idx[4];
  double  w[4];
} GridTaps;

/* Neighbour i along an axis of size d under the padding mode. */
static int64_t
grid_index (const GridAttrs *ga, int64_t i, int64_t d, double lo, double hi)
{
  if (d <= 0)
    return -1;
  if (ga->padding == GRID_ZEROS)
    return i >= 0 && i < d ? i : -1;
  if (ga->padding == GRID_REFLECTION)
    i = (int64_t) reflect ((double) i, lo, hi);
  return CLAMP (i, 0, d - 1);
}

/* The taps for normalized coordinate g along an axis of size d. */
static void
grid_taps (const GridAttrs *ga, double g, int64_t d, GridTaps *t)
{
  /* the image spans the pixels' centres (align_corners) or their outer edges */
  double lo = ga->align_corners ? 0 : -0.5, hi = ga->align_corners ? d - 1 : d - 0.5;
  double v = ga->align_corners ? (g + 1) / 2 * (d - 1) : ((g + 1) * d - 1) / 2;
  int64_t base;

  if (isnan (v))
    {
      *t = (GridTaps) { 1, { -1 }, { NAN } };
      return;
    }
  if (ga->mode == GRID_NEAREST)
    v = nearbyint (v);   /* ties to even, as PyTorch's 2-D kernel */
  if (v < lo || v > hi)
    {
      if (ga->padding == GRID_BORDER)
        v = CLAMP (v, 0, d - 1);
      else if (ga->padding == GRID_REFLECTION)
        v = reflect (v, lo, hi);
      else
        v = CLAMP (v, -8, d + 8);   /* every tap is outside either way; keeps the casts defined */
    }
  if (ga->mode == GRID_NEAREST)
    {
      t->n = 1;
      base = (int64_t) v;
      t->w[0] = 1;
    }
  else
    {
      double f = floor (v), r = v - f;
      base = (int64_t) f;
      if (ga->mode == GRID_LINEAR)
        {
          t->n = 2;
          t->w[0] = 1 - r;
          t->w[1] = r;
        }
      else
        {
          t->n = 4;
          base -= 1;
          pl_cubic_weights (r, -0.75, t->w);
        }
    }
  for (int j = 0; j < t->n; j++)
    t->idx[j] = grid_index (ga, base + j, d, lo, hi);
}

static bool
grid_sample_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0], *grid = inputs[1];
  PlShape sx = pl_tensor_shape (x), sg = pl_tensor_shape (grid), so;
  GridAttrs ga;
  if (!grid_plan (node, &sx, &sg, &ga, &so, error))
    return pl_exec_error (error);
  PlTensor *y = outputs[0] = pl_tensor_new_shape (x->dtype, &so, error);
  if (!y)
    return false;
  const int64_t channels = x->dims[1], h = x->dims[2], w = x->dims[3], points = grid->dims[1] * grid->dims[2];
  g_autofree double *xv = pl_nn_load_f64 (x), *gv = pl_nn_load_f64 (grid);
  g_autofree double *yv = g_new0 (double, MAX (y->numel, 1));
  for (int64_t n = 0; n < x->dims[0]; n++)
    for (int64_t p = 0; p < points; p++)
      {
        /* grid[..., 0] is the x (width) coordinate, grid[..., 1] the y */
        GridTaps tx, ty;
        grid_taps (&ga, gv[(n * points + p) * 2], w, &tx);
        grid_taps (&ga, gv[(n * points + p) * 2 + 1], h, &ty);
        for (int64_t c = 0; c < channels; c++)
          {
            const double *plane = xv + (n * channels + c) * h * w;
            double acc = 0;
            for (int i = 0; i < ty.n; i++)
              for (int j = 0; j < tx.n; j++)
                {
                  bool inside = ty.idx[i] >= 0 && tx.idx[j] >= 0;
                  acc += ty.w[i] * tx.w[j] * (inside ? plane[ty.idx[i] * w + tx.idx[j]] : 0);
                }
            yv[(n * channels + c) * points + p] = acc;
          }
      }
  pl_nn_store_f64 (y, yv);
  return true;
}

/* --- MaxUnpool --------------------------------------------------------------------- */

/* X [N, C, spatial...] and indices of X's shape -> the unpooled shape, or
 * output_shape where input 2 gives it (at evaluation, `given`: its values;
 * at inference, those of a constant). A given shape may only grow the
 * unpooled one: the indices count into the unpooled shape. */
static bool
unpool_plan (const PlNode *node, const PlShape *x, const PlShape *idx, const PlTensor *given, PlShape *full,
             PlShape *out, GError **error)
{
  if (x->rank != PL_RANK_UNKNOWN && idx->rank != PL_RANK_UNKNOWN && pl_shape_is_static (x)
      && pl_shape_is_static (idx) && !pl_shape_equal (x, idx))
    {
      g_autofree char *a = pl_shape_to_string (idx), *b = pl_shape_to_string (x);
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "the indices %s must have X's shape %s", a, b);
      return false;
    }
  if (!pl_unpool_shape (node, x, full, error))
    return false;
  *out = *full;
  if (pl_input (node, 2) && !given)
    *out = pl_rank_shape (x->rank);   /* a shape only known at run time */
  if (!given || given->numel == 0)
    return true;
  int n;
  g_autofree int64_t *v = pl_tensor_to_ints (given, &n);
  if (!pl_check_out_rank (n, error))
    return false;
  if (x->rank != PL_RANK_UNKNOWN && n != x->rank)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "output_shape has %d values for rank %d", n, x->rank);
      return false;
    }
  for (int k = 0; k < n; k++)
    if (v[k] < 0 || (full->rank != PL_RANK_UNKNOWN && pl_dim_is_static (full->dims[k]) && v[k] < full->dims[k].size))
      {
        g_autofree char *s = pl_shape_to_string (full);
        g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "output_shape is smaller than the unpooled shape %s", s);
        return false;
      }
  *out = pl_shape_from_dims (n, v);
  return true;
}

static bool
max_unpool_infer (PlNode *node, GError **error)
{
  PlShape full, out;

  if (!pl_require_dtype (node, 0, float_types, error) || !pl_require_dtype (node, 1, i64_only, error)
      || (pl_input (node, 2) && !pl_require_dtype (node, 2, i64_only, error))
      || !unpool_plan (node, &pl_input (node, 0)->shape, &pl_input (node, 1)->shape, pl_input_constant (node, 2),
                       &full, &out, error))
    return false;
  pl_set_output (node, 0, pl_input (node, 0)->dtype, &out);
  return true;
}

/* Scatters X's values to their indices in the unpooled shape, which sits
 * at the origin of the (larger) output shape; the rest stays zero. */
static bool
max_unpool_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0], *idx = inputs[1], *given = node->n_inputs > 2 ? inputs[2] : NULL;
  PlShape sx = pl_tensor_shape (x), si = pl_tensor_shape (idx), full, so;
  int64_t fd[PL_MAX_RANK], strides[PL_MAX_RANK];
  if (!unpool_plan (node, &sx, &si, given, &full, &so, error))
    return pl_exec_error (error);
  PlTensor *y = outputs[0] = pl_tensor_new_shape (x->dtype, &so, error);
  if (!y)
    return false;
  pl_shape_get_dims (&full, fd);
  pl_strides (y->rank, y->dims, strides);
  const int64_t limit = pl_dims_product (full.rank, fd);
  for (int64_t i = 0; i < x->numel; i++)
    {
      int64_t at = pl_tensor_get_i64 (idx, i);
      if (at < 0 || at >= limit)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "index %" G_GINT64_FORMAT " is outside the unpooled %"
                       G_GINT64_FORMAT " elements", at, limit);
          return false;
        }
      pl_tensor_set_f64 (y, pl_offset_of (at, full.rank, fd, strides), pl_tensor_get_f64 (x, i));
    }
  return true;
}

void
pl_ops_register_vision (void)
{
  static const PlOpEntry entries[] = {
    { PL_OP_NonMaxSuppression, 2, 5, 1, 1, nms_infer, nms_eval },
    { PL_OP_RoiAlign, 3, 3, 1, 1, roi_align_infer, roi_align_eval },
    { PL_OP_GridSample, 2, 2, 1, 1, grid_sample_infer, grid_sample_eval },
    { PL_OP_MaxUnpool, 2, 3, 1, 1, max_unpool_infer, max_unpool_eval },
  };
  pl_ops_register (entries, G_N_ELEMENTS (entries));
}

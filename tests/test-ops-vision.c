/* test-ops-vision.c — NonMaxSuppression, RoiAlign, GridSample and
 * MaxUnpool on the reference: small cases worked out by hand in the
 * comments (suppression order and limits, box formats, sampling at known
 * points under every padding mode and both corner alignments, roi means of
 * constant and ramp images, unpooling with and without output_shape), bad
 * shapes that must fail with a clear error, and the cpu backend running
 * them through its reference fallback. */
#include <math.h>
#include <string.h>

#include "test-util.h"

static PlTensor *
tensor (PlDType t, int rank, const int64_t *dims, const double *values)
{
  return pl_test_tensor (t, rank, dims, values);
}

/* Runs a one-node graph of op on inputs (const_mask: which are constants)
 * after attrs sets its attributes, and returns its output. */
static PlTensor *
run_one (const char *op, int n, PlTensor *const *inputs, guint32 const_mask, void (*attrs) (PlNode *, gpointer),
         gpointer data)
{
  PlNode *node = NULL;
  g_autoptr (PlGraph) g = pl_test_node_graph (op, n, inputs, const_mask, 1, &node);
  if (attrs)
    attrs (node, data);
  PlTensor **out = pl_test_run (g, inputs, const_mask);
  PlTensor *r = pl_tensor_ref (out[0]);
  pl_interp_free_outputs (out, 1);
  return r;
}

/* --- NonMaxSuppression ------------------------------------------------------------- */

/* Three boxes [y1, x1, y2, x2]: 0 and 1 are unit squares shifted by 0.1 in x
 * (intersection 0.9, union 1.1: IoU 0.82), 2 lies far apart. */
static const double corner_boxes[] = { 0, 0, 1, 1, 0, 0.1, 1, 1.1, 5, 5, 6, 6 };
/* The same as [x_center, y_center, width, height]. */
static const double center_boxes[] = { 0.5, 0.5, 1, 1, 0.6, 0.5, 1, 1, 5.5, 5.5, 1, 1 };

static void
set_center (PlNode *n, gpointer data)
{
  pl_node_set_attr_int (n, "center_point_box", GPOINTER_TO_INT (data));
}

/* NMS of boxes [1, 3, 4] and scores [1, classes, 3] with the given limit,
 * IoU threshold and score threshold (NAN: no such input). */
static PlTensor *
nms (const double *boxes, int center, int classes, const double *scores, int64_t limit, double iou, double thr)
{
  g_autoptr (PlTensor) b = tensor (PL_DTYPE_F32, 3, PL_DIMS (1, 3, 4), boxes);
  g_autoptr (PlTensor) s = tensor (PL_DTYPE_F32, 3, PL_DIMS (1, classes, 3), scores);
  g_autoptr (PlTensor) m = tensor (PL_DTYPE_I64, 1, PL_DIMS (1), PL_VALS (limit));
  g_autoptr (PlTensor) i = tensor (PL_DTYPE_F32, 1, PL_DIMS (1), PL_VALS (iou));
  g_autoptr (PlTensor) t = tensor (PL_DTYPE_F32, 1, PL_DIMS (1), PL_VALS (thr));
  PlNode *node = NULL;
  g_autoptr (PlGraph) g = pl_test_node_graph ("NonMaxSuppression", isnan (thr) ? 4 : 5,
                                              (PlTensor *[]) { b, s, m, i, t }, 0, 1, &node);
  set_center (node, GINT_TO_POINTER (center));
  PlTensor **out = pl_test_run (g, (PlTensor *[]) { b, s, m, i, t }, 0);
  /* the count of selected boxes depends on the data: inference cannot know it */
  g_assert_cmpint (node->outputs[0]->shape.rank, ==, 2);
  g_assert_false (pl_dim_is_static (node->outputs[0]->shape.dims[0]));
  g_assert_cmpint (node->outputs[0]->shape.dims[1].size, ==, 3);
  PlTensor *r = pl_tensor_ref (out[0]);
  pl_interp_free_outputs (out, 1);
  g_assert_cmpint (r->dtype, ==, PL_DTYPE_I64);
  g_assert_cmpint (r->dims[1], ==, 3);
  return r;
}

static void
assert_rows (PlTensor *t, int n_rows, const double *rows)
{
  g_autoptr (PlTensor) owned = t;
  g_assert_cmpint (owned->dims[0], ==, n_rows);
  pl_test_assert_values (owned, rows);
}

static void
test_nms (void)
{
  /* scores 0.8, 0.9, 0.95: box 2 first, then box 1; box 0 overlaps box 1 by IoU 0.82 > 0.5 */
  const double *sc = PL_VALS (0.8, 0.9, 0.95);
  assert_rows (nms (corner_boxes, 0, 1, sc, 10, 0.5, NAN), 2, PL_VALS (0, 0, 2, 0, 0, 1));
  /* the same boxes as centres and sizes */
  assert_rows (nms (center_boxes, 1, 1, sc, 10, 0.5, NAN), 2, PL_VALS (0, 0, 2, 0, 0, 1));
  /* corners given in either order: box 0 as [1, 1, 0, 0] */
  const double *flipped = PL_VALS (1, 1, 0, 0, 0, 0.1, 1, 1.1, 5, 5, 6, 6);
  assert_rows (nms (flipped, 0, 1, sc, 10, 0.5, NAN), 2, PL_VALS (0, 0, 2, 0, 0, 1));
  /* an IoU threshold of 0.9 keeps all three, by falling score */
  assert_rows (nms (corner_boxes, 0, 1, sc, 10, 0.9, NAN), 3, PL_VALS (0, 0, 2, 0, 0, 1, 0, 0, 0));
  /* at most one box per class */
  assert_rows (nms (corner_boxes, 0, 1, sc, 1, 0.9, NAN), 1, PL_VALS (0, 0, 2));
  /* a score threshold of 0.85 drops box 0 (0.8) before any suppression */
  assert_rows (nms (corner_boxes, 0, 1, sc, 10, 0.9, 0.85), 2, PL_VALS (0, 0, 2, 0, 0, 1));
  /* max_output_boxes_per_class 0 (its default) selects nothing */
  assert_rows (nms (corner_boxes, 0, 1, sc, 0, 0.5, NAN), 0, NULL);
  /* two classes: class 1 ranks box 0 first (0.9, then box 2 at 0.2), which suppresses box 1 */
  const double *two = PL_VALS (0.8, 0.9, 0.95, 0.9, 0.1, 0.2);
  assert_rows (nms (corner_boxes, 0, 2, two, 10, 0.5, NAN), 4, PL_VALS (0, 0, 2, 0, 0, 1, 0, 1, 0, 0, 1, 2));
  /* equal scores: the lower box index first */
  assert_rows (nms (corner_boxes, 0, 1, PL_VALS (0.5, 0.5, 0.5), 10, 0.5, NAN), 2, PL_VALS (0, 0, 0, 0, 0, 2));
}

static void
test_nms_errors (void)
{
  g_autoptr (PlTensor) s = tensor (PL_DTYPE_F32, 3, PL_DIMS (1, 1, 3), NULL);
  /* boxes with 5 coordinates, and of rank 2 */
  g_autoptr (PlTensor) b5 = tensor (PL_DTYPE_F32, 3, PL_DIMS (1, 3, 5), NULL);
  g_autoptr (PlGraph) g1 = pl_test_node_graph ("NonMaxSuppression", 2, (PlTensor *[]) { b5, s }, 0, 1, NULL);
  pl_test_expect_infer_error (g1, "boxes must be [num_batches, boxes, 4], not [1, 3, 5]");
  g_autoptr (PlTensor) b2 = tensor (PL_DTYPE_F32, 2, PL_DIMS (3, 4), NULL);
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("NonMaxSuppression", 2, (PlTensor *[]) { b2, s }, 0, 1, NULL);
  pl_test_expect_infer_error (g2, "boxes must be [num_batches, boxes, 4], not [3, 4]");
  /* 2 boxes against scores for 3 */
  g_autoptr (PlTensor) bb = tensor (PL_DTYPE_F32, 3, PL_DIMS (1, 2, 4), NULL);
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("NonMaxSuppression", 2, (PlTensor *[]) { bb, s }, 0, 1, NULL);
  pl_test_expect_infer_error (g3, "the box counts of boxes and scores differ: 2 and 3");
  /* a limit of two values, and a center_point_box of 2 */
  g_autoptr (PlTensor) b = tensor (PL_DTYPE_F32, 3, PL_DIMS (1, 3, 4), NULL);
  g_autoptr (PlTensor) m = tensor (PL_DTYPE_I64, 1, PL_DIMS (2), NULL);
  g_autoptr (PlGraph) g4 = pl_test_node_graph ("NonMaxSuppression", 3, (PlTensor *[]) { b, s, m }, 0, 1, NULL);
  pl_test_expect_infer_error (g4, "max_output_boxes_per_class must hold one value");
  PlNode *node = NULL;
  g_autoptr (PlGraph) g5 = pl_test_node_graph ("NonMaxSuppression", 2, (PlTensor *[]) { b, s }, 0, 1, &node);
  set_center (node, GINT_TO_POINTER (2));
  pl_test_expect_infer_error (g5, "center_point_box must be 0 or 1");
}

/* --- GridSample -------------------------------------------------------------------- */

typedef struct {
  const char *mode, *padding;
  int         align_corners;
} GridCase;

static void
set_grid (PlNode *n, gpointer data)
{
  const GridCase *c = data;
  pl_node_set_attr_string (n, "mode", c->mode);
  pl_node_set_attr_string (n, "padding_mode", c->padding);
  pl_node_set_attr_int (n, "align_corners", c->align_corners);
}

static void
test_grid_sample (void)
{
  /* X = [[1, 2], [3, 4]]; four grid points (x, y): P1 (0.5, -0.5), P2 (1, 1), P3 (3, 0), P4 (0, 0).
   * align_corners 0 maps g to ((g + 1) * 2 - 1) / 2: P1 -> (1, 0), P2 -> (1.5, 1.5) on the outer
   * edge, P3 -> (3.5, 0.5) outside, P4 -> (0.5, 0.5) the centre.
   * align_corners 1 maps g to (g + 1) / 2: P1 -> (0.75, 0.25), P2 -> (1, 1), P3 -> (2, 0.5), P4 the centre. */
  g_autoptr (PlTensor) x = tensor (PL_DTYPE_F32, 4, PL_DIMS (1, 1, 2, 2), PL_VALS (1, 2, 3, 4));
  g_autoptr (PlTensor) grid = tensor (PL_DTYPE_F32, 4, PL_DIMS (1, 1, 4, 2), PL_VALS (0.5, -0.5, 1, 1, 3, 0, 0, 0));
  static const struct {
    GridCase c;
    double   want[4];
  } cases[] = {
    /* bilinear, zeros: P2 keeps a quarter of X[1][1] (its other neighbours are zeros); P3 is all zeros */
    { { "bilinear", "zeros", 0 }, { 2, 1, 0, 2.5 } },
    /* border: P2 is X[1][1]; P3 clamps to x = 1, between rows: (2 + 4) / 2 */
    { { "bilinear", "border", 0 }, { 2, 4, 3, 2.5 } },
    /* reflection: P2's outer neighbours reflect onto X[1][1]; P3 reflects off both edges to x = -0.5,
     * whose neighbours both reflect onto column 0: (1 + 3) / 2 */
    { { "bilinear", "reflection", 0 }, { 2, 4, 2, 2.5 } },
    /* align_corners: P1 = 0.75 * (0.25 * 1 + 0.75 * 2) + 0.25 * (0.25 * 3 + 0.75 * 4) = 2.25 */
    { { "bilinear", "zeros", 1 }, { 2.25, 4, 0, 2.5 } },
    /* nearest rounds ties to even: P4 (0.5, 0.5) -> (0, 0); P2 (1.5, 1.5) -> (2, 2), outside */
    { { "nearest", "zeros", 0 }, { 2, 0, 0, 1 } },
    /* bicubic at an integer point is the pixel; at P4 the weights (-3, 19, 19, -3) / 32 keep the
     * inner two, 19 / 32 each way, with zeros: (19 / 32)^2 * (1 + 2 + 3 + 4); with border the
     * outer neighbours fold onto the inner ones: 1/2 each way */
    { { "bicubic", "zeros", 0 }, { 2, NAN, NAN, 3.525390625 } },
    { { "bicubic", "border", 0 }, { 2, NAN, NAN, 2.5 } },
  };

  for (guint k = 0; k < G_N_ELEMENTS (cases); k++)
    {
      g_autoptr (PlTensor) y = run_one ("GridSample", 2, (PlTensor *[]) { x, grid }, 0, set_grid,
                                        (gpointer) &cases[k].c);
      g_assert_cmpint (y->rank, ==, 4);
      g_assert_cmpint (y->dims[2], ==, 1);
      g_assert_cmpint (y->dims[3], ==, 4);
      for (int i = 0; i < 4; i++)
        if (!isnan (cases[k].want[i]) && fabs (pl_tensor_get_f64 (y, i) - cases[k].want[i]) > 1e-6)
          g_error ("%s %s align_corners %d, point %d: got %g, want %g", cases[k].c.mode, cases[k].c.padding,
                   cases[k].c.align_corners, i + 1, pl_tensor_get_f64 (y, i), cases[k].want[i]);
    }

  /* two channels sample the same points; a NaN coordinate gives NaN, a huge one zeros or the edge */
  g_autoptr (PlTensor) x2 = tensor (PL_DTYPE_F64, 4, PL_DIMS (1, 2, 2, 2), PL_VALS (1, 2, 3, 4, 10, 20, 30, 40));
  g_autoptr (PlTensor) odd = tensor (PL_DTYPE_F64, 4, PL_DIMS (1, 1, 3, 2), PL_VALS (0, 0, NAN, 0, 1e30, -1e30));
  g_autoptr (PlTensor) yz = run_one ("GridSample", 2, (PlTensor *[]) { x2, odd }, 0, set_grid,
                                     &(GridCase) { "bicubic", "zeros", 0 });
  pl_test_assert_values (yz, PL_VALS (3.525390625, NAN, 0, 35.25390625, NAN, 0));
  g_autoptr (PlTensor) yb = run_one ("GridSample", 2, (PlTensor *[]) { x2, odd }, 0, set_grid,
                                     &(GridCase) { "bilinear", "border", 0 });
  pl_test_assert_values (yb, PL_VALS (2.5, NAN, 2, 25, NAN, 20));   /* (1e30, -1e30): x = 1, y = 0 */
}

static void
test_grid_sample_errors (void)
{
  g_autoptr (PlTensor) x = tensor (PL_DTYPE_F32, 4, PL_DIMS (1, 1, 2, 2), NULL);
  g_autoptr (PlTensor) g3 = tensor (PL_DTYPE_F32, 4, PL_DIMS (1, 1, 4, 3), NULL);
  g_autoptr (PlGraph) a = pl_test_node_graph ("GridSample", 2, (PlTensor *[]) { x, g3 }, 0, 1, NULL);
  pl_test_expect_infer_error (a, "grid must be [N, H_out, W_out, 2], not [1, 1, 4, 3]");
  g_autoptr (PlTensor) x3 = tensor (PL_DTYPE_F32, 3, PL_DIMS (1, 2, 2), NULL);
  g_autoptr (PlTensor) grid = tensor (PL_DTYPE_F32, 4, PL_DIMS (2, 1, 4, 2), NULL);
  g_autoptr (PlGraph) b = pl_test_node_graph ("GridSample", 2, (PlTensor *[]) { x3, grid }, 0, 1, NULL);
  pl_test_expect_infer_error (b, "X must be [N, C, H, W], not [1, 2, 2]");
  g_autoptr (PlGraph) c = pl_test_node_graph ("GridSample", 2, (PlTensor *[]) { x, grid }, 0, 1, NULL);
  pl_test_expect_infer_error (c, "the batch sizes of X and grid differ: 1 and 2");
  PlNode *node = NULL;
  g_autoptr (PlTensor) g1 = tensor (PL_DTYPE_F32, 4, PL_DIMS (1, 1, 4, 2), NULL);
  g_autoptr (PlGraph) d = pl_test_node_graph ("GridSample", 2, (PlTensor *[]) { x, g1 }, 0, 1, &node);
  set_grid (node, &(GridCase) { "trilinear", "zeros", 0 });
  pl_test_expect_infer_error (d, "mode 'trilinear'");
}

/* --- RoiAlign ---------------------------------------------------------------------- */

typedef struct {
  const char *mode, *coord;
  int64_t     height, width, sampling;
  double      scale;
} RoiCase;

static void
set_roi (PlNode *n, gpointer data)
{
  const RoiCase *c = data;
  pl_node_set_attr_string (n, "mode", c->mode);
  pl_node_set_attr_string (n, "coordinate_transformation_mode", c->coord);
  pl_node_set_attr_int (n, "output_height", c->height);
  pl_node_set_attr_int (n, "output_width", c->width);
  pl_node_set_attr_int (n, "sampling_ratio", c->sampling);
  pl_node_set_attr_float (n, "spatial_scale", (float) c->scale);
}

static PlTensor *
roi_align (PlTensor *x, const double *roi, int64_t batch, const RoiCase *c)
{
  g_autoptr (PlTensor) rois = tensor (PL_DTYPE_F32, 2, PL_DIMS (1, 4), roi);
  g_autoptr (PlTensor) idx = tensor (PL_DTYPE_I64, 1, PL_DIMS (1), PL_VALS (batch));
  return run_one ("RoiAlign", 3, (PlTensor *[]) { x, rois, idx }, 0, set_roi, (gpointer) c);
}

static void
test_roi_align (void)
{
  /* batch 0: the constant 5; batch 1: the ramp X[y][x] = x + 4 y */
  double v[32];
  for (int i = 0; i < 16; i++)
    {
      v[i] = 5;
      v[16 + i] = (i % 4) + 4 * (i / 4);
    }
  g_autoptr (PlTensor) x = tensor (PL_DTYPE_F32, 4, PL_DIMS (2, 1, 4, 4), v);

  /* every bin of a constant image averages to the constant (weights sum to 1, even clamped at the edge) */
  g_autoptr (PlTensor) c = roi_align (x, PL_VALS (0, 0, 3, 3), 0, &(RoiCase) { "avg", "half_pixel", 2, 2, 2, 1 });
  g_assert_cmpint (c->dims[0], ==, 1);
  g_assert_cmpint (c->dims[2], ==, 2);
  pl_test_assert_values (c, PL_VALS (5, 5, 5, 5));

  /* bilinear sampling of a linear image is exact, and the samples of a bin are symmetric about its
   * centre: each bin averages to the ramp at the centre. roi x, y from 0.5 to 2.5, 2 x 2 bins of 1:
   * output_half_pixel centres 1 and 2, so 1 + 4 * 1, 2 + 4 * 1, 1 + 4 * 2, 2 + 4 * 2 */
  const double *ramp_out = PL_VALS (5, 6, 9, 10);
  g_autoptr (PlTensor) r1 = roi_align (x, PL_VALS (0.5, 0.5, 2.5, 2.5), 1,
                                       &(RoiCase) { "avg", "output_half_pixel", 2, 2, 2, 1 });
  pl_test_assert_values (r1, ramp_out);
  /* adaptive sampling (one sample per bin of 1) and a spatial scale of 0.5 on doubled coordinates */
  g_autoptr (PlTensor) r2 = roi_align (x, PL_VALS (1, 1, 5, 5), 1,
                                       &(RoiCase) { "avg", "output_half_pixel", 2, 2, 0, 0.5 });
  pl_test_assert_values (r2, ramp_out);
  /* half_pixel shifts the roi by half a pixel: centres 0.5 and 1.5 */
  g_autoptr (PlTensor) r3 = roi_align (x, PL_VALS (0.5, 0.5, 2.5, 2.5), 1,
                                       &(RoiCase) { "avg", "half_pixel", 2, 2, 2, 1 });
  pl_test_assert_values (r3, PL_VALS (2.5, 3.5, 6.5, 7.5));

  /* one bin of 4 x 4 with 2 x 2 samples at the pixels (1, 1), (1, 3), (3, 1), (3, 3): 5, 7, 13, 15 */
  g_autoptr (PlTensor) avg = roi_align (x, PL_VALS (0, 0, 4, 4), 1,
                                        &(RoiCase) { "avg", "output_half_pixel", 1, 1, 2, 1 });
  pl_test_assert_values (avg, PL_VALS (10));
  g_autoptr (PlTensor) max = roi_align (x, PL_VALS (0, 0, 4, 4), 1,
                                        &(RoiCase) { "max", "output_half_pixel", 1, 1, 2, 1 });
  pl_test_assert_values (max, PL_VALS (15));

  /* samples more than a pixel outside count as zeros */
  g_autoptr (PlTensor) out = roi_align (x, PL_VALS (10, 10, 12, 12), 0,
                                        &(RoiCase) { "avg", "half_pixel", 1, 1, 2, 1 });
  pl_test_assert_values (out, PL_VALS (0));
}

static void
test_roi_align_errors (void)
{
  g_autoptr (PlTensor) x = tensor (PL_DTYPE_F32, 4, PL_DIMS (2, 1, 4, 4), NULL);
  g_autoptr (PlTensor) idx = tensor (PL_DTYPE_I64, 1, PL_DIMS (1), NULL);
  g_autoptr (PlTensor) r5 = tensor (PL_DTYPE_F32, 2, PL_DIMS (1, 5), NULL);
  g_autoptr (PlGraph) a = pl_test_node_graph ("RoiAlign", 3, (PlTensor *[]) { x, r5, idx }, 0, 1, NULL);
  pl_test_expect_infer_error (a, "rois must be [num_rois, 4], not [1, 5]");
  g_autoptr (PlTensor) rois = tensor (PL_DTYPE_F32, 2, PL_DIMS (1, 4), PL_VALS (0, 0, 1, 1));
  g_autoptr (PlTensor) x3 = tensor (PL_DTYPE_F32, 3, PL_DIMS (1, 4, 4), NULL);
  g_autoptr (PlGraph) b = pl_test_node_graph ("RoiAlign", 3, (PlTensor *[]) { x3, rois, idx }, 0, 1, NULL);
  pl_test_expect_infer_error (b, "X must be [N, C, H, W], not [1, 4, 4]");
  g_autoptr (PlTensor) idx2 = tensor (PL_DTYPE_I64, 1, PL_DIMS (2), NULL);
  g_autoptr (PlGraph) c = pl_test_node_graph ("RoiAlign", 3, (PlTensor *[]) { x, rois, idx2 }, 0, 1, NULL);
  pl_test_expect_infer_error (c, "the roi counts of rois and batch_indices differ: 1 and 2");
  /* a batch index past the batch fails at run time */
  g_autoptr (PlTensor) far = tensor (PL_DTYPE_I64, 1, PL_DIMS (1), PL_VALS (2));
  g_autoptr (PlGraph) d = pl_test_node_graph ("RoiAlign", 3, (PlTensor *[]) { x, rois, far }, 0, 1, NULL);
  pl_test_expect_run_error (d, (PlTensor *[]) { x, rois, far }, 0, "batch index 2 of roi 0 is outside the batch of 2");
}

/* --- MaxUnpool --------------------------------------------------------------------- */

static void
set_window (PlNode *n, gpointer data)
{
  const int64_t *w = data;   /* kernel, stride, pad */
  pl_node_set_attr_ints (n, "kernel_shape", (int64_t[]) { w[0], w[0] }, 2);
  pl_node_set_attr_ints (n, "strides", (int64_t[]) { w[1], w[1] }, 2);
  pl_node_set_attr_ints (n, "pads", (int64_t[]) { w[2], w[2], w[2], w[2] }, 4);
}

static void
test_max_unpool (void)
{
  /* a 2 x 2 pool of stride 2 unpools 2 x 2 to 4 x 4; the values go to flat indices 0, 3, 9, 14 */
  g_autoptr (PlTensor) x = tensor (PL_DTYPE_F32, 4, PL_DIMS (1, 1, 2, 2), PL_VALS (1, 2, 3, 4));
  g_autoptr (PlTensor) idx = tensor (PL_DTYPE_I64, 4, PL_DIMS (1, 1, 2, 2), PL_VALS (0, 3, 9, 14));
  int64_t k2s2[] = { 2, 2, 0 };
  g_autoptr (PlTensor) y = run_one ("MaxUnpool", 2, (PlTensor *[]) { x, idx }, 0, set_window, k2s2);
  g_assert_cmpint (y->dims[2], ==, 4);
  g_assert_cmpint (y->dims[3], ==, 4);
  pl_test_assert_values (y, PL_VALS (1, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 4, 0));

  /* output_shape 5 x 5 pads the 4 x 4 result at the end: (0, 0), (0, 3), (2, 1), (3, 2) of 5 x 5,
   * given as a constant (inference knows the shape) and as an input (it does not) */
  g_autoptr (PlTensor) shape = tensor (PL_DTYPE_I64, 1, PL_DIMS (4), PL_VALS (1, 1, 5, 5));
  double want[25] = { 0 };
  want[0] = 1, want[3] = 2, want[11] = 3, want[17] = 4;
  for (guint32 mask = 0; mask <= 4; mask += 4)
    {
      g_autoptr (PlTensor) p = run_one ("MaxUnpool", 3, (PlTensor *[]) { x, idx, shape }, mask, set_window, k2s2);
      g_assert_cmpint (p->dims[2], ==, 5);
      pl_test_assert_values (p, want);
    }

  /* kernel 3, stride 2, pads 1: (2 - 1) * 2 - 2 + 3 = 3; the values go to the corners */
  int64_t k3s2p1[] = { 3, 2, 1 };
  g_autoptr (PlTensor) corners = tensor (PL_DTYPE_I64, 4, PL_DIMS (1, 1, 2, 2), PL_VALS (0, 2, 6, 8));
  g_autoptr (PlTensor) q = run_one ("MaxUnpool", 2, (PlTensor *[]) { x, corners }, 0, set_window, k3s2p1);
  g_assert_cmpint (q->dims[2], ==, 3);
  pl_test_assert_values (q, PL_VALS (1, 0, 2, 0, 0, 0, 3, 0, 4));
}

static void
test_max_unpool_errors (void)
{
  int64_t k2s2[] = { 2, 2, 0 };
  PlNode *node = NULL;
  g_autoptr (PlTensor) x = tensor (PL_DTYPE_F32, 4, PL_DIMS (1, 1, 2, 2), PL_VALS (1, 2, 3, 4));
  /* an index past the 16 unpooled elements fails at run time */
  g_autoptr (PlTensor) far = tensor (PL_DTYPE_I64, 4, PL_DIMS (1, 1, 2, 2), PL_VALS (0, 1, 2, 16));
  g_autoptr (PlGraph) a = pl_test_node_graph ("MaxUnpool", 2, (PlTensor *[]) { x, far }, 0, 1, &node);
  set_window (node, k2s2);
  pl_test_expect_run_error (a, (PlTensor *[]) { x, far }, 0, "index 16 is outside the unpooled 16 elements");
  /* indices of another shape */
  g_autoptr (PlTensor) i3 = tensor (PL_DTYPE_I64, 4, PL_DIMS (1, 1, 2, 3), NULL);
  g_autoptr (PlGraph) b = pl_test_node_graph ("MaxUnpool", 2, (PlTensor *[]) { x, i3 }, 0, 1, &node);
  set_window (node, k2s2);
  pl_test_expect_infer_error (b, "the indices [1, 1, 2, 3] must have X's shape [1, 1, 2, 2]");
  /* an output_shape smaller than the unpooled shape */
  g_autoptr (PlTensor) idx = tensor (PL_DTYPE_I64, 4, PL_DIMS (1, 1, 2, 2), PL_VALS (0, 3, 9, 14));
  g_autoptr (PlTensor) small = tensor (PL_DTYPE_I64, 1, PL_DIMS (4), PL_VALS (1, 1, 3, 3));
  g_autoptr (PlGraph) c = pl_test_node_graph ("MaxUnpool", 3, (PlTensor *[]) { x, idx, small }, 4, 1, &node);
  set_window (node, k2s2);
  pl_test_expect_infer_error (c, "output_shape is smaller than the unpooled shape [1, 1, 4, 4]");
  /* X of rank 2, and no kernel_shape */
  g_autoptr (PlTensor) x2 = tensor (PL_DTYPE_F32, 2, PL_DIMS (2, 2), NULL);
  g_autoptr (PlTensor) i2 = tensor (PL_DTYPE_I64, 2, PL_DIMS (2, 2), NULL);
  g_autoptr (PlGraph) d = pl_test_node_graph ("MaxUnpool", 2, (PlTensor *[]) { x2, i2 }, 0, 1, &node);
  set_window (node, k2s2);
  pl_test_expect_infer_error (d, "must be [N, C, spatial...]");
  g_autoptr (PlGraph) e = pl_test_node_graph ("MaxUnpool", 2, (PlTensor *[]) { x, idx }, 0, 1, NULL);
  pl_test_expect_infer_error (e, "'kernel_shape' attribute is required");
}

/* --- on a backend ------------------------------------------------------------------ */

/* A detection tail compiled for the cpu: NonMaxSuppression runs as a
 * reference fallback between generated kernels (GridSample among them) and
 * everything gives the reference's results.
 * The backend compiles static shapes, so the graph declares the count of
 * selected boxes, as exported ONNX files do. */
static void
test_cpu_fallback (void)
{
  if (!pl_backend_available (PL_BACKEND_CPU, NULL))
    {
      g_test_skip ("no cpu backend");
      return;
    }
  g_autoptr (PlGraph) g = pl_test_parse (
    "graph v opset 17 {\n"
    "  input x: f32[1, 2, 4, 4]\n"
    "  input grid: f32[1, 3, 3, 2]\n"
    "  input boxes: f32[1, 3, 4]\n"
    "  input scores: f32[1, 1, 3]\n"
    "  const m: i64[1] = [10]\n"
    "  const iou: f32[1] = [0.5]\n"
    "  e = Exp(x)\n"
    "  s = GridSample(e, grid) {align_corners=1}\n"
    "  y = Relu(s)\n"
    "  sel: i64[2, 3] = NonMaxSuppression(boxes, scores, m, iou)\n"
    "  output y\n  output sel\n}\n");
  g_autoptr (PlTensor) x = pl_test_random (PL_DTYPE_F32, 4, PL_DIMS (1, 2, 4, 4), 1, -1, 1);
  g_autoptr (PlTensor) grid = pl_test_random (PL_DTYPE_F32, 4, PL_DIMS (1, 3, 3, 2), 2, -1.2, 1.2);
  g_autoptr (PlTensor) boxes = tensor (PL_DTYPE_F32, 3, PL_DIMS (1, 3, 4), corner_boxes);
  g_autoptr (PlTensor) scores = tensor (PL_DTYPE_F32, 3, PL_DIMS (1, 1, 3), PL_VALS (0.8, 0.9, 0.95));
  PlTensor *ins[] = { x, grid, boxes, scores };
  /* NonMaxSuppression; Exp, GridSample and Relu are generated; the selected boxes agree exactly */
  g_assert_cmpint (pl_test_backend_fallbacks (g, "simplify,fuse-library,fuse-loops", PL_BACKEND_CPU, ins, 1e-5, 1e-6,
                                              NULL), ==, 1);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  pl_ops_init ();
  g_test_add_func ("/Passlab/Vision/nms", test_nms);
  g_test_add_func ("/Passlab/Vision/nms-errors", test_nms_errors);
  g_test_add_func ("/Passlab/Vision/grid-sample", test_grid_sample);
  g_test_add_func ("/Passlab/Vision/grid-sample-errors", test_grid_sample_errors);
  g_test_add_func ("/Passlab/Vision/roi-align", test_roi_align);
  g_test_add_func ("/Passlab/Vision/roi-align-errors", test_roi_align_errors);
  g_test_add_func ("/Passlab/Vision/max-unpool", test_max_unpool);
  g_test_add_func ("/Passlab/Vision/max-unpool-errors", test_max_unpool_errors);
  g_test_add_func ("/Passlab/Vision/cpu-fallback", test_cpu_fallback);
  return g_test_run ();
}

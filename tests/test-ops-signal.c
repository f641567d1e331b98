/* test-ops-signal.c — DFT, STFT, the Hann, Hamming and Blackman windows
 * and MelWeightMatrix on the reference: small cases worked out by hand or
 * with numpy in the comments (transforms of an impulse, a constant, a ramp
 * and a complex wave, on power-of-two lengths and others, cropped and
 * zero-padded, onesided, inverse round trips; frames with and without a
 * window; the windows' known values; a mel matrix), output shapes known at
 * inference exactly when the length inputs are constants, bad input that
 * must fail with a clear error naming the node, and the cpu backend
 * running them through its reference fallback. */
#include <math.h>
#include <string.h>

#include "test-util.h"

static PlTensor *
tensor (PlDType t, int rank, const int64_t *dims, const double *values)
{
  return pl_test_tensor (t, rank, dims, values);
}

static PlTensor *
scalar_i64 (int64_t v)
{
  return tensor (PL_DTYPE_I64, 0, NULL, PL_VALS ((double) v));
}

/* A graph of one node of op on inputs (const_mask: which are constants)
 * whose attributes attrs sets. */
static PlGraph *
node_graph (const char *op, int n, PlTensor *const *inputs, guint32 const_mask, void (*attrs) (PlNode *, gpointer),
            gpointer data, PlNode **node)
{
  PlGraph *g = pl_test_node_graph (op, n, inputs, const_mask, 1, node);
  if (attrs)
    attrs (*node, data);
  return g;
}

/* Runs that graph and returns its output; *inferred (when not NULL) gets
 * the output shape inference gave. */
static PlTensor *
run_one (const char *op, int n, PlTensor *const *inputs, guint32 const_mask, void (*attrs) (PlNode *, gpointer),
         gpointer data, PlShape *inferred)
{
  PlNode *node = NULL;
  g_autoptr (PlGraph) g = node_graph (op, n, inputs, const_mask, attrs, data, &node);
  PlTensor **out = pl_test_run (g, inputs, const_mask);
  if (inferred)
    *inferred = node->outputs[0]->shape;
  PlTensor *r = pl_tensor_ref (out[0]);
  pl_interp_free_outputs (out, 1);
  return r;
}

/* Asserts that got (consumed) holds the n values of want, each within tol
 * (relative, and absolute below 1): the transforms' zeros come out as
 * round-off. */
static void
assert_near (PlTensor *got, int64_t n, const double *want, double tol)
{
  g_autoptr (PlTensor) owned = got;
  g_assert_cmpint (owned->numel, ==, n);
  for (int64_t i = 0; i < n; i++)
    if (!(fabs (pl_tensor_get_f64 (owned, i) - want[i]) <= tol * MAX (1, fabs (want[i]))))
      g_error ("element %" G_GINT64_FORMAT ": got %.12g, want %.12g", i, pl_tensor_get_f64 (owned, i), want[i]);
}

/* --- DFT --------------------------------------------------------------------------- */

typedef struct {
  int64_t axis;
  int     inverse, onesided;
} DftAttrs;

static const DftAttrs forward = { 1, 0, 0 };

static void
set_dft (PlNode *n, gpointer data)
{
  const DftAttrs *a = data;
  pl_node_set_attr_int (n, "axis", a->axis);
  pl_node_set_attr_int (n, "inverse", a->inverse);
  pl_node_set_attr_int (n, "onesided", a->onesided);
}

/* The DFT along axis 1 of the real signal [1, n, 1]. */
static PlTensor *
dft_real (int64_t n, const double *v, const DftAttrs *a)
{
  g_autoptr (PlTensor) x = tensor (PL_DTYPE_F64, 3, PL_DIMS (1, n, 1), v);
  return run_one ("DFT", 1, &x, 0, set_dft, (gpointer) a, NULL);
}

static void
test_dft (void)
{
  /* an impulse has a flat spectrum; the constant 2 puts 4 * 2 into bin 0 */
  assert_near (dft_real (4, PL_VALS (1, 0, 0, 0), &forward), 8, PL_VALS (1, 0, 1, 0, 1, 0, 1, 0), 1e-12);
  assert_near (dft_real (4, PL_VALS (2, 2, 2, 2), &forward), 8, PL_VALS (8, 0, 0, 0, 0, 0, 0, 0), 1e-12);
  /* three points take the direct sum: fft([1, 2, 3]) = [6, -1.5 + 0.866i, -1.5 - 0.866i] (sqrt(3) / 2) */
  const double h = sqrt (3) / 2;
  assert_near (dft_real (3, PL_VALS (1, 2, 3), &forward), 6, PL_VALS (6, 0, -1.5, h, -1.5, -h), 1e-12);
  /* fft(range(8)) = [28, -4 + 9.657i, -4 + 4i, -4 + 1.657i, -4, ...] (4 cot(pi k / 8));
   * onesided keeps 8 / 2 + 1 = 5 bins */
  const double c1 = 4 / tan (G_PI / 8), c3 = 4 / tan (3 * G_PI / 8);
  g_autoptr (PlTensor) ramp = dft_real (8, PL_VALS (0, 1, 2, 3, 4, 5, 6, 7), &(DftAttrs) { 1, 0, 1 });
  g_assert_cmpint (ramp->dims[1], ==, 5);
  assert_near (g_steal_pointer (&ramp), 10, PL_VALS (28, 0, -4, c1, -4, 4, -4, c3, -4, 0), 1e-12);

  /* a complex f32 input: e^(2 pi i j / 4) = [1, i, -1, -i] is 4 in bin 1; inverse, an impulse is 1/4 flat */
  g_autoptr (PlTensor) wave = tensor (PL_DTYPE_F32, 3, PL_DIMS (1, 4, 2), PL_VALS (1, 0, 0, 1, -1, 0, 0, -1));
  g_autoptr (PlTensor) bin1 = run_one ("DFT", 1, &wave, 0, set_dft, (gpointer) &forward, NULL);
  g_assert_cmpint (bin1->dtype, ==, PL_DTYPE_F32);
  assert_near (g_steal_pointer (&bin1), 8, PL_VALS (0, 0, 4, 0, 0, 0, 0, 0), 1e-6);
  g_autoptr (PlTensor) impulse = tensor (PL_DTYPE_F64, 3, PL_DIMS (1, 4, 2), PL_VALS (1, 0, 0, 0, 0, 0, 0, 0));
  g_autoptr (PlTensor) flat = run_one ("DFT", 1, &impulse, 0, set_dft, &(DftAttrs) { 1, 1, 0 }, NULL);
  assert_near (g_steal_pointer (&flat), 8, PL_VALS (0.25, 0, 0.25, 0, 0.25, 0, 0.25, 0), 1e-12);

  /* axis 2 (and -2, the same) of [1, 2, 3, 1]: each row of [[1, 2, 3], [1, 1, 1]] transforms alone */
  g_autoptr (PlTensor) rows = tensor (PL_DTYPE_F64, 4, PL_DIMS (1, 2, 3, 1), PL_VALS (1, 2, 3, 1, 1, 1));
  const double *want_rows = PL_VALS (6, 0, -1.5, h, -1.5, -h, 3, 0, 0, 0, 0, 0);
  for (int64_t axis = -2; axis <= 2; axis += 4)
    assert_near (run_one ("DFT", 1, &rows, 0, set_dft, &(DftAttrs) { axis, 0, 0 }, NULL), 12, want_rows, 1e-12);
}

/* dft_length crops or zero-pads the signal first, as numpy's fft(x, n):
 * fft([1, 2, 3, 4, 5], 3) = fft([1, 2, 3]); fft(.., 6) = [15, -6, -3.464i,
 * 3, 3.464i, -6] (2 sqrt(3)). A constant length gives inference the
 * output's length; an input one leaves it unknown. */
static void
test_dft_length (void)
{
  const double h = sqrt (3) / 2, s = 2 * sqrt (3);
  g_autoptr (PlTensor) x = tensor (PL_DTYPE_F64, 3, PL_DIMS (1, 5, 1), PL_VALS (1, 2, 3, 4, 5));
  g_autoptr (PlTensor) three = scalar_i64 (3);
  g_autoptr (PlTensor) six = scalar_i64 (6);
  PlShape inferred;

  for (guint32 mask = 0; mask <= 2; mask += 2)
    {
      g_autoptr (PlTensor) crop = run_one ("DFT", 2, (PlTensor *[]) { x, three }, mask, set_dft, (gpointer) &forward,
                                           &inferred);
      g_assert_cmpint (inferred.rank, ==, 3);
      g_assert_cmpint (pl_dim_is_static (inferred.dims[1]), ==, mask != 0);
      g_assert_cmpint (crop->dims[1], ==, 3);
      assert_near (g_steal_pointer (&crop), 6, PL_VALS (6, 0, -1.5, h, -1.5, -h), 1e-12);
      g_autoptr (PlTensor) pad = run_one ("DFT", 2, (PlTensor *[]) { x, six }, mask, set_dft, (gpointer) &forward,
                                          NULL);
      assert_near (g_steal_pointer (&pad), 12, PL_VALS (15, 0, -6, 0, 0, -s, 3, 0, 0, s, -6, 0), 1e-12);
    }
  /* onesided on a length of 6 keeps 4 bins, also of the inverse (as the ONNX reference does) */
  g_autoptr (PlTensor) half = run_one ("DFT", 2, (PlTensor *[]) { x, six }, 2, set_dft, &(DftAttrs) { 1, 0, 1 },
                                       &inferred);
  g_assert_cmpint (inferred.dims[1].size, ==, 4);
  assert_near (g_steal_pointer (&half), 8, PL_VALS (15, 0, -6, 0, 0, -s, 3, 0), 1e-12);
  g_autoptr (PlTensor) ihalf = run_one ("DFT", 2, (PlTensor *[]) { x, six }, 2, set_dft, &(DftAttrs) { 1, 1, 1 },
                                        NULL);
  g_assert_cmpint (ihalf->dims[1], ==, 4);
}

/* The inverse undoes the forward transform, on a power-of-two length (the
 * FFT) and another (the direct sum), batched, along a middle axis. */
static void
test_dft_round_trip (void)
{
  for (int64_t n = 6; n <= 8; n += 2)
    {
      g_autofree char *text = g_strdup_printf (
        "graph rt opset 17 {\n"
        "  input x: f64[2, %" G_GINT64_FORMAT ", 3, 2]\n"
        "  f = DFT(x) {axis=1}\n"
        "  y = DFT(f) {axis=1, inverse=1}\n"
        "  output y\n}\n", n);
      g_autoptr (PlGraph) g = pl_test_parse (text);
      g_autoptr (PlTensor) x = pl_test_random (PL_DTYPE_F64, 4, PL_DIMS (2, n, 3, 2), 7, -1, 1);
      g_autoptr (GError) error = NULL;
      PlTensor **y = pl_interp_run (g, &x, NULL, &error);
      g_assert_no_error (error);
      pl_test_assert_close (y[0], x, 1e-12, 1e-12);
      pl_interp_free_outputs (y, 1);
    }
}

static void
test_dft_errors (void)
{
  PlNode *node = NULL;
  /* a last dim of 3 is neither real nor complex */
  g_autoptr (PlTensor) x3 = tensor (PL_DTYPE_F32, 3, PL_DIMS (1, 4, 3), NULL);
  g_autoptr (PlGraph) a = node_graph ("DFT", 1, &x3, 0, NULL, NULL, &node);
  pl_test_expect_infer_error (a, "node 'node' (DFT): the signal [1, 4, 3] must end in a dim of 1 (real) or 2 (complex)");
  /* the last axis holds the parts, and axis 3 is past the signal */
  g_autoptr (PlTensor) x = tensor (PL_DTYPE_F32, 3, PL_DIMS (1, 4, 1), NULL);
  g_autoptr (PlGraph) b = node_graph ("DFT", 1, &x, 0, set_dft, &(DftAttrs) { -1, 0, 0 }, &node);
  pl_test_expect_infer_error (b, "axis -1 is outside the signal's axes [-3, -2] and [0, 1]");
  g_autoptr (PlGraph) c = node_graph ("DFT", 1, &x, 0, set_dft, &(DftAttrs) { 3, 0, 0 }, &node);
  pl_test_expect_infer_error (c, "axis 3 is outside");
  /* a length of 0, of two values, of floats */
  g_autoptr (PlTensor) zero = scalar_i64 (0);
  g_autoptr (PlGraph) d = node_graph ("DFT", 2, (PlTensor *[]) { x, zero }, 2, NULL, NULL, &node);
  pl_test_expect_infer_error (d, "dft_length must be at least 1, not 0");
  g_autoptr (PlGraph) d2 = node_graph ("DFT", 2, (PlTensor *[]) { x, zero }, 0, NULL, NULL, &node);
  pl_test_expect_run_error (d2, (PlTensor *[]) { x, zero }, 0, "dft_length must be at least 1, not 0");
  g_autoptr (PlTensor) two = tensor (PL_DTYPE_I64, 1, PL_DIMS (2), PL_VALS (4, 4));
  g_autoptr (PlGraph) e = node_graph ("DFT", 2, (PlTensor *[]) { x, two }, 0, NULL, NULL, &node);
  pl_test_expect_infer_error (e, "dft_length must hold one value, not 2");
  g_autoptr (PlTensor) fl = tensor (PL_DTYPE_F32, 0, NULL, PL_VALS (4));
  g_autoptr (PlGraph) f = node_graph ("DFT", 2, (PlTensor *[]) { x, fl }, 2, NULL, NULL, &node);
  pl_test_expect_infer_error (f, "input 1 has unsupported dtype f32");
  /* opset 20's axis input is not implemented */
  g_autoptr (PlTensor) axis = scalar_i64 (1);
  g_autoptr (PlGraph) g20 = node_graph ("DFT", 3, (PlTensor *[]) { x, NULL, axis }, 4, NULL, NULL, &node);
  pl_test_expect_infer_error (g20, "DFT of opset 20, with axis as an input");
  /* an empty axis has no DFT */
  g_autoptr (PlTensor) empty = tensor (PL_DTYPE_F32, 3, PL_DIMS (1, 0, 1), NULL);
  g_autoptr (PlGraph) h = node_graph ("DFT", 1, &empty, 0, NULL, NULL, &node);
  pl_test_expect_infer_error (h, "a DFT of axis 1, which is empty");
}

/* --- STFT -------------------------------------------------------------------------- */

static void
set_onesided (PlNode *n, gpointer data)
{
  pl_node_set_attr_int (n, "onesided", GPOINTER_TO_INT (data));
}

/* signal [0, 1, ..., 7], frames of 4 every 2 samples: 1 + (8 - 4) / 2 = 3
 * frames [0..3], [2..5], [4..7]; a ramp's spectrum differs between them
 * only in bin 0 (its sum): fft([a, a+1, a+2, a+3]) = [4a + 6, -2 + 2i, -2,
 * -2 - 2i]. Onesided (the default) keeps 3 bins. */
static void
test_stft (void)
{
  g_autoptr (PlTensor) x = tensor (PL_DTYPE_F64, 3, PL_DIMS (1, 8, 1), PL_VALS (0, 1, 2, 3, 4, 5, 6, 7));
  g_autoptr (PlTensor) step = scalar_i64 (2);
  g_autoptr (PlTensor) len = scalar_i64 (4);
  PlShape inferred;

  for (guint32 mask = 0; mask <= 10; mask += 10)   /* step and length as inputs, then as constants */
    {
      g_autoptr (PlTensor) y = run_one ("STFT", 4, (PlTensor *[]) { x, step, NULL, len }, mask, NULL, NULL,
                                        &inferred);
      g_assert_cmpint (inferred.rank, ==, 4);
      g_assert_cmpint (pl_shape_is_static (&inferred), ==, mask != 0);
      g_assert_cmpint (y->dims[1], ==, 3);
      g_assert_cmpint (y->dims[2], ==, 3);
      assert_near (g_steal_pointer (&y), 18,
                   PL_VALS (6, 0, -2, 2, -2, 0, 14, 0, -2, 2, -2, 0, 22, 0, -2, 2, -2, 0), 1e-12);
    }
  /* the periodic Hann window [0, 0.5, 1, 0.5] weights the frames to [0, 0.5, 2, 1.5], [0, 1.5, 4, 2.5]
   * and [0, 2.5, 6, 3.5], whose spectra are [4, -2 + i, 0, -2 - i], [8, -4 + i, 0, -4 - i] and
   * [12, -6 + i, 0, -6 - i]; the window gives the frame length; onesided 0 keeps all 4 bins */
  g_autoptr (PlTensor) w = tensor (PL_DTYPE_F64, 1, PL_DIMS (4), PL_VALS (0, 0.5, 1, 0.5));
  g_autoptr (PlTensor) y = run_one ("STFT", 3, (PlTensor *[]) { x, step, w }, 2, set_onesided, GINT_TO_POINTER (0),
                                    &inferred);
  g_assert_cmpint (inferred.dims[1].size, ==, 3);
  g_assert_cmpint (inferred.dims[2].size, ==, 4);
  assert_near (g_steal_pointer (&y), 24, PL_VALS (4, 0, -2, 1, 0, 0, -2, -1, 8, 0, -4, 1, 0, 0, -4, -1,
                                                  12, 0, -6, 1, 0, 0, -6, -1), 1e-12);

  /* neither window nor length: one frame of the whole signal */
  g_autoptr (PlTensor) whole = run_one ("STFT", 2, (PlTensor *[]) { x, step }, 2, NULL, NULL, &inferred);
  g_assert_cmpint (whole->dims[1], ==, 1);
  g_assert_cmpint (whole->dims[2], ==, 5);
}

static void
test_stft_errors (void)
{
  PlNode *node = NULL;
  g_autoptr (PlTensor) x = tensor (PL_DTYPE_F32, 3, PL_DIMS (1, 8, 1), NULL);
  g_autoptr (PlTensor) step = scalar_i64 (2);
  g_autoptr (PlTensor) zero = scalar_i64 (0);
  g_autoptr (PlTensor) sixteen = scalar_i64 (16);
  /* a signal shorter than a frame, known at inference or only when run */
  g_autoptr (PlGraph) a = node_graph ("STFT", 4, (PlTensor *[]) { x, step, NULL, sixteen }, 10, NULL, NULL, &node);
  pl_test_expect_infer_error (a, "node 'node' (STFT): the signal of 8 samples is shorter than a frame of 16");
  g_autoptr (PlGraph) b = node_graph ("STFT", 4, (PlTensor *[]) { x, step, NULL, sixteen }, 0, NULL, NULL, &node);
  pl_test_expect_run_error (b, (PlTensor *[]) { x, step, NULL, sixteen }, 0, "shorter than a frame of 16");
  /* a step of 0 */
  g_autoptr (PlGraph) c = node_graph ("STFT", 2, (PlTensor *[]) { x, zero }, 2, NULL, NULL, &node);
  pl_test_expect_infer_error (c, "frame_step must be at least 1, not 0");
  /* a signal of rank 2, and a window of rank 2 */
  g_autoptr (PlTensor) x2 = tensor (PL_DTYPE_F32, 2, PL_DIMS (1, 8), NULL);
  g_autoptr (PlGraph) d = node_graph ("STFT", 2, (PlTensor *[]) { x2, step }, 2, NULL, NULL, &node);
  pl_test_expect_infer_error (d, "the signal must be [batch, signal_length, 1 or 2], not [1, 8]");
  g_autoptr (PlTensor) w2 = tensor (PL_DTYPE_F32, 2, PL_DIMS (2, 2), NULL);
  g_autoptr (PlGraph) e = node_graph ("STFT", 3, (PlTensor *[]) { x, step, w2 }, 2, NULL, NULL, &node);
  pl_test_expect_infer_error (e, "the window must have rank 1, not [2, 2]");
}

/* --- windows ----------------------------------------------------------------------- */

typedef struct {
  int periodic;
  int dtype;   /* output_datatype, an ONNX code */
} WindowAttrs;

static void
set_window (PlNode *n, gpointer data)
{
  const WindowAttrs *a = data;
  pl_node_set_attr_int (n, "periodic", a->periodic);
  pl_node_set_attr_int (n, "output_datatype", a->dtype);
}

static PlTensor *
window (const char *op, int64_t size, int periodic, int dtype, guint32 mask, PlShape *inferred)
{
  g_autoptr (PlTensor) n = scalar_i64 (size);
  return run_one (op, 1, &n, mask, set_window, &(WindowAttrs) { periodic, dtype }, inferred);
}

static void
test_windows (void)
{
  /* periodic of 4: cos(2 pi n / 4) = 1, 0, -1, 0. Hann 0.5 - 0.5 cos: [0, 0.5, 1, 0.5];
   * Hamming 25/46 - 21/46 cos: [4/46, 25/46, 1, 25/46];
   * Blackman 0.42 - 0.5 cos + 0.08 cos(2x): [0, 0.34, 1, 0.34] */
  assert_near (window ("HannWindow", 4, 1, 11, 0, NULL), 4, PL_VALS (0, 0.5, 1, 0.5), 1e-12);
  assert_near (window ("HammingWindow", 4, 1, 11, 0, NULL), 4, PL_VALS (4.0 / 46, 25.0 / 46, 1, 25.0 / 46), 1e-12);
  assert_near (window ("BlackmanWindow", 4, 1, 11, 0, NULL), 4, PL_VALS (0, 0.34, 1, 0.34), 1e-12);
  /* symmetric of 5 spans the same period of 4 and ends where it started */
  assert_near (window ("HannWindow", 5, 0, 11, 0, NULL), 5, PL_VALS (0, 0.5, 1, 0.5, 0), 1e-12);
  assert_near (window ("BlackmanWindow", 5, 0, 11, 0, NULL), 5, PL_VALS (0, 0.34, 1, 0.34, 0), 1e-12);
  /* a symmetric window of one sample is [1] (torch's, where the formula divides 0 by 0), a periodic
   * one the formula's first sample; an empty window is empty */
  assert_near (window ("HammingWindow", 1, 0, 11, 0, NULL), 1, PL_VALS (1), 0);
  assert_near (window ("HannWindow", 1, 1, 11, 0, NULL), 1, PL_VALS (0), 0);
  assert_near (window ("HannWindow", 0, 1, 11, 0, NULL), 0, NULL, 0);

  /* f32 by default; output_datatype picks another (7: int64, which truncates 0.5 to 0) */
  PlShape inferred;
  g_autoptr (PlTensor) f = window ("HannWindow", 4, 1, 1, 0, &inferred);
  g_assert_cmpint (f->dtype, ==, PL_DTYPE_F32);
  g_autoptr (PlTensor) i = window ("HannWindow", 4, 1, 7, 0, &inferred);
  g_assert_cmpint (i->dtype, ==, PL_DTYPE_I64);
  assert_near (g_steal_pointer (&i), 4, PL_VALS (0, 0, 1, 0), 0);
  /* the size as an input: inference does not know the length; as a constant it does */
  g_assert_false (pl_dim_is_static (inferred.dims[0]));
  g_autoptr (PlTensor) c = window ("HannWindow", 4, 1, 1, 1, &inferred);
  g_assert_cmpint (inferred.dims[0].size, ==, 4);
  g_assert_cmpint (c->dims[0], ==, 4);
}

static void
test_window_errors (void)
{
  PlNode *node = NULL;
  g_autoptr (PlTensor) neg = scalar_i64 (-1);
  g_autoptr (PlGraph) a = node_graph ("HannWindow", 1, &neg, 1, NULL, NULL, &node);
  pl_test_expect_infer_error (a, "node 'node' (HannWindow): size must be at least 0, not -1");
  g_autoptr (PlGraph) b = node_graph ("HammingWindow", 1, &neg, 0, NULL, NULL, &node);
  pl_test_expect_run_error (b, &neg, 0, "size must be at least 0, not -1");
  g_autoptr (PlTensor) two = tensor (PL_DTYPE_I32, 1, PL_DIMS (2), PL_VALS (4, 4));
  g_autoptr (PlGraph) c = node_graph ("BlackmanWindow", 1, &two, 0, NULL, NULL, &node);
  pl_test_expect_infer_error (c, "size must hold one value, not 2");
  g_autoptr (PlTensor) four = scalar_i64 (4);
  g_autoptr (PlGraph) d = node_graph ("HannWindow", 1, &four, 0, set_window, &(WindowAttrs) { 1, 8 }, &node);
  pl_test_expect_infer_error (d, "output_datatype 8");   /* strings */
}

/* --- MelWeightMatrix --------------------------------------------------------------- */

static PlTensor *
mel (int64_t bins, int64_t length, int64_t rate, double lower, double upper, guint32 mask, PlShape *inferred)
{
  g_autoptr (PlTensor) b = scalar_i64 (bins);
  g_autoptr (PlTensor) n = scalar_i64 (length);
  g_autoptr (PlTensor) r = scalar_i64 (rate);
  g_autoptr (PlTensor) lo = tensor (PL_DTYPE_F32, 0, NULL, PL_VALS (lower));
  g_autoptr (PlTensor) hi = tensor (PL_DTYPE_F32, 0, NULL, PL_VALS (upper));
  return run_one ("MelWeightMatrix", 5, (PlTensor *[]) { b, n, r, lo, hi }, mask, NULL, NULL, inferred);
}

/* 3 mel bins of a DFT of 32 at 1000 Hz from 0 to 500 Hz: 5 edges evenly
 * spaced in mel (2595 log10(1 + f / 700): 0 to 607.4, steps of 121.5) are
 * 0, 79.7, 168.4, 267.3, 377.4 Hz, at DFT bins floor(33 f / 1000) = 0, 2,
 * 5, 8, 12 — the triangles 0-2-5, 2-5-8 and 5-8-12 over 17 bins (numpy,
 * with the ONNX reference). */
static void
test_mel_weight_matrix (void)
{
  const double t = 1.0 / 3, u = 2.0 / 3;
  const double want[17 * 3] = {
    0,   0, 0,
    0.5, 0, 0,
    1,   0, 0,
    u,   t, 0,
    t,   u, 0,
    0,   1, 0,
    0,   u, t,
    0,   t, u,
    0,   0, 1,
    0,   0, 0.75,
    0,   0, 0.5,
    0,   0, 0.25,   /* and 5 rows of zeros */
  };
  PlShape inferred;
  for (guint32 mask = 0; mask <= 31; mask += 31)
    {
      g_autoptr (PlTensor) m = mel (3, 32, 1000, 0, 500, mask, &inferred);
      g_assert_cmpint (m->dtype, ==, PL_DTYPE_F32);
      g_assert_cmpint (m->dims[0], ==, 17);
      g_assert_cmpint (m->dims[1], ==, 3);
      g_assert_cmpint (pl_shape_is_static (&inferred), ==, mask != 0);
      assert_near (g_steal_pointer (&m), 17 * 3, want, 1e-6);
    }
  /* two bins whose edges 0, 0, 1, 4 make the first a spike at bin 0 */
  assert_near (mel (2, 16, 16000, 0, 8000, 0, NULL), 9 * 2,
               PL_VALS (1, 0, 0, 1, 0, 2.0 / 3, 0, 1.0 / 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), 1e-6);
}

static void
test_mel_errors (void)
{
  /* an upper edge past the Nyquist frequency: the edges at 4648 Hz and up map past the last of the
   * 9 bins (17 * 4648.3 // 8192 = 9) */
  g_autoptr (PlTensor) b = scalar_i64 (8);
  g_autoptr (PlTensor) n = scalar_i64 (16);
  g_autoptr (PlTensor) r = scalar_i64 (8192);
  g_autoptr (PlTensor) lo = tensor (PL_DTYPE_F32, 0, NULL, PL_VALS (0));
  g_autoptr (PlTensor) hi = tensor (PL_DTYPE_F32, 0, NULL, PL_VALS (8192));
  PlTensor *ins[] = { b, n, r, lo, hi };
  PlNode *node = NULL;
  g_autoptr (PlGraph) a = node_graph ("MelWeightMatrix", 5, ins, 0, NULL, NULL, &node);
  pl_test_expect_run_error (a, ins, 0, "node 'node' (MelWeightMatrix): the band edge at 4648.34 Hz falls "
                            "outside the 9 bins of a DFT of 16 at 8192 Hz");
  /* no mel bins */
  g_autoptr (PlTensor) none = scalar_i64 (0);
  g_autoptr (PlGraph) c = node_graph ("MelWeightMatrix", 5, (PlTensor *[]) { none, n, r, lo, hi }, 1, NULL, NULL,
                                      &node);
  pl_test_expect_infer_error (c, "num_mel_bins must be at least 1, not 0");
}

/* --- on a backend ------------------------------------------------------------------ */

/* A mel spectrogram compiled for the cpu: the STFT and the mel matrix run
 * as reference fallbacks between generated kernels and give the
 * reference's results. The mel bins are an input, so the matrix is not
 * folded to a constant. */
static void
test_cpu_fallback (void)
{
  if (!pl_backend_available (PL_BACKEND_CPU, NULL))
    {
      g_test_skip ("no cpu backend");
      return;
    }
  g_autoptr (PlGraph) g = pl_test_parse (
    "graph s opset 17 {\n"
    "  input x: f32[1, 64, 1]\n"
    "  input bins: i64[]\n"
    "  const step: i64[] = 8\n"
    "  const n: i64[] = 16\n"
    "  const rate: i64[] = 8000\n"
    "  const lo: f32[] = 0\n"
    "  const hi: f32[] = 4000\n"
    "  e = Exp(x)\n"
    "  w: f32[16] = HannWindow(n)\n"
    "  s: f32[1, 7, 9, 2] = STFT(e, step, w)\n"
    "  p = Mul(s, s)\n"
    "  power = ReduceSum(p) {axes=[3], keepdims=0}\n"
    "  m: f32[9, 4] = MelWeightMatrix(bins, n, rate, lo, hi)\n"
    "  y = MatMul(power, m)\n"
    "  output y\n}\n");
  g_autoptr (PlTensor) x = pl_test_random (PL_DTYPE_F32, 3, PL_DIMS (1, 64, 1), 1, -1, 1);
  g_autoptr (PlTensor) bins = scalar_i64 (4);
  int n_kernels;
  int fallbacks = pl_test_backend_fallbacks (g, "simplify,fuse-library,fuse-loops", PL_BACKEND_CPU,
                                             (PlTensor *[]) { x, bins }, 1e-5, 1e-5, &n_kernels);
  /* STFT and MelWeightMatrix; simplify folds the window of a constant size; Exp, Mul + ReduceSum and
   * MatMul are generated or library kernels */
  g_assert_cmpint (fallbacks, ==, 2);
  g_assert_cmpint (n_kernels, ==, 5);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  pl_ops_init ();
  g_test_add_func ("/Passlab/Signal/dft", test_dft);
  g_test_add_func ("/Passlab/Signal/dft-length", test_dft_length);
  g_test_add_func ("/Passlab/Signal/dft-round-trip", test_dft_round_trip);
  g_test_add_func ("/Passlab/Signal/dft-errors", test_dft_errors);
  g_test_add_func ("/Passlab/Signal/stft", test_stft);
  g_test_add_func ("/Passlab/Signal/stft-errors", test_stft_errors);
  g_test_add_func ("/Passlab/Signal/windows", test_windows);
  g_test_add_func ("/Passlab/Signal/window-errors", test_window_errors);
  g_test_add_func ("/Passlab/Signal/mel-weight-matrix", test_mel_weight_matrix);
  g_test_add_func ("/Passlab/Signal/mel-errors", test_mel_errors);
  g_test_add_func ("/Passlab/Signal/cpu-fallback", test_cpu_fallback);
  return g_test_run ();
}

/* ops-signal.c — the signal-processing ops of opset 17: DFT, STFT, the
 * HannWindow, HammingWindow and BlackmanWindow generators and
 * MelWeightMatrix — their shape inference and reference evaluation. No
 * backend generates them: they are COMPUTE ops the backends run through
 * the reference fallback.
 *
 * Each follows the ONNX reference implementation (onnx/reference/ops/
 * op_dft.py, op_stft.py, op_hann_window.py and its siblings,
 * op_mel_weight_matrix.py), including where it is looser than the spec:
 *
 *  - DFT transforms dft_length points along `axis`: the signal is cropped
 *    or zero-padded to that length first (numpy's fft(x, n)), and onesided
 *    then keeps the first dft_length / 2 + 1 outputs, for a complex input
 *    and for the inverse too. The inverse divides by dft_length.
 *  - STFT cuts frames of the window's length every frame_step samples (the
 *    last ones zero-padded past the signal's end), weights them by the
 *    window and transforms each with a DFT of frame_length points; the
 *    frame count is 1 + (signal_length - frame_length) / frame_step.
 *  - MelWeightMatrix maps the mel-spaced band edges to whole DFT bins with
 *    numpy's floor division and builds the triangles on those bins.
 *
 * A symmetric (periodic=0) window of one sample is [1], as torch's windows
 * (which the spec cites) give, where the formula divides 0 by 0.
 *
 * The transforms run in double: a radix-2 FFT when dft_length is a power
 * of two, the direct O(n^2) sum otherwise (a reference, not a fast path).
 *
 * The windows' and MelWeightMatrix's sizes, and DFT's and STFT's lengths,
 * are input values: inference knows those dims when the inputs are
 * constants, and leaves them unknown otherwise (as Range does).
 */
#define G_LOG_DOMAIN "passlab"

#include <math.h>
#include <string.h>

#include "ops-nn-private.h"
#include "ops-shape-private.h"

static const PlDType float_types[] = { PL_DTYPE_F32, PL_DTYPE_F16, PL_DTYPE_BF16, PL_DTYPE_F64, PL_DTYPE_UNDEFINED };
static const PlDType index_types[] = { PL_DTYPE_I32, PL_DTYPE_I64, PL_DTYPE_UNDEFINED };

/* --- scalar inputs ----------------------------------------------------------------- */

/* Input i's tensor: the run-time one at evaluation (inputs not NULL), a
 * constant's at inference. NULL when omitted or not known. */
static const PlTensor *
input_tensor (const PlNode *node, PlTensor *const *inputs, int i)
{
  if (!pl_input (node, i))
    return NULL;
  return inputs ? inputs[i] : pl_input_constant (node, i);
}

/* Input i (named `what` in errors) as one number. 1 with *v set; 0 when
 * the input is omitted; -1 when its value is not known (inference of a
 * non-constant input); -2 with an error unless it holds one value. */
static int
scalar_input (const PlNode *node, PlTensor *const *inputs, int i, const char *what, double *v, GError **error)
{
  const PlValue *val = pl_input (node, i);
  if (!val)
    return 0;
  const PlTensor *t = input_tensor (node, inputs, i);
  int64_t numel = t ? t->numel : pl_shape_numel (&val->shape);   /* -1: not known either */
  if (numel >= 0 && numel != 1)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "%s must hold one value, not %" G_GINT64_FORMAT, what, numel);
      return -2;
    }
  if (!t)
    return -1;
  *v = pl_tensor_get_f64 (t, 0);
  return 1;
}

/* The same for an integer input, which must be at least `least`. */
static int
count_input (const PlNode *node, PlTensor *const *inputs, int i, const char *what, int64_t least, int64_t *v,
             GError **error)
{
  double d = 0;
  int got = scalar_input (node, inputs, i, what, &d, error);
  if (got <= 0)
    return got;
  *v = pl_tensor_get_i64 (input_tensor (node, inputs, i), 0);
  if (*v < least)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "%s must be at least %" G_GINT64_FORMAT ", not %" G_GINT64_FORMAT,
                   what, least, *v);
      return -2;
    }
  return 1;
}

/* The output_datatype attribute (default f32) of the generators. */
static bool
output_dtype (const PlNode *node, PlDType *dtype, GError **error)
{
  int64_t code = pl_node_attr_int (node, "output_datatype", 1);
  *dtype = pl_dtype_from_onnx ((int) code);
  if (*dtype == PL_DTYPE_UNDEFINED || *dtype == PL_DTYPE_BOOL)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "output_datatype %" G_GINT64_FORMAT, code);
      return false;
    }
  return true;
}

/* A static dim of n, or unknown when n < 0. */
static PlDim
dim_or_unknown (int64_t n)
{
  return n >= 0 ? pl_dim_static (n) : pl_dim_unknown ();
}

/* --- the transform ----------------------------------------------------------------- */

/* One complex transform of n points, reused for every line: the twiddles
 * e^(sign 2 pi i j / n) and the line in re, im (transformed in place); all
 * in one block. */
typedef struct {
  int64_t n;
  bool    inverse;
  double *cos, *sin;        /* n twiddles, sin with the transform's sign */
  double *re, *im;          /* the line */
  double *out_re, *out_im;  /* the direct sum's result (n not a power of two) */
} Transform;

static bool
transform_init (Transform *t, int64_t n, bool inverse, GError **error)
{
  double *block = g_try_new (double, 6 * n);

  *t = (Transform) { .n = n, .inverse = inverse };
  if (!block)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_OVERFLOW, "a DFT of %" G_GINT64_FORMAT " points does not fit in memory", n);
      return false;
    }
  t->cos = block, t->sin = block + n, t->re = block + 2 * n, t->im = block + 3 * n;
  t->out_re = block + 4 * n, t->out_im = block + 5 * n;
  for (int64_t j = 0; j < n; j++)
    {
      double a = 2 * G_PI * (double) j / (double) n;
      t->cos[j] = cos (a);
      t->sin[j] = inverse ? sin (a) : -sin (a);
    }
  return true;
}

static void
transform_clear (Transform *t)
{
  g_free (t->cos);
}

/* In-place iterative radix-2 FFT (n a power of two): bit-reversal
 * permutation, then butterflies of doubling span. */
static void
fft_radix2 (Transform *t)
{
  const int64_t n = t->n;
  double *re = t->re, *im = t->im;

  for (int64_t i = 1, j = 0; i < n; i++)
    {
      int64_t bit = n >> 1;
      for (; j & bit; bit >>= 1)
        j ^= bit;
      j |= bit;
      if (i < j)
        {
          double r = re[i], m = im[i];
          re[i] = re[j], im[i] = im[j];
          re[j] = r, im[j] = m;
        }
    }
  for (int64_t span = 2; span <= n; span <<= 1)
    for (int64_t start = 0; start < n; start += span)
      for (int64_t k = 0; k < span / 2; k++)
        {
          int64_t a = start + k, b = a + span / 2, w = k * (n / span);
          double br = re[b] * t->cos[w] - im[b] * t->sin[w], bi = re[b] * t->sin[w] + im[b] * t->cos[w];
          re[b] = re[a] - br, im[b] = im[a] - bi;
          re[a] += br, im[a] += bi;
        }
}

/* The direct sum X[k] = sum_j x[j] w^(j k), any n. */
static void
dft_direct (Transform *t)
{
  const int64_t n = t->n;
  for (int64_t k = 0; k < n; k++)
    {
      double sr = 0, si = 0;
      for (int64_t j = 0, w = 0; j < n; j++, w = (w + k) % n)
        {
          sr += t->re[j] * t->cos[w] - t->im[j] * t->sin[w];
          si += t->re[j] * t->sin[w] + t->im[j] * t->cos[w];
        }
      t->out_re[k] = sr, t->out_im[k] = si;
    }
  memcpy (t->re, t->out_re, n * sizeof (double));
  memcpy (t->im, t->out_im, n * sizeof (double));
}

/* Transforms the line in t->re, t->im in place; the inverse divides by n. */
static void
transform_run (Transform *t)
{
  if ((t->n & (t->n - 1)) == 0)
    fft_radix2 (t);
  else
    dft_direct (t);
  if (t->inverse)
    for (int64_t k = 0; k < t->n; k++)
      t->re[k] /= (double) t->n, t->im[k] /= (double) t->n;
}

/* --- DFT --------------------------------------------------------------------------- */

typedef struct {
  int     axis;      /* the transformed axis, in [0, rank - 2] */
  int64_t length;    /* dft_length; -1 unknown */
  int64_t outputs;   /* kept along the axis: length, or length / 2 + 1 when onesided; -1 unknown */
  bool    inverse;
} DftPlan;

/* x [..., 1 or 2]: the transform's axis and length and the output shape
 * (x's, with the axis resized and a last dim of 2). inputs: NULL at
 * inference. */
static bool
dft_plan (const PlNode *node, PlTensor *const *inputs, const PlShape *x, DftPlan *p, PlShape *out, GError **error)
{
  const int64_t axis = pl_node_attr_int (node, "axis", 1);
  const int r = x->rank;

  /* opset 20 moved axis to a third input (default -2); registered with it, so the message says so */
  if (pl_node_opset (node) >= 20 || node->n_inputs > 2)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "DFT of opset 20, with axis as an input");
      return false;
    }
  *p = (DftPlan) { .axis = -1, .length = -1, .outputs = -1,
                   .inverse = pl_node_attr_int (node, "inverse", 0) != 0 };
  int got = count_input (node, inputs, 1, "dft_length", 1, &p->length, error);
  if (got < -1)
    return false;
  if (r == PL_RANK_UNKNOWN)
    {
      *out = pl_shape_unknown ();
      return true;
    }
  PlDim last = r > 0 ? x->dims[r - 1] : pl_dim_static (0);
  if (r < 2 || (pl_dim_is_static (last) && last.size != 1 && last.size != 2))
    {
      g_autofree char *s = pl_shape_to_string (x);
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "the signal %s must end in a dim of 1 (real) or 2 (complex)", s);
      return false;
    }
  /* the last dim holds the real and imaginary parts: it is no axis of the signal */
  if (axis < -r || axis > r - 2 || axis == -1)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "axis %" G_GINT64_FORMAT " is outside the signal's axes "
                   "[%d, -2] and [0, %d]", axis, -r, r - 2);
      return false;
    }
  p->axis = (int) (axis < 0 ? axis + r : axis);
  PlDim along = x->dims[p->axis];
  if (got == 0 && pl_dim_is_static (along))
    {
      p->length = along.size;
      if (p->length == 0)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "a DFT of axis %d, which is empty", p->axis);
          return false;
        }
    }
  if (p->length >= 0)
    p->outputs = pl_node_attr_int (node, "onesided", 0) ? p->length / 2 + 1 : p->length;
  *out = *x;
  out->dims[p->axis] = dim_or_unknown (p->outputs);
  out->dims[r - 1] = pl_dim_static (2);
  return true;
}

static bool
dft_infer (PlNode *node, GError **error)
{
  DftPlan p;
  PlShape out;

  if (!pl_require_dtype (node, 0, float_types, error) || !pl_require_dtype (node, 1, index_types, error)
      || !dft_plan (node, NULL, &pl_input (node, 0)->shape, &p, &out, error))
    return false;
  pl_set_output (node, 0, pl_input (node, 0)->dtype, &out);
  return true;
}

/* x viewed as [outer, along, inner, parts] -> y [outer, p->outputs, inner, 2]:
 * each line along the axis cropped or zero-padded to the transform's length. */
static bool
dft_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0];
  PlShape sx = pl_tensor_shape (x), so;
  DftPlan p;
  Transform t;

  if (!dft_plan (node, inputs, &sx, &p, &so, error))
    return pl_exec_error (error);
  PlTensor *y = outputs[0] = pl_tensor_new_shape (x->dtype, &so, error);
  if (!y || !transform_init (&t, p.length, p.inverse, error))
    return false;
  const int64_t along = x->dims[p.axis], parts = x->dims[x->rank - 1];
  const int64_t outer = pl_dims_product (p.axis, x->dims);
  const int64_t inner = pl_dims_product (x->rank - p.axis - 2, x->dims + p.axis + 1);
  const int64_t used = MIN (along, p.length);
  g_autofree double *xv = pl_nn_load_f64 (x), *yv = g_new (double, MAX (y->numel, 1));

  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++)
      {
        memset (t.re, 0, p.length * sizeof (double));
        memset (t.im, 0, p.length * sizeof (double));
        for (int64_t j = 0; j < used; j++)
          {
            const double *v = xv + ((o * along + j) * inner + i) * parts;
            t.re[j] = v[0];
            t.im[j] = parts == 2 ? v[1] : 0;
          }
        transform_run (&t);
        for (int64_t k = 0; k < p.outputs; k++)
          {
            double *w = yv + ((o * p.outputs + k) * inner + i) * 2;
            w[0] = t.re[k], w[1] = t.im[k];
          }
      }
  transform_clear (&t);
  pl_nn_store_f64 (y, yv);
  return true;
}

/* --- STFT -------------------------------------------------------------------------- */

typedef struct {
  int64_t step;          /* frame_step; -1 unknown */
  int64_t length;        /* frame_length, the transform's length; -1 unknown */
  int64_t window;        /* the samples each frame takes: the window's length, else frame_length */
  int64_t frames;        /* -1 unknown */
  int64_t outputs;       /* per frame: length, or length / 2 + 1 when onesided; -1 unknown */
} StftPlan;

/* signal [batch, signal_length, 1 or 2], frame_step, window [window_length]
 * and frame_length -> [batch, frames, outputs, 2]. */
static bool
stft_plan (const PlNode *node, PlTensor *const *inputs, const PlShape *x, const PlShape *window, StftPlan *p,
           PlShape *out, GError **error)
{
  *p = (StftPlan) { -1, -1, -1, -1, -1 };
  if (count_input (node, inputs, 1, "frame_step", 1, &p->step, error) < -1)
    return false;
  int has_length = count_input (node, inputs, 3, "frame_length", 1, &p->length, error);
  if (has_length < -1)
    return false;
  if (x->rank != PL_RANK_UNKNOWN
      && (x->rank != 3 || (pl_dim_is_static (x->dims[2]) && x->dims[2].size != 1 && x->dims[2].size != 2)))
    {
      g_autofree char *s = pl_shape_to_string (x);
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "the signal must be [batch, signal_length, 1 or 2], not %s", s);
      return false;
    }
  if (window && window->rank != PL_RANK_UNKNOWN && window->rank != 1)
    {
      g_autofree char *s = pl_shape_to_string (window);
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "the window must have rank 1, not %s", s);
      return false;
    }
  int64_t signal = x->rank == 3 && pl_dim_is_static (x->dims[1]) ? x->dims[1].size : -1;
  if (window && window->rank == 1 && pl_dim_is_static (window->dims[0]))
    p->window = window->dims[0].size;
  if (has_length == 0)
    p->length = window ? p->window : signal;
  if (!window)
    p->window = p->length;
  if (p->length == 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "a frame of no samples");
      return false;
    }
  if (signal >= 0 && p->length > signal)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "the signal of %" G_GINT64_FORMAT " samples is shorter than "
                   "a frame of %" G_GINT64_FORMAT, signal, p->length);
      return false;
    }
  if (signal >= 0 && p->length > 0 && p->step > 0)
    p->frames = 1 + (signal - p->length) / p->step;
  if (p->length > 0)
    p->outputs = pl_node_attr_int (node, "onesided", 1) ? p->length / 2 + 1 : p->length;
  *out = (PlShape) { .rank = 4, .dims = { pl_dim_unknown (), dim_or_unknown (p->frames),
                                          dim_or_unknown (p->outputs), pl_dim_static (2) } };
  if (x->rank == 3)
    out->dims[0] = x->dims[0];
  return true;
}

static bool
stft_infer (PlNode *node, GError **error)
{
  const PlValue *x = pl_input (node, 0), *window = pl_input (node, 2);
  StftPlan p;
  PlShape out;

  if (!pl_require_dtype (node, 0, float_types, error) || !pl_require_dtype (node, 1, index_types, error)
      || !pl_require_dtype (node, 3, index_types, error)
      || !stft_plan (node, NULL, &x->shape, window ? &window->shape : NULL, &p, &out, error))
    return false;
  if (window && window->dtype != x->dtype)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "the window is %s, the signal %s",
                   pl_dtype_name (window->dtype), pl_dtype_name (x->dtype));
      return false;
    }
  pl_set_output (node, 0, x->dtype, &out);
  return true;
}

/* Frame f of batch b takes the window's length of samples from f * step
 * (zeros past the signal's end), weighted by the window, into a transform
 * of frame_length points (cropped or zero-padded). */
static bool
stft_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0], *window = node->n_inputs > 2 ? inputs[2] : NULL;
  PlShape sx = pl_tensor_shape (x), sw = window ? pl_tensor_shape (window) : pl_shape_unknown (), so;
  StftPlan p;
  Transform t;

  if (!stft_plan (node, inputs, &sx, window ? &sw : NULL, &p, &so, error))
    return pl_exec_error (error);
  PlTensor *y = outputs[0] = pl_tensor_new_shape (x->dtype, &so, error);
  if (!y || !transform_init (&t, p.length, false, error))
    return false;
  const int64_t signal = x->dims[1], parts = x->dims[2], used = MIN (p.window, p.length);
  g_autofree double *xv = pl_nn_load_f64 (x), *yv = g_new (double, MAX (y->numel, 1));
  g_autofree double *wv = window ? pl_nn_load_f64 (window) : NULL;

  for (int64_t b = 0; b < x->dims[0]; b++)
    for (int64_t f = 0; f < p.frames; f++)
      {
        memset (t.re, 0, p.length * sizeof (double));
        memset (t.im, 0, p.length * sizeof (double));
        for (int64_t j = 0, at = f * p.step; j < used && at + j < signal; j++)
          {
            const double *v = xv + (b * signal + at + j) * parts;
            double w = wv ? wv[j] : 1;
            t.re[j] = v[0] * w;
            t.im[j] = parts == 2 ? v[1] * w : 0;
          }
        transform_run (&t);
        for (int64_t k = 0; k < p.outputs; k++)
          {
            double *o = yv + ((b * p.frames + f) * p.outputs + k) * 2;
            o[0] = t.re[k], o[1] = t.im[k];
          }
      }
  transform_clear (&t);
  pl_nn_store_f64 (y, yv);
  return true;
}

/* --- HannWindow, HammingWindow, BlackmanWindow ------------------------------------- */

/* The generalized cosine window a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N)
 * of each op. */
static void
window_coefficients (PlOp op, double *a)
{
  switch (op)
    {
    case PL_OP_HannWindow:     a[0] = 0.5, a[1] = 0.5, a[2] = 0; break;
    case PL_OP_HammingWindow:  a[0] = 25.0 / 46.0, a[1] = 21.0 / 46.0, a[2] = 0; break;
    case PL_OP_BlackmanWindow: a[0] = 0.42, a[1] = 0.5, a[2] = 0.08; break;
    default:                   g_assert_not_reached ();
    }
}

static bool
window_infer (PlNode *node, GError **error)
{
  PlDType dtype;
  int64_t size = -1;

  if (!pl_require_dtype (node, 0, index_types, error) || !output_dtype (node, &dtype, error)
      || count_input (node, NULL, 0, "size", 0, &size, error) < -1)
    return false;
  PlShape out = { .rank = 1, .dims = { dim_or_unknown (size) } };
  pl_set_output (node, 0, dtype, &out);
  return true;
}

static bool
window_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  PlDType dtype;
  int64_t size = 0;
  double a[3];

  if (!output_dtype (node, &dtype, error))
    return false;
  if (count_input (node, inputs, 0, "size", 0, &size, error) < 0)
    return pl_exec_error (error);
  PlTensor *y = outputs[0] = pl_out_new (dtype, 1, &size, error);
  if (!y)
    return false;
  window_coefficients (node->op, a);
  /* periodic: one period of N samples, of which the window is the first; symmetric: N + 1 samples */
  const int64_t period = pl_node_attr_int (node, "periodic", 1) ? size : size - 1;
  for (int64_t n = 0; n < size; n++)
    {
      double phase = 2 * G_PI * (double) n / (double) period;
      pl_tensor_set_f64 (y, n, period > 0 ? a[0] - a[1] * cos (phase) + a[2] * cos (2 * phase) : 1);
    }
  return true;
}

/* --- MelWeightMatrix --------------------------------------------------------------- */

/* Python's a // b on doubles (numpy's npy_divmod): the floor of the exact
 * quotient, which floor (a / b) misses where a / b rounds up to an integer. */
static double
floor_divide (double a, double b)
{
  double mod = fmod (a, b), div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0))
    div -= 1;
  double fl = floor (div);
  return div - fl > 0.5 ? fl + 1 : fl;
}

static double
hertz_to_mel (double hz)
{
  return 2595 * log10 (1 + hz / 700);
}

/* num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz
 * -> [dft_length / 2 + 1, num_mel_bins]. */
static bool
mel_shape (const PlNode *node, PlTensor *const *inputs, int64_t *bins, int64_t *dft_length, PlShape *out,
           GError **error)
{
  double edge;
  *bins = *dft_length = -1;
  if (count_input (node, inputs, 0, "num_mel_bins", 1, bins, error) < -1
      || count_input (node, inputs, 1, "dft_length", 1, dft_length, error) < -1
      || count_input (node, inputs, 2, "sample_rate", 1, &(int64_t) { 0 }, error) < -1
      || scalar_input (node, inputs, 3, "lower_edge_hertz", &edge, error) < -1
      || scalar_input (node, inputs, 4, "upper_edge_hertz", &edge, error) < -1)
    return false;
  *out = (PlShape) { .rank = 2, .dims = { dim_or_unknown (*dft_length >= 0 ? *dft_length / 2 + 1 : -1),
                                          dim_or_unknown (*bins) } };
  return true;
}

static bool
mel_infer (PlNode *node, GError **error)
{
  PlDType dtype;
  int64_t bins, length;
  PlShape out;

  for (int i = 0; i < 5; i++)
    if (!pl_require_dtype (node, i, i < 3 ? index_types : float_types, error))
      return false;
  if (!output_dtype (node, &dtype, error) || !mel_shape (node, NULL, &bins, &length, &out, error))
    return false;
  pl_set_output (node, 0, dtype, &out);
  return true;
}

/* The bins + 2 band edges, evenly spaced in mel from the lower to the upper
 * edge (the step divides by bins + 2, as the reference does), as DFT bins;
 * each mel bin is a triangle rising from its left edge to 1 at its centre
 * and falling to its right edge. */
static bool
mel_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  PlDType dtype;
  int64_t bins, length;
  PlShape so;

  if (!output_dtype (node, &dtype, error))
    return false;
  if (!mel_shape (node, inputs, &bins, &length, &so, error))
    return pl_exec_error (error);
  const int64_t rate = pl_tensor_get_i64 (inputs[2], 0);
  PlTensor *y = outputs[0] = pl_tensor_new_shape (dtype, &so, error);
  if (!y)
    return false;
  const int64_t spectrum = length / 2 + 1;
  const double low = hertz_to_mel (pl_tensor_get_f64 (inputs[3], 0));
  const double high = hertz_to_mel (pl_tensor_get_f64 (inputs[4], 0));
  const double step = (high - low) / (double) (bins + 2);
  g_autofree int64_t *edge = g_try_new (int64_t, bins + 2);
  if (!edge)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_OVERFLOW, "%" G_GINT64_FORMAT " mel bins", bins);
      return false;
    }
  for (int64_t i = 0; i < bins + 2; i++)
    {
      double hz = 700 * (pow (10, ((double) i * step + low) / 2595) - 1);
      double at = floor_divide ((double) (length + 1) * hz, (double) rate);
      if (!(at >= 0 && at < (double) spectrum))
        {
          g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "the band edge at %g Hz falls outside the %" G_GINT64_FORMAT
                       " bins of a DFT of %" G_GINT64_FORMAT " at %" G_GINT64_FORMAT " Hz", hz, spectrum, length,
                       rate);
          return false;
        }
      edge[i] = (int64_t) at;
    }
  g_autofree double *yv = g_new0 (double, MAX (y->numel, 1));
  for (int64_t m = 0; m < bins; m++)
    {
      int64_t left = edge[m], centre = edge[m + 1], right = edge[m + 2];
      if (centre == left)
        yv[centre * bins + m] = 1;
      for (int64_t j = left; centre > left && j <= centre; j++)
        yv[j * bins + m] = (double) (j - left) / (double) (centre - left);
      for (int64_t j = centre; j < right; j++)
        yv[j * bins + m] = (double) (right - j) / (double) (right - centre);
    }
  pl_nn_store_f64 (y, yv);
  return true;
}

void
pl_ops_register_signal (void)
{
  static const PlOpEntry entries[] = {
    { PL_OP_DFT, 1, 3, 1, 1, dft_infer, dft_eval },
    { PL_OP_STFT, 2, 4, 1, 1, stft_infer, stft_eval },
    { PL_OP_HannWindow, 1, 1, 1, 1, window_infer, window_eval },
    { PL_OP_HammingWindow, 1, 1, 1, 1, window_infer, window_eval },
    { PL_OP_BlackmanWindow, 1, 1, 1, 1, window_infer, window_eval },
    { PL_OP_MelWeightMatrix, 5, 5, 1, 1, mel_infer, mel_eval },
  };
  pl_ops_register (entries, G_N_ELEMENTS (entries));
}

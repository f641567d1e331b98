/* ops-slice.c — ops that cut, join or replicate tensors: Concat, Split,
 * Slice, Pad, Tile, Expand, ReverseSequence. Registered through
 * pl_ops_register_shape (ops-shape.c), whose helpers (ops-shape-private.h)
 * they use: shapes are computed by one function shared by inference and
 * evaluation, and data moves as raw elements through strided views.
 */
#define G_LOG_DOMAIN "passlab"

#include <string.h>

#include "ops-shape-private.h"

/* --- Concat and Split ----------------------------------------------------- */

static bool
concat_shape (const PlNode *node, const PlShape *const *ins, int n, PlShape *out, GError **error)
{
  int rank = PL_RANK_UNKNOWN, a;
  int64_t sum = 0;
  bool sum_known = true;

  for (int i = 0; i < n; i++)
    {
      if (ins[i]->rank == PL_RANK_UNKNOWN)
        continue;
      if (rank != PL_RANK_UNKNOWN && ins[i]->rank != rank)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "inputs have ranks %d and %d",
                       rank, ins[i]->rank);
          return false;
        }
      rank = ins[i]->rank;
    }
  *out = pl_shape_unknown ();
  if (rank == PL_RANK_UNKNOWN)
    return true;
  if (!pl_normalize_axis (pl_node_attr_int (node, "axis", 0), rank, &a, error))
    return false;
  *out = pl_rank_shape (rank);
  for (int i = 0; i < n; i++)
    {
      const PlShape *s = ins[i];
      if (s->rank == PL_RANK_UNKNOWN)
        {
          sum_known = false;
          continue;
        }
      for (int k = 0; k < rank; k++)
        {
          PlDim d = s->dims[k], *o = &out->dims[k];
          if (k == a)
            sum_known = sum_known && pl_dim_is_static (d) && d.size <= PL_MAX_NUMEL
                        && pl_mul_overflow (1, sum + d.size, &sum);
          else if (pl_dim_is_static (d) && pl_dim_is_static (*o) && d.size != o->size)
            {
              g_autofree char *x = pl_shape_to_string (ins[0]);
              g_autofree char *y = pl_shape_to_string (s);
              g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "input %d %s does not match input "
                           "shapes before it (%s) outside axis %d", i, y, x, a);
              return false;
            }
          else if (i == 0 || (pl_dim_is_static (d) && !pl_dim_is_static (*o)))
            *o = d;
          else if (!pl_dim_is_static (*o) && d.sym != NULL && !pl_dim_equal (d, *o))
            *o = o->sym == NULL ? d : pl_dim_unknown ();  /* two names for one size */
        }
    }
  out->dims[a] = sum_known ? pl_dim_static (sum) : pl_dim_unknown ();
  return true;
}

static bool
infer_concat (PlNode *node, GError **error)
{
  g_autofree const PlShape **ins = g_new0 (const PlShape *, node->n_inputs + 1);
  PlDType dtype = PL_DTYPE_UNDEFINED;
  PlShape out;
  int n = 0;

  for (int i = 0; i < node->n_inputs; i++)
    {
      PlValue *v = pl_input (node, i);
      if (v == NULL)
        continue;
      if (dtype != PL_DTYPE_UNDEFINED && v->dtype != PL_DTYPE_UNDEFINED && v->dtype != dtype)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "inputs have dtypes %s and %s",
                       pl_dtype_name (dtype), pl_dtype_name (v->dtype));
          return false;
        }
      if (v->dtype != PL_DTYPE_UNDEFINED)
        dtype = v->dtype;
      ins[n++] = &v->shape;
    }
  if (!concat_shape (node, ins, n, &out, error))
    return false;
  pl_set_output (node, 0, dtype, &out);
  return true;
}

static bool
eval_concat (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  int m = node->n_inputs;
  g_autofree PlShape *shapes = g_new0 (PlShape, m + 1);
  g_autofree const PlShape **ins = g_new0 (const PlShape *, m + 1);
  g_autofree const PlTensor **ts = g_new0 (const PlTensor *, m + 1);
  int n = 0, a;
  PlShape out;
  int64_t outer = 1, inner = 1;
  size_t esize;
  char *d;

  for (int i = 0; i < m; i++)
    if (inputs[i] != NULL)
      {
        if (n > 0 && inputs[i]->dtype != ts[0]->dtype)
          {
            g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "inputs have dtypes %s and %s",
                         pl_dtype_name (ts[0]->dtype), pl_dtype_name (inputs[i]->dtype));
            return false;
          }
        ts[n] = inputs[i];
        shapes[n] = pl_tensor_shape (inputs[i]);
        ins[n] = &shapes[n];
        n++;
      }
  if (n == 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "no inputs");
      return false;
    }
  if (!concat_shape (node, ins, n, &out, error))
    return pl_exec_error (error);
  outputs[0] = pl_tensor_new_shape (ts[0]->dtype, &out, error);
  if (outputs[0] == NULL)
    return false;
  pl_normalize_axis (pl_node_attr_int (node, "axis", 0), out.rank, &a, NULL);
  for (int k = 0; k < a; k++)
    outer *= outputs[0]->dims[k];
  for (int k = a + 1; k < out.rank; k++)
    inner *= outputs[0]->dims[k];
  esize = pl_dtype_size (ts[0]->dtype);
  d = outputs[0]->data;
  for (int64_t o = 0; o < outer; o++)
    for (int i = 0; i < n; i++)
      {
        size_t block = (size_t) (ts[i]->dims[a] * inner) * esize;
        memcpy (d, (const char *) ts[i]->data + o * block, block);
        d += block;
      }
  return true;
}

/* The sizes of Split's parts along the axis: from the `split` attribute
 * (before opset 13) or input, else equal parts. Returns the part count, or
 * -1 with an error; sizes[i] -1 when unknown. */
static int
split_sizes (const PlNode *node, PlTensor *const *inputs, PlDim dim, int64_t *sizes,
             GError **error)
{
  g_autofree int64_t *split = NULL;
  int n, parts = node->n_outputs;
  int found = pl_ints_attr_or_input (node, inputs, "split", 1, 13, &split, &n);

  if (found == 1)
    {
      int64_t sum = 0;
      if (n != parts)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "split has %d entries for %d outputs",
                       n, parts);
          return -1;
        }
      for (int i = 0; i < n; i++)
        {
          if (split[i] < 0 || split[i] > PL_MAX_NUMEL || !pl_mul_overflow (1, sum + split[i], &sum))
            {
              g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "invalid split size %"
                           G_GINT64_FORMAT, split[i]);
              return -1;
            }
          sizes[i] = split[i];
        }
      if (pl_dim_is_static (dim) && sum != dim.size)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "split sizes add up to %"
                       G_GINT64_FORMAT ", not the axis size %" G_GINT64_FORMAT, sum, dim.size);
          return -1;
        }
      return parts;
    }
  for (int i = 0; i < parts; i++)
    sizes[i] = -1;
  if (found == 0 && pl_dim_is_static (dim))
    {
      if (dim.size % parts != 0)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "axis size %" G_GINT64_FORMAT
                       " does not split into %d equal parts", dim.size, parts);
          return -1;
        }
      for (int i = 0; i < parts; i++)
        sizes[i] = dim.size / parts;
    }
  return parts;
}

static bool
infer_split (PlNode *node, GError **error)
{
  PlValue *x = pl_input (node, 0);
  int64_t sizes[256];
  int a;

  if (node->n_outputs > (int) G_N_ELEMENTS (sizes))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "more than %d outputs",
                   (int) G_N_ELEMENTS (sizes));
      return false;
    }
  if (x->shape.rank == PL_RANK_UNKNOWN)
    {
      PlShape u = pl_shape_unknown ();
      for (int i = 0; i < node->n_outputs; i++)
        pl_set_output (node, i, x->dtype, &u);
      return true;
    }
  if (!pl_normalize_axis (pl_node_attr_int (node, "axis", 0), x->shape.rank, &a, error)
      || split_sizes (node, NULL, x->shape.dims[a], sizes, error) < 0)
    return false;
  for (int i = 0; i < node->n_outputs; i++)
    {
      PlShape out = x->shape;
      out.dims[a] = sizes[i] >= 0 ? pl_dim_static (sizes[i]) : pl_dim_unknown ();
      pl_set_output (node, i, x->dtype, &out);
    }
  return true;
}

static bool
eval_split (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0];
  int64_t sizes[256], outer = 1, inner = 1, offset = 0;
  size_t esize = pl_dtype_size (x->dtype);
  int a;

  if (node->n_outputs > (int) G_N_ELEMENTS (sizes)
      || !pl_normalize_axis (pl_node_attr_int (node, "axis", 0), x->rank, &a, error)
      || split_sizes (node, inputs, pl_dim_static (x->dims[a]), sizes, error) < 0)
    {
      if (error != NULL && *error == NULL)
        g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "too many outputs");
      return pl_exec_error (error);
    }
  for (int k = 0; k < a; k++)
    outer *= x->dims[k];
  for (int k = a + 1; k < x->rank; k++)
    inner *= x->dims[k];
  for (int i = 0; i < node->n_outputs; i++)
    {
      int64_t dims[PL_MAX_RANK];
      memcpy (dims, x->dims, sizeof dims);
      dims[a] = sizes[i];
      outputs[i] = pl_out_new (x->dtype, x->rank, dims, error);
      if (outputs[i] == NULL)
        return false;
      for (int64_t o = 0; o < outer; o++)
        memcpy ((char *) outputs[i]->data + (size_t) (o * sizes[i] * inner) * esize,
                (const char *) x->data + (size_t) ((o * x->dims[a] + offset) * inner) * esize,
                (size_t) (sizes[i] * inner) * esize);
      offset += sizes[i];
    }
  return true;
}

/* --- Slice ---------------------------------------------------------------- */

typedef struct {
  int64_t start, step, len;  /* per axis, after ONNX clamping */
  bool    sliced;
} SliceAxis;

/* ONNX Slice clamping of one axis of size dim (numpy semantics). */
static void
slice_clamp (int64_t dim, int64_t start, int64_t end, int64_t step, SliceAxis *sa)
{
  if (start < 0)
    start += dim;
  if (end < 0)
    end += dim;
  if (step > 0)
    {
      start = CLAMP (start, 0, dim);
      end = CLAMP (end, 0, dim);
      sa->len = end > start ? (end - start - 1) / step + 1 : 0;
    }
  else
    {
      start = CLAMP (start, 0, dim - 1);
      end = CLAMP (end, -1, dim - 1);
      sa->len = start > end ? (end - start + 1) / step + 1 : 0;
    }
  sa->start = start;
  sa->step = step;
  sa->sliced = true;
}

typedef struct {
  int64_t *starts, *ends, *axes, *steps;
  int      n, n_axes, n_steps;
} SliceSpec;

static void
slice_spec_clear (SliceSpec *s)
{
  g_free (s->starts);
  g_free (s->ends);
  g_free (s->axes);
  g_free (s->steps);
}

/* Reads starts/ends/axes/steps from attributes (before opset 10) or inputs
 * (constants at inference, tensors at run time). Returns 1; 0 when some
 * values are not known at inference (axes then known when n_axes >= 0);
 * -1 when starts or ends are missing. */
static int
slice_spec_read (const PlNode *node, PlTensor *const *inputs, SliceSpec *s)
{
  int n_ends = 0, r1, r2, r3, r4;

  memset (s, 0, sizeof *s);
  r1 = pl_ints_attr_or_input (node, inputs, "starts", 1, 10, &s->starts, &s->n);
  r2 = pl_ints_attr_or_input (node, inputs, "ends", 2, 10, &s->ends, &n_ends);
  r3 = pl_ints_attr_or_input (node, inputs, "axes", 3, 10, &s->axes, &s->n_axes);
  r4 = pl_node_opset (node) >= 10
       ? pl_ints_attr_or_input (node, inputs, "steps", 4, 10, &s->steps, &s->n_steps) : 0;
  if (r3 == -1)
    s->n_axes = -1;
  if (r3 == 0)
    s->n_axes = -2;  /* default axes */
  if (r1 == 0 || r2 == 0)
    return -1;
  if (r1 != 1 || r2 != 1 || r3 == -1 || r4 == -1)
    return 0;
  if (n_ends != s->n)
    s->n = -1;       /* reported by slice_shape */
  if (r4 == 0)
    s->n_steps = -2;
  return 1;
}

/* Output shape and per-axis clamped parameters (sa may be NULL). */
static bool
slice_shape (const PlShape *in, const SliceSpec *s, PlShape *out, SliceAxis *sa, GError **error)
{
  SliceAxis local[PL_MAX_RANK];
  bool seen[PL_MAX_RANK] = { false };

  if (sa == NULL)
    sa = local;
  if (s->n < 0 || (s->n_axes >= 0 && s->n_axes != s->n) || (s->n_steps >= 0 && s->n_steps != s->n))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "starts, ends, axes and steps differ in length");
      return false;
    }
  *out = *in;
  for (int k = 0; k < in->rank; k++)
    sa[k] = (SliceAxis) { 0, 1, in->dims[k].size, false };
  for (int i = 0; i < s->n; i++)
    {
      int a;
      int64_t step = s->n_steps >= 0 ? s->steps[i] : 1;
      PlDim d;
      if (!pl_normalize_axis (s->n_axes >= 0 ? s->axes[i] : i, in->rank, &a, error))
        return false;
      if (seen[a] || step == 0)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, step == 0 ? "step is 0"
                       : "axis %d is sliced twice", a);
          return false;
        }
      seen[a] = true;
      d = in->dims[a];
      if (pl_dim_is_static (d))
        {
          slice_clamp (d.size, s->starts[i], s->ends[i], step, &sa[a]);
          out->dims[a] = pl_dim_static (sa[a].len);
        }
      else if (!(s->starts[i] == 0 && step == 1 && s->ends[i] >= PL_MAX_NUMEL))
        out->dims[a] = pl_dim_unknown ();
    }
  return true;
}

static bool
infer_slice (PlNode *node, GError **error)
{
  PlValue *x = pl_input (node, 0);
  SliceSpec s;
  PlShape out = x->shape;
  bool ok = true;

  if (x->shape.rank != PL_RANK_UNKNOWN)
    {
      int known = slice_spec_read (node, NULL, &s);
      if (known < 0)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "missing starts or ends");
          ok = false;
        }
      else if (known == 1)
        ok = slice_shape (&x->shape, &s, &out, NULL, error);
      else if (s.n_axes >= 0)
        {
          bool flags[PL_MAX_RANK];
          ok = pl_axes_to_flags (s.axes, s.n_axes, x->shape.rank, flags, error);
          for (int k = 0; ok && k < x->shape.rank; k++)
            if (flags[k])
              out.dims[k] = pl_dim_unknown ();
        }
      else
        out = pl_rank_shape (x->shape.rank);
      slice_spec_clear (&s);
    }
  if (ok)
    pl_set_output (node, 0, x->dtype, &out);
  return ok;
}

static bool
eval_slice (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0];
  SliceSpec s;
  SliceAxis sa[PL_MAX_RANK];
  PlShape in = pl_tensor_shape (x), out;
  int64_t strides[PL_MAX_RANK], offset = 0;
  bool ok;

  if (slice_spec_read (node, inputs, &s) != 1)
    {
      slice_spec_clear (&s);
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "missing starts or ends");
      return false;
    }
  ok = slice_shape (&in, &s, &out, sa, error);
  slice_spec_clear (&s);
  if (!ok)
    return pl_exec_error (error);
  outputs[0] = pl_tensor_new_shape (x->dtype, &out, error);
  if (outputs[0] == NULL)
    return false;
  pl_strides (x->rank, x->dims, strides);
  for (int k = 0; k < x->rank; k++)
    {
      offset += sa[k].start * strides[k];
      strides[k] *= sa[k].step;
    }
  pl_strided_copy (outputs[0]->data, x->data, pl_dtype_size (x->dtype), x->rank,
                outputs[0]->dims, strides, offset);
  return true;
}

bool
pl_slice_static_window (const PlNode *node, int64_t *start, int64_t *step)
{
  const PlValue *x = node->op == PL_OP_Slice && node->n_inputs > 0 ? node->inputs[0] : NULL;
  SliceSpec s;
  SliceAxis sa[PL_MAX_RANK];
  PlShape out;
  bool ok;

  if (!x || !pl_shape_is_static (&x->shape))
    return false;
  if (slice_spec_read (node, NULL, &s) != 1)
    {
      slice_spec_clear (&s);
      return false;
    }
  ok = slice_shape (&x->shape, &s, &out, sa, NULL);
  slice_spec_clear (&s);
  for (int k = 0; ok && k < x->shape.rank; k++)
    {
      start[k] = sa[k].start;
      step[k] = sa[k].step;
    }
  return ok;
}

/* --- Pad ------------------------------------------------------------------ */

/* pads (2 per padded axis: all begins, then all ends) spread over every axis
 * as begin[rank], end[rank]. Before opset 11 `pads` is an attribute; from 18
 * an `axes` input may pick the axes. found: as pl_ints_attr_or_input. */
static int
pad_read (const PlNode *node, PlTensor *const *inputs, int rank, int64_t *begin, int64_t *end,
          GError **error)
{
  g_autofree int64_t *pads = NULL, *axes = NULL;
  int n, n_axes = rank, found, found_axes = 0;

  found = pl_ints_attr_or_input (node, inputs, "pads", 1, 11, &pads, &n);
  if (found != 1)
    {
      if (found == 0)
        g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "missing pads");
      return found;
    }
  if (pl_node_opset (node) >= 11)
    found_axes = pl_ints_attr_or_input (node, inputs, "axes", 3, 11, &axes, &n_axes);
  if (found_axes == -1)
    return -1;
  if (found_axes == 0)
    n_axes = rank;
  if (n != 2 * n_axes)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "pads has %d entries for %d axes", n, n_axes);
      return 0;
    }
  memset (begin, 0, sizeof (int64_t) * PL_MAX_RANK);
  memset (end, 0, sizeof (int64_t) * PL_MAX_RANK);
  for (int i = 0; i < n_axes; i++)
    {
      int a = i;
      if (axes != NULL && !pl_normalize_axis (axes[i], rank, &a, error))
        return 0;
      if (pads[i] < -PL_MAX_NUMEL || pads[i] > PL_MAX_NUMEL || pads[i + n_axes] < -PL_MAX_NUMEL
          || pads[i + n_axes] > PL_MAX_NUMEL)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "pad too large");
          return 0;
        }
      begin[a] = pads[i];
      end[a] = pads[i + n_axes];
    }
  return 1;
}

static bool
pad_shape (const PlShape *in, const int64_t *begin, const int64_t *end, PlShape *out,
           GError **error)
{
  *out = *in;
  for (int k = 0; k < in->rank; k++)
    {
      if (begin[k] == 0 && end[k] == 0)
        continue;
      if (!pl_dim_is_static (in->dims[k]))
        {
          out->dims[k] = pl_dim_unknown ();
          continue;
        }
      if (in->dims[k].size + begin[k] + end[k] < 0)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "pads %" G_GINT64_FORMAT ", %"
                       G_GINT64_FORMAT " crop more than axis %d's size %" G_GINT64_FORMAT,
                       begin[k], end[k], k, in->dims[k].size);
          return false;
        }
      out->dims[k] = pl_dim_static (in->dims[k].size + begin[k] + end[k]);
    }
  return true;
}

static bool
infer_pad (PlNode *node, GError **error)
{
  PlValue *x = pl_input (node, 0);
  int64_t begin[PL_MAX_RANK], end[PL_MAX_RANK];
  PlShape out = x->shape;
  int found;

  if (x->shape.rank != PL_RANK_UNKNOWN)
    {
      found = pad_read (node, NULL, x->shape.rank, begin, end, error);
      if (found == 0 || (found == 1 && !pad_shape (&x->shape, begin, end, &out, error)))
        return false;
      if (found == -1)
        out = pl_rank_shape (x->shape.rank);
    }
  pl_set_output (node, 0, x->dtype, &out);
  return true;
}

bool
pl_pad_static (const PlNode *node, int64_t *begin, int64_t *end, double *fill, PlPadMode *mode)
{
  static const char *const modes[] = { "constant", "edge", "reflect", "wrap" };
  const PlValue *x = node->op == PL_OP_Pad && node->n_inputs > 0 ? node->inputs[0] : NULL;
  if (!x || !pl_shape_is_static (&x->shape) || pad_read (node, NULL, x->shape.rank, begin, end, NULL) != 1)
    return false;
  const char *m = pl_node_attr_string (node, "mode", "constant");
  int k = 0;
  while (k < (int) G_N_ELEMENTS (modes) && strcmp (m, modes[k]) != 0)
    k++;
  if (k == (int) G_N_ELEMENTS (modes))
    return false;
  *mode = (PlPadMode) k;
  *fill = 0;
  if (*mode != PL_PAD_CONSTANT)
    return true;
  if (pl_node_opset (node) < 11)
    {
      *fill = pl_node_attr_float (node, "value", 0.0f);
      return true;
    }
  const PlValue *v = node->n_inputs > 2 ? node->inputs[2] : NULL;
  const PlTensor *t = v ? pl_value_constant (v) : NULL;
  if (v && (!t || t->numel != 1))
    return false;
  *fill = t ? pl_tensor_get_f64 (t, 0) : 0;
  return true;
}

bool
pl_pad_static_constant (const PlNode *node, int64_t *begin, int64_t *end, double *fill)
{
  PlPadMode mode;
  return pl_pad_static (node, begin, end, fill, &mode) && mode == PL_PAD_CONSTANT;
}

int64_t
pl_pad_source_index (const char *mode, int64_t i, int64_t d)
{
  if (i >= 0 && i < d)
    return i;
  if (d == 0 || strcmp (mode, "constant") == 0)
    return -1;
  if (strcmp (mode, "edge") == 0)
    return i < 0 ? 0 : d - 1;
  if (strcmp (mode, "wrap") == 0)
    return ((i % d) + d) % d;
  /* reflect */
  if (d == 1)
    return 0;
  int64_t period = 2 * (d - 1);
  i = ((i % period) + period) % period;
  return i < d ? i : period - i;
}

static bool
eval_pad (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0];
  const char *mode = pl_node_attr_string (node, "mode", "constant");
  int64_t begin[PL_MAX_RANK], end[PL_MAX_RANK];
  int64_t *maps[PL_MAX_RANK] = { NULL };
  PlShape in = pl_tensor_shape (x), out;
  guint8 fill[8];
  bool ok = false;

  if (strcmp (mode, "constant") != 0 && strcmp (mode, "reflect") != 0
      && strcmp (mode, "edge") != 0 && strcmp (mode, "wrap") != 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "pad mode '%s'", mode);
      return false;
    }
  if (pad_read (node, inputs, x->rank, begin, end, error) != 1
      || !pad_shape (&in, begin, end, &out, error))
    return pl_exec_error (error);
  if (pl_node_opset (node) < 11)
    pl_scalar_bytes (x->dtype, NULL, pl_node_attr_float (node, "value", 0.0f), fill);
  else
    pl_scalar_bytes (x->dtype, node->n_inputs > 2 ? inputs[2] : NULL, 0.0, fill);
  outputs[0] = pl_tensor_new_shape (x->dtype, &out, error);
  if (outputs[0] == NULL)
    return false;
  for (int k = 0; k < x->rank; k++)
    {
      int64_t n = outputs[0]->dims[k];
      maps[k] = g_new (int64_t, n + 1);
      for (int64_t o = 0; o < n; o++)
        maps[k][o] = pl_pad_source_index (mode, o - begin[k], x->dims[k]);
      for (int64_t o = 0; o < n && strcmp (mode, "constant") != 0; o++)
        if (maps[k][o] < 0)
          {
            g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "cannot pad the empty axis %d in %s "
                         "mode", k, mode);
            goto out;
          }
    }
  pl_gather_axis_maps (outputs[0], x, maps, fill);
  ok = true;
out:
  for (int k = 0; k < x->rank; k++)
    g_free (maps[k]);
  if (!ok)
    g_clear_pointer (&outputs[0], pl_tensor_unref);
  return ok;
}

/* --- ReverseSequence ------------------------------------------------------ */

static bool
reverse_axes (const PlNode *node, int rank, int *time_axis, int *batch_axis, GError **error)
{
  int64_t t = pl_node_attr_int (node, "time_axis", 0), b = pl_node_attr_int (node, "batch_axis", 1);
  if (rank < 2 || t < 0 || t > 1 || b < 0 || b > 1 || t == b)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, rank < 2 ? "input must have rank >= 2"
                   : "time_axis and batch_axis must be 0 and 1 in some order");
      return false;
    }
  *time_axis = (int) t;
  *batch_axis = (int) b;
  return true;
}

static bool
infer_reverse_sequence (PlNode *node, GError **error)
{
  PlValue *x = pl_input (node, 0), *lens = pl_input (node, 1);
  int t, b;

  if (x->shape.rank != PL_RANK_UNKNOWN)
    {
      if (!reverse_axes (node, x->shape.rank, &t, &b, error))
        return false;
      if (lens->shape.rank == 1 && pl_dim_is_static (lens->shape.dims[0])
          && pl_dim_is_static (x->shape.dims[b])
          && lens->shape.dims[0].size != x->shape.dims[b].size)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "sequence_lens has %" G_GINT64_FORMAT
                       " entries for a batch of %" G_GINT64_FORMAT,
                       lens->shape.dims[0].size, x->shape.dims[b].size);
          return false;
        }
    }
  pl_set_output (node, 0, x->dtype, &x->shape);
  return true;
}

static bool
eval_reverse_sequence (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs,
                       GError **error)
{
  const PlTensor *x = inputs[0];
  int n, t, b;
  g_autofree int64_t *lens = pl_tensor_to_ints (inputs[1], &n);
  int64_t strides[PL_MAX_RANK], idx[PL_MAX_RANK] = { 0 };
  size_t esize = pl_dtype_size (x->dtype);

  if (!reverse_axes (node, x->rank, &t, &b, error))
    return pl_exec_error (error);
  if (n != x->dims[b])
    {
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "sequence_lens has %d entries for a batch of %"
                   G_GINT64_FORMAT, n, x->dims[b]);
      return false;
    }
  for (int i = 0; i < n; i++)
    if (lens[i] < 0 || lens[i] > x->dims[t])
      {
        g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "sequence length %" G_GINT64_FORMAT
                     " outside [0, %" G_GINT64_FORMAT "]", lens[i], x->dims[t]);
        return false;
      }
  outputs[0] = pl_out_new (x->dtype, x->rank, x->dims, error);
  if (outputs[0] == NULL)
    return false;
  pl_strides (x->rank, x->dims, strides);
  for (int64_t i = 0; i < x->numel; i++)
    {
      int64_t len = lens[idx[b]], src = i;
      if (idx[t] < len)
        src += (len - 1 - 2 * idx[t]) * strides[t];
      memcpy ((char *) outputs[0]->data + i * esize, (const char *) x->data + src * esize, esize);
      for (int k = x->rank - 1; k >= 0; k--)
        {
          if (++idx[k] < x->dims[k])
            break;
          idx[k] = 0;
        }
    }
  return true;
}

/* --- Tile and Expand ------------------------------------------------------ */

static bool
tile_shape (const PlShape *in, const int64_t *reps, int n, PlShape *out, GError **error)
{
  if (n != in->rank)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "repeats has %d entries for rank %d",
                   n, in->rank);
      return false;
    }
  *out = *in;
  for (int k = 0; k < n; k++)
    {
      int64_t p;
      if (reps[k] < 0)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "negative repeat %" G_GINT64_FORMAT,
                       reps[k]);
          return false;
        }
      if (reps[k] == 1)
        continue;
      if (!pl_dim_is_static (in->dims[k]))
        out->dims[k] = reps[k] == 0 ? pl_dim_static (0) : pl_dim_unknown ();
      else if (!pl_mul_overflow (in->dims[k].size, reps[k], &p))
        {
          g_set_error (error, PL_ERROR, PL_ERROR_OVERFLOW, "tiled size overflows");
          return false;
        }
      else
        out->dims[k] = pl_dim_static (p);
    }
  return true;
}

static bool
infer_tile (PlNode *node, GError **error)
{
  PlValue *x = pl_input (node, 0);
  g_autofree int64_t *reps = NULL;
  int n;
  PlShape out = x->shape;

  if (x->shape.rank != PL_RANK_UNKNOWN)
    {
      if (pl_input_const_ints (node, 1, &reps, &n))
        {
          if (!tile_shape (&x->shape, reps, n, &out, error))
            return false;
        }
      else
        out = pl_rank_shape (x->shape.rank);
    }
  pl_set_output (node, 0, x->dtype, &out);
  return true;
}

static bool
eval_tile (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0];
  int n;
  g_autofree int64_t *reps = pl_tensor_to_ints (inputs[1], &n);
  PlShape in = pl_tensor_shape (x), out;
  int64_t dims[PL_VIEW_MAX_RANK], strides[PL_VIEW_MAX_RANK], in_strides[PL_MAX_RANK];

  (void) node;
  if (!tile_shape (&in, reps, n, &out, error))
    return pl_exec_error (error);
  outputs[0] = pl_tensor_new_shape (x->dtype, &out, error);
  if (outputs[0] == NULL)
    return false;
  /* view the output as [r0, d0, r1, d1, ...] reading the input with stride 0 over r */
  pl_strides (x->rank, x->dims, in_strides);
  for (int k = 0; k < x->rank; k++)
    {
      dims[2 * k] = reps[k];
      dims[2 * k + 1] = x->dims[k];
      strides[2 * k] = 0;
      strides[2 * k + 1] = in_strides[k];
    }
  pl_strided_copy (outputs[0]->data, x->data, pl_dtype_size (x->dtype), 2 * x->rank, dims,
                strides, 0);
  return true;
}

static bool
infer_expand (PlNode *node, GError **error)
{
  PlValue *x = pl_input (node, 0);
  g_autofree int64_t *target = NULL;
  int n;
  PlShape out = pl_shape_unknown ();

  if (pl_input_const_ints (node, 1, &target, &n))
    {
      PlShape t;
      for (int i = 0; i < n; i++)
        if (target[i] < 0)
          {
            g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "negative dim %" G_GINT64_FORMAT
                         " in the target shape", target[i]);
            return false;
          }
      if (!pl_check_out_rank (n, error))
        return false;
      t = pl_shape_from_dims (n, target);
      if (x->shape.rank != PL_RANK_UNKNOWN && !pl_shape_broadcast (&x->shape, &t, &out, error))
        return false;
    }
  else if (x->shape.rank != PL_RANK_UNKNOWN && pl_input_length (node, 1) >= 0)
    out = pl_rank_shape (MAX (x->shape.rank, pl_input_length (node, 1)));
  pl_set_output (node, 0, x->dtype, &out);
  return true;
}

static bool
eval_expand (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0];
  int n, rank;
  g_autofree int64_t *target = pl_tensor_to_ints (inputs[1], &n);
  int64_t dims[PL_MAX_RANK], strides[PL_MAX_RANK];

  (void) node;
  for (int i = 0; i < n; i++)
    if (target[i] < 0)
      {
        g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "negative dim in the target shape");
        return false;
      }
  if (n > PL_MAX_RANK || !pl_broadcast_dims (x->rank, x->dims, n, target, &rank, dims, error))
    {
      if (n > PL_MAX_RANK)
        g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "target rank %d too large", n);
      return pl_exec_error (error);
    }
  outputs[0] = pl_out_new (x->dtype, rank, dims, error);
  if (outputs[0] == NULL)
    return false;
  pl_broadcast_strides (x->rank, x->dims, rank, dims, strides);
  pl_strided_copy (outputs[0]->data, x->data, pl_dtype_size (x->dtype), rank, dims, strides, 0);
  return true;
}

/* --- registration --------------------------------------------------------- */

void
pl_ops_register_slice (void)
{
  static const PlOpEntry entries[] = {
    { PL_OP_Concat, 1, -1, 1, 1, infer_concat, eval_concat },
    { PL_OP_Split, 1, 2, 1, -1, infer_split, eval_split },
    { PL_OP_Slice, 1, 5, 1, 1, infer_slice, eval_slice },
    { PL_OP_Pad, 1, 4, 1, 1, infer_pad, eval_pad },
    { PL_OP_Tile, 2, 2, 1, 1, infer_tile, eval_tile },
    { PL_OP_Expand, 2, 2, 1, 1, infer_expand, eval_expand },
    { PL_OP_ReverseSequence, 2, 2, 1, 1, infer_reverse_sequence, eval_reverse_sequence },
  };
  pl_ops_register (entries, G_N_ELEMENTS (entries));
}

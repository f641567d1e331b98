/* pool.c — generated pooling kernels, per layout (see pool.h).
 *
 * Geometry: the spatial dims are right-aligned in three (D, H, W; missing
 * ones have size 1, a 1-tap window and stride 0 in memory), as the
 * reference does, so one loop nest serves 1-, 2- and 3-d pools. Per output
 * coordinate o of a spatial dim, tap t reads input coordinate
 * o*s - pad_begin + t*dilation; the taps inside [0, in) form one range
 * (pl_pool_range, generated), and for count_include_pad the taps inside
 * [-pad_begin, in + pad_end) another: a window's count is the product of
 * the per-dim counts.
 *
 * The C kernel (names of the generated code in brackets):
 *
 *   omp parallel for collapse(4) over the output dims but the inner one
 *     tap ranges and counts of the spatial dims among them
 *     [max] yr[i] = x at the first tap inside (or -inf), for i in the inner range
 *     for each tap inside: omp simd for i: yr[i] = max (yr[i], x[tap + i*XI])   [avg: +=]
 *     [avg] yr[i] /= count
 *
 * Y's inner row is the accumulator (it stays in L1): gcc does not vectorize
 * a simd loop that holds the tap loops (measured: "loop nest containing two
 * or more consecutive inner loops cannot be vectorized"), but it does the
 * tap loops' inner loops. The inner dim is the layout's innermost: NHWC's
 * C and CHWN's N are read contiguously (XI = 1) and need no clipping; NCHW's
 * output width is read with the stride (XI = sw), and only its interior —
 * the points whose windows lie inside the row, found when generating — runs
 * the vector loops; the edge points run the scalar point function with
 * their own tap ranges. A global pool in NCHW reduces each contiguous plane
 * with `omp simd reduction` instead.
 *
 * The max starts from the first cell inside the window, not -inf, to agree
 * with the reference where that cell is NaN (core/ops-conv.c: `v > acc ||
 * best < 0`); the global max starts from -inf, as the reference's does.
 */
#define G_LOG_DOMAIN "passlab"
#include "pool.h"

#include "codegen.h"

#include <stdarg.h>
#include <string.h>

/* Work (outputs x taps) below this runs on one thread (as codegen-c.c's PARALLEL_MIN). */
#define PARALLEL_MIN 32768

/* --- the descriptor -------------------------------------------------------------------- */

bool
pl_pool_is_op (PlOp op)
{
  return op == PL_OP_MaxPool || op == PL_OP_AveragePool || op == PL_OP_GlobalAveragePool ||
         op == PL_OP_GlobalMaxPool;
}

/* The window attributes of a MaxPool/AveragePool (n spatial dims) into d;
 * pads resolved against d->in and d->out. */
static bool
read_window (const PlNode *node, PlPoolDesc *d, char **why)
{
  const int n = d->n;
  const int64_t *v;
  int k;
  if (!pl_node_attr_ints (node, "kernel_shape", &v, &k) || k != n)
    return (*why = g_strdup_printf ("%s without a kernel_shape of %d values", node->op_type, n)) == NULL;
  memcpy (d->kernel, v, sizeof (int64_t) * n);
  for (int i = 0; i < n; i++)
    d->strides[i] = d->dilations[i] = 1;
  if (pl_node_attr_ints (node, "strides", &v, &k) && k == n)
    memcpy (d->strides, v, sizeof (int64_t) * n);
  if (pl_node_attr_ints (node, "dilations", &v, &k) && k == n)
    memcpy (d->dilations, v, sizeof (int64_t) * n);
  const char *auto_pad = pl_node_attr_string (node, "auto_pad", "NOTSET");
  if (strcmp (auto_pad, "SAME_UPPER") == 0 || strcmp (auto_pad, "SAME_LOWER") == 0)
    for (int i = 0; i < n; i++)
      {
        /* as the reference resolves them (ops-conv.c, window_out) */
        int64_t dk = (d->kernel[i] - 1) * d->dilations[i] + 1;
        int64_t total = MAX (0, (d->out[i] - 1) * d->strides[i] + dk - d->in[i]);
        d->pads[i] = auto_pad[5] == 'U' ? total / 2 : total - total / 2;
        d->pads[n + i] = total - d->pads[i];
      }
  else if (strcmp (auto_pad, "NOTSET") == 0 && pl_node_attr_ints (node, "pads", &v, &k) && k == 2 * n)
    memcpy (d->pads, v, sizeof (int64_t) * 2 * n);
  else if (strcmp (auto_pad, "NOTSET") != 0 && strcmp (auto_pad, "VALID") != 0)
    return (*why = g_strdup_printf ("%s: unknown auto_pad '%s'", node->op_type, auto_pad)) == NULL;
  for (int i = 0; i < n; i++)
    if (d->kernel[i] < 1 || d->strides[i] < 1 || d->dilations[i] < 1 || d->pads[i] < 0 || d->pads[n + i] < 0)
      return (*why = g_strdup_printf ("%s: bad kernel, stride, dilation or pads", node->op_type)) == NULL;
  d->count_include_pad = node->op == PL_OP_AveragePool && pl_node_attr_int (node, "count_include_pad", 0) != 0;
  return true;
}

bool
pl_pool_desc_from_node (const PlNode *node, PlPoolDesc *d, char **why)
{
  memset (d, 0, sizeof *d);
  if (!pl_pool_is_op (node->op))
    return (*why = g_strdup_printf ("%s is not a pooling op", node->op_type)) == NULL;
  PlValue *x = node->n_inputs > 0 ? node->inputs[0] : NULL, *y = node->n_outputs > 0 ? node->outputs[0] : NULL;
  int64_t xd[PL_MAX_RANK], yd[PL_MAX_RANK];
  if (!x || !y || !pl_shape_get_dims (&x->shape, xd) || !pl_shape_get_dims (&y->shape, yd) ||
      x->shape.rank != y->shape.rank)
    return (*why = g_strdup_printf ("%s without static shapes", node->op_type)) == NULL;
  if (x->shape.rank < 3 || x->shape.rank > 2 + PL_POOL_MAX_SPATIAL)
    return (*why = g_strdup_printf ("%s of rank %d", node->op_type, x->shape.rank)) == NULL;
  if (x->dtype != PL_DTYPE_F32 && x->dtype != PL_DTYPE_F64)
    return (*why = g_strdup_printf ("%s of %s", node->op_type, pl_dtype_name (x->dtype))) == NULL;
  PlValue *indices = node->n_outputs > 1 ? node->outputs[1] : NULL;
  if (indices && (indices->n_uses > 0 || pl_value_is_output (indices)))
    return (*why = g_strdup ("MaxPool with its Indices output used")) == NULL;
  if (x->layout != y->layout)
    return (*why = g_strdup_printf ("%s with X in %s and Y in %s", node->op_type, pl_layout_name (x->layout),
                                    pl_layout_name (y->layout))) == NULL;
  d->kind = node->op == PL_OP_MaxPool || node->op == PL_OP_GlobalMaxPool ? PL_POOL_MAX : PL_POOL_AVERAGE;
  d->dtype = x->dtype;
  d->global = node->op == PL_OP_GlobalAveragePool || node->op == PL_OP_GlobalMaxPool;
  d->n = x->shape.rank - 2;
  d->batch = xd[0];
  d->channels = xd[1];
  d->layout = x->layout;
  if (yd[0] != xd[0] || yd[1] != xd[1])
    return (*why = g_strdup_printf ("%s: Y's batch or channels differ from X's", node->op_type)) == NULL;
  for (int i = 0; i < d->n; i++)
    {
      d->in[i] = xd[2 + i];
      d->out[i] = yd[2 + i];
      if (d->in[i] < 1 || d->out[i] < 1)
        return (*why = g_strdup_printf ("%s of an empty tensor", node->op_type)) == NULL;
      d->kernel[i] = d->in[i];   /* global; a window op reads its own below */
      d->strides[i] = d->dilations[i] = 1;
    }
  return d->global || read_window (node, d, why);
}

char *
pl_pool_describe (const PlPoolDesc *d)
{
  const char *kind = d->kind == PL_POOL_MAX ? "maxpool" : "avgpool";
  if (d->global)
    return g_strdup_printf ("global %s %s", kind, pl_layout_name (d->layout));
  GString *s = g_string_new (kind);
  bool strided = false, same = true, dilated = false;
  for (int i = 0; i < d->n; i++)
    {
      g_string_append_printf (s, "%s%" G_GINT64_FORMAT, i ? "x" : " ", d->kernel[i]);
      strided |= d->strides[i] != 1;
      same &= d->strides[i] == d->strides[0];
      dilated |= d->dilations[i] != 1;
    }
  for (int i = 0; strided && i < (same ? 1 : d->n); i++)
    g_string_append_printf (s, "%s%" G_GINT64_FORMAT, i ? "x" : "/", d->strides[i]);
  if (dilated)
    g_string_append (s, " dilated");
  if (d->count_include_pad)
    g_string_append (s, " pad-counted");
  g_string_append_printf (s, " %s", pl_layout_name (d->layout));
  return g_string_free (s, FALSE);
}

static int64_t
outputs (const PlPoolDesc *d)
{
  return d->batch * d->channels * pl_dims_product (d->n, d->out);
}

static int64_t
taps (const PlPoolDesc *d)
{
  return pl_dims_product (d->n, d->kernel);
}

int64_t
pl_pool_flops (const PlPoolDesc *d)
{
  return outputs (d) * taps (d);
}

int64_t
pl_pool_bytes (const PlPoolDesc *d)
{
  int64_t in = d->batch * d->channels;
  for (int i = 0; i < d->n; i++)
    in *= d->in[i];
  return (in + outputs (d)) * (int64_t) pl_dtype_size (d->dtype);
}

const char *
pl_pool_op_type (const PlPoolDesc *d)
{
  if (d->global)
    return d->kind == PL_POOL_MAX ? "GlobalMaxPool" : "GlobalAveragePool";
  return d->kind == PL_POOL_MAX ? "MaxPool" : "AveragePool";
}

void
pl_pool_set_attrs (const PlPoolDesc *d, PlNode *node)
{
  if (d->global)
    return;
  bool ceil = false, dilated = false;
  for (int i = 0; i < d->n; i++)
    {
      int64_t dk = (d->kernel[i] - 1) * d->dilations[i] + 1;
      ceil |= (d->in[i] + d->pads[i] + d->pads[d->n + i] - dk) / d->strides[i] + 1 < d->out[i];
      dilated |= d->dilations[i] != 1;
    }
  pl_node_set_attr_ints (node, "kernel_shape", d->kernel, d->n);
  pl_node_set_attr_ints (node, "strides", d->strides, d->n);
  pl_node_set_attr_ints (node, "pads", d->pads, 2 * d->n);
  if (dilated)
    pl_node_set_attr_ints (node, "dilations", d->dilations, d->n);
  if (ceil)
    pl_node_set_attr_int (node, "ceil_mode", 1);
  if (d->count_include_pad)
    pl_node_set_attr_int (node, "count_include_pad", 1);
}

/* --- geometry of the generated code ---------------------------------------------------- */

/* Logical dims of the generated code: n, c, then the spatial d, h, w. */
enum { DN, DC, DD, DH, DW, NDIMS };

/* Per logical dim: its coordinate in generated code, its output size, X's and Y's strides. */
static const char *const out_var[NDIMS] = { "n", "c", "od", "oh", "ow" };
static const char *const out_size[NDIMS] = { "P_N", "P_C", "P_OD", "P_OH", "P_OW" };
static const char *const x_stride[NDIMS] = { "P_XN", "P_XC", "P_XD", "P_XH", "P_XW" };
static const char *const y_stride[NDIMS] = { "P_YN", "P_YC", "P_YD", "P_YH", "P_YW" };
static const char *const sp_name[3] = { "D", "H", "W" };

/* The logical dims outermost first in the layout's memory order. */
static void
memory_order (const PlPoolDesc *d, int order[NDIMS])
{
  static const int orders[PL_LAYOUT_COUNT][NDIMS] = {
    [PL_LAYOUT_NCHW] = { DN, DC, DD, DH, DW },
    [PL_LAYOUT_NHWC] = { DN, DD, DH, DW, DC },   /* rank 4: D is 1 */
    [PL_LAYOUT_CHWN] = { DC, DD, DH, DW, DN },
  };
  memcpy (order, orders[d->layout < PL_LAYOUT_COUNT ? d->layout : PL_LAYOUT_NCHW], sizeof orders[0]);
}

/* Element strides of X (or Y) per logical dim; a missing spatial dim: 0. */
static void
strides5 (const PlPoolDesc *d, bool of_x, int64_t s[NDIMS])
{
  int64_t dims[PL_MAX_RANK] = { d->batch, d->channels }, st[PL_MAX_RANK];
  for (int i = 0; i < d->n; i++)
    dims[2 + i] = of_x ? d->in[i] : d->out[i];
  pl_layout_strides (d->layout, d->n + 2, dims, st);
  s[DN] = st[0];
  s[DC] = st[1];
  for (int j = 0; j < 3; j++)
    {
      int i = j - (3 - d->n);
      s[DD + j] = i >= 0 ? st[2 + i] : 0;
    }
}

/* Spatial dim j of the three (D, H, W) as desc dim i, or -1 when missing. */
static int
spatial (const PlPoolDesc *d, int j)
{
  int i = j - (3 - d->n);
  return i >= 0 ? i : -1;
}

static void
define (GString *o, const char *name, int64_t v)
{
  g_string_append_printf (o, "#define %s %" G_GINT64_FORMAT "\n", name, v);
}

/* The P_ macros of a kernel: sizes, windows, strides; P_T the element type. */
static void
define_all (GString *o, const PlPoolDesc *d)
{
  int64_t xs[NDIMS], ys[NDIMS];
  strides5 (d, true, xs);
  strides5 (d, false, ys);
  g_string_append_printf (o, "#define P_T %s\n#define P_NEG_INF (-%s)\n", d->dtype == PL_DTYPE_F64 ? "double" : "float",
                          d->dtype == PL_DTYPE_F64 ? "PL_INF" : "PL_INFF");
  define (o, "P_N", d->batch);
  define (o, "P_C", d->channels);
  for (int j = 0; j < 3; j++)
    {
      int i = spatial (d, j);
      const struct { const char *what; int64_t v; } defs[] = {
        { "I", i >= 0 ? d->in[i] : 1 }, { "O", i >= 0 ? d->out[i] : 1 }, { "K", i >= 0 ? d->kernel[i] : 1 },
        { "S", i >= 0 ? d->strides[i] : 1 }, { "L", i >= 0 ? d->dilations[i] : 1 },
        { "B", i >= 0 ? d->pads[i] : 0 }, { "E", i >= 0 ? d->pads[d->n + i] : 0 },
        { "X", xs[DD + j] }, { "Y", ys[DD + j] },
        /* the memory step of one tap */
        { "T", (i >= 0 ? d->dilations[i] : 1) * xs[DD + j] },
      };
      for (size_t k = 0; k < G_N_ELEMENTS (defs); k++)
        {
          g_autofree char *name = g_strdup_printf ("P_%s%s", defs[k].what, sp_name[j]);
          define (o, name, defs[k].v);
        }
    }
  define (o, "P_XN", xs[DN]);
  define (o, "P_XC", xs[DC]);
  define (o, "P_YN", ys[DN]);
  define (o, "P_YC", ys[DC]);
}

static void
undef_all (GString *o)
{
  static const char *const names[] = {
    "P_T", "P_NEG_INF", "P_N", "P_C", "P_XN", "P_XC", "P_YN", "P_YC",
  };
  for (size_t k = 0; k < G_N_ELEMENTS (names); k++)
    g_string_append_printf (o, "#undef %s\n", names[k]);
  static const char *const what = "IOKSLBEXYT";
  for (int j = 0; j < 3; j++)
    for (const char *w = what; *w; w++)
      g_string_append_printf (o, "#undef P_%c%s\n", *w, sp_name[j]);
  g_string_append_c (o, '\n');
}

/* Shared by both languages (PLK_FN comes from the prelude). */
static const char range_helper[] =
  "#ifndef PL_POOL_RANGE\n"
  "#define PL_POOL_RANGE\n"
  "/* the taps [*k0, *k1) of a window whose tap t reads i0 + t * dl (k taps) that land in [lo, hi) (pool.c) */\n"
  "PLK_FN void\n"
  "pl_pool_range (int64_t i0, int64_t dl, int64_t k, int64_t lo, int64_t hi, int64_t *k0, int64_t *k1)\n"
  "{\n"
  "  const int64_t a = i0 >= lo ? 0 : (lo - i0 + dl - 1) / dl;\n"
  "  const int64_t b = i0 + (k - 1) * dl < hi ? k : i0 < hi ? (hi - 1 - i0) / dl + 1 : 0;\n"
  "  *k0 = a < k ? a : k;\n"
  "  *k1 = b > *k0 ? b : *k0;\n"
  "}\n"
  "#endif\n\n";

/* --- emitting lines -------------------------------------------------------------------- */

typedef struct {
  GString *o;
  int      indent;
} Emit;

static void G_GNUC_PRINTF (2, 3)
line (Emit *e, const char *fmt, ...)
{
  for (int i = 0; i < e->indent; i++)
    g_string_append (e->o, "  ");
  va_list ap;
  va_start (ap, fmt);
  g_string_append_vprintf (e->o, fmt, ap);
  va_end (ap);
  g_string_append_c (e->o, '\n');
}

static void
open_block (Emit *e)
{
  line (e, "{");
  e->indent++;
}

static void
close_block (Emit *e)
{
  e->indent--;
  line (e, "}");
}

/* The point function: one output from its base offset b (the window's
 * first tap, unclipped) and tap ranges; cnt: the average's divisor. */
static void
emit_point (Emit *e, const PlPoolDesc *d, const char *name, const char *qual, const char *restrict_kw)
{
  line (e, "%s P_T", qual);
  line (e, "%s_point (const P_T *%s x, int64_t b, int64_t kd0, int64_t kd1, int64_t kh0, int64_t kh1, int64_t kw0, "
        "int64_t kw1, int64_t cnt)", name, restrict_kw);
  open_block (e);
  if (d->kind == PL_POOL_AVERAGE)
    line (e, "P_T acc = 0;");
  else if (d->global)
    line (e, "P_T acc = P_NEG_INF;");
  else
    line (e, "P_T acc = kd0 < kd1 && kh0 < kh1 && kw0 < kw1 ? x[b + kd0 * P_TD + kh0 * P_TH + kw0 * P_TW] : P_NEG_INF;");
  line (e, "for (int64_t kd = kd0; kd < kd1; kd++)");
  line (e, "  for (int64_t kh = kh0; kh < kh1; kh++)");
  line (e, "    for (int64_t kw = kw0; kw < kw1; kw++)");
  line (e, "      {");
  line (e, "        const P_T v = x[b + kd * P_TD + kh * P_TH + kw * P_TW];");
  line (e, d->kind == PL_POOL_MAX ? "        acc = v > acc ? v : acc;" : "        acc += v;");
  line (e, "      }");
  if (d->kind == PL_POOL_MAX)
    line (e, "(void) cnt;");
  line (e, d->kind == PL_POOL_MAX ? "return acc;" : "return acc / (P_T) cnt;");
  close_block (e);
  line (e, "%s", "");
}

/* Tap ranges k<j>0..k<j>1 of spatial dim j at its output coordinate, and
 * with an average the count c<j> of cells it divides by. */
static void
emit_ranges (Emit *e, const PlPoolDesc *d, int j)
{
  const char v = "dhw"[j], *s = sp_name[j];
  line (e, "int64_t k%c0, k%c1;", v, v);
  line (e, "pl_pool_range (o%c * P_S%s - P_B%s, P_L%s, P_K%s, 0, P_I%s, &k%c0, &k%c1);", v, s, s, s, s, s, v, v);
  if (d->kind != PL_POOL_AVERAGE)
    return;
  if (d->count_include_pad)
    {
      line (e, "int64_t p%c0, p%c1;", v, v);
      line (e, "pl_pool_range (o%c * P_S%s - P_B%s, P_L%s, P_K%s, -P_B%s, P_I%s + P_E%s, &p%c0, &p%c1);", v, s, s, s,
            s, s, s, s, v, v);
      line (e, "const int64_t c%c = p%c1 - p%c0;", v, v, v);
    }
  else
    line (e, "const int64_t c%c = k%c1 - k%c0;", v, v, v);
}

/* A global pool in NCHW: each plane is contiguous; one simd reduction each. */
static void
emit_global_nchw (Emit *e, const PlPoolDesc *d)
{
  const bool max = d->kind == PL_POOL_MAX;
  line (e, "#pragma omp parallel for schedule(static) if (P_N * P_C * P_ID * P_IH * P_IW >= %d)", PARALLEL_MIN);
  line (e, "for (int64_t p = 0; p < P_N * P_C; p++)");
  open_block (e);
  line (e, "const P_T *restrict xp = x + p * (P_ID * P_IH * P_IW);");
  line (e, "P_T acc = %s;", max ? "P_NEG_INF" : "0");
  line (e, "#pragma omp simd reduction(%s:acc)", max ? "max" : "+");
  line (e, "for (int64_t i = 0; i < P_ID * P_IH * P_IW; i++)");
  line (e, max ? "  acc = xp[i] > acc ? xp[i] : acc;" : "  acc += xp[i];");
  line (e, max ? "y[p] = acc;" : "y[p] = acc / (P_T) (P_ID * P_IH * P_IW);");
  close_block (e);
}

/* The interior of NCHW's output width: the points whose windows lie in the row. */
static void
interior (const PlPoolDesc *d, int64_t *lo, int64_t *hi)
{
  int i = d->n - 1;
  int64_t s = d->strides[i], pb = d->pads[i], span = (d->kernel[i] - 1) * d->dilations[i];
  int64_t last = d->in[i] - 1 - span + pb;   /* ow * s <= last */
  *lo = MIN ((pb + s - 1) / s, d->out[i]);
  *hi = last < 0 ? 0 : MIN (last / s + 1, d->out[i]);
  *hi = MAX (*hi, *lo);
}

/* The vector loops over the inner dim, i in [lo, hi) (x at b + tap + i * XI, y row yr). */
static void
emit_inner (Emit *e, const PlPoolDesc *d, const char *xi, const char *lo, const char *hi, bool spatial_inner,
            const char *count)
{
  const bool max = d->kind == PL_POOL_MAX;
  const char *kw0 = spatial_inner ? "0" : "kw0", *kw1 = spatial_inner ? "P_KW" : "kw1";
  const bool first = max && !d->global;   /* the max starts from the first cell inside */
  if (first)
    {
      line (e, "if (kd0 < kd1 && kh0 < kh1 && %s < %s)", kw0, kw1);
      open_block (e);
      line (e, "const int64_t t = b + kd0 * P_TD + kh0 * P_TH + %s * P_TW;", kw0);
      line (e, "#pragma omp simd");
      line (e, "for (int64_t i = %s; i < %s; i++)", lo, hi);
      line (e, "  yr[i] = x[t + i * %s];", xi);
      close_block (e);
      line (e, "else");
      open_block (e);
    }
  line (e, "#pragma omp simd");
  line (e, "for (int64_t i = %s; i < %s; i++)", lo, hi);
  line (e, "  yr[i] = %s;", max ? "P_NEG_INF" : "0");
  if (first)
    close_block (e);
  line (e, "for (int64_t kd = kd0; kd < kd1; kd++)");
  line (e, "  for (int64_t kh = kh0; kh < kh1; kh++)");
  line (e, "    for (int64_t kw = %s; kw < %s; kw++)", kw0, kw1);
  line (e, "      {");
  line (e, "        const int64_t t = b + kd * P_TD + kh * P_TH + kw * P_TW;");
  line (e, "        #pragma omp simd");
  line (e, "        for (int64_t i = %s; i < %s; i++)", lo, hi);
  line (e, max ? "          yr[i] = x[t + i * %s] > yr[i] ? x[t + i * %s] : yr[i];" : "          yr[i] += x[t + i * %s];",
        xi, xi);
  line (e, "      }");
  if (!max)
    {
      line (e, "#pragma omp simd");
      line (e, "for (int64_t i = %s; i < %s; i++)", lo, hi);
      line (e, "  yr[i] = yr[i] / (P_T) (%s);", count);
    }
}

/* The general case: four outer loops (parallel), the inner dim vectorized. */
static void
emit_general (Emit *e, const PlPoolDesc *d, const char *name)
{
  int order[NDIMS];
  memory_order (d, order);
  const int inner = order[NDIMS - 1];
  const bool spatial_inner = inner == DW;
  line (e, "#pragma omp parallel for collapse(4) schedule(static) if (P_N * P_C * P_OD * P_OH * P_OW * P_KD * P_KH * "
        "P_KW >= %d)", PARALLEL_MIN);
  for (int k = 0; k < NDIMS - 1; k++)
    line (e, "%*sfor (int64_t %s = 0; %s < %s; %s++)", 2 * k, "", out_var[order[k]], out_var[order[k]],
          out_size[order[k]], out_var[order[k]]);
  e->indent += NDIMS - 1;
  open_block (e);
  for (int j = 0; j < 3; j++)
    if (DD + j != inner)
      emit_ranges (e, d, j);
  /* b: X at the window's first tap (unclipped) with the inner coordinate 0; yr: Y's inner row */
  GString *b = g_string_new (NULL), *y = g_string_new (NULL);
  for (int k = 0; k < NDIMS; k++)
    {
      int dim = order[k];
      if (dim == inner && !spatial_inner)
        continue;
      if (dim >= DD)
        g_string_append_printf (b, "%s(%s * P_S%s - P_B%s) * %s", b->len ? " + " : "",
                                dim == inner ? "0" : out_var[dim], sp_name[dim - DD], sp_name[dim - DD], x_stride[dim]);
      else
        g_string_append_printf (b, "%s%s * %s", b->len ? " + " : "", out_var[dim], x_stride[dim]);
      if (dim != inner)
        g_string_append_printf (y, "%s%s * %s", y->len ? " + " : "", out_var[dim], y_stride[dim]);
    }
  line (e, "const int64_t b = %s;", b->str);
  line (e, "P_T *restrict yr = y + %s;", y->str);
  g_string_free (b, TRUE);
  g_string_free (y, TRUE);
  if (!spatial_inner)
    {
      const char *count = d->kind == PL_POOL_AVERAGE ? "cd * ch * cw" : "1";
      emit_inner (e, d, x_stride[inner], "0", out_size[inner], false, count);
    }
  else
    {
      int64_t lo, hi;
      interior (d, &lo, &hi);
      /* the edges, [0, lo) and [hi, OW): windows clipped per point */
      const int64_t edges[2][2] = { { 0, lo }, { hi, d->out[d->n - 1] } };
      for (int k = 0; k < 2; k++)
        {
          if (edges[k][1] <= edges[k][0])
            continue;
          line (e, "for (int64_t ow = %" G_GINT64_FORMAT "; ow < %" G_GINT64_FORMAT "; ow++)", edges[k][0], edges[k][1]);
          open_block (e);
          emit_ranges (e, d, 2);
          line (e, "yr[ow] = %s_point (x, b + ow * P_SW * P_XW, kd0, kd1, kh0, kh1, kw0, kw1, %s);", name,
                d->kind == PL_POOL_AVERAGE ? "cd * ch * cw" : "1");
          close_block (e);
        }
      if (hi > lo)
        {
          g_autofree char *los = g_strdup_printf ("%" G_GINT64_FORMAT, lo);
          g_autofree char *his = g_strdup_printf ("%" G_GINT64_FORMAT, hi);
          line (e, "/* the interior: whole windows */");
          emit_inner (e, d, "(P_SW * P_XW)", los, his, true, "cd * ch * P_KW");
        }
    }
  close_block (e);
  e->indent -= NDIMS - 1;
}

void
pl_pool_emit_c (GString *out, const PlPoolDesc *d, const char *name)
{
  g_autofree char *what = pl_pool_describe (d);
  g_string_append_printf (out, "/* %s: %s (pool.c) */\n", name, what);
  define_all (out, d);
  g_string_append (out, range_helper);
  Emit e = { out, 0 };
  const bool global_nchw = d->global && d->layout == PL_LAYOUT_NCHW;
  if (!global_nchw && d->layout == PL_LAYOUT_NCHW)
    emit_point (&e, d, name, "static inline __attribute__ ((always_inline))", "restrict");
  line (&e, "void");
  line (&e, "%s (void *const *args)", name);
  open_block (&e);
  line (&e, "const P_T *restrict x = args[0];");
  line (&e, "P_T *restrict y = args[1];");
  if (global_nchw)
    emit_global_nchw (&e, d);
  else
    emit_general (&e, d, name);
  close_block (&e);
  undef_all (out);
}

/* --- CUDA ---------------------------------------------------------------------------------- */

void
pl_pool_emit_cuda (GString *out, const PlPoolDesc *d, const char *name, int n_sms, int *block, int64_t *grid)
{
  g_autofree char *what = pl_pool_describe (d);
  g_string_append_printf (out, "/* %s: %s, a thread per output (pool.c) */\n", name, what);
  define_all (out, d);
  g_string_append (out, range_helper);
  Emit e = { out, 0 };
  emit_point (&e, d, name, "static __device__ __forceinline__", "__restrict__");
  const int64_t total = outputs (d);
  line (&e, "extern \"C\" __global__ void __launch_bounds__ (256)");
  line (&e, "%s (const P_T *__restrict__ x, P_T *__restrict__ y, void *unused)", name);
  open_block (&e);
  pl_codegen_cuda_grid_stride (out, e.indent, "i", total);
  open_block (&e);
  /* the coordinates, innermost in Y's memory order first: neighbouring threads write neighbours */
  int order[NDIMS];
  memory_order (d, order);
  GString *div = g_string_new ("1");
  for (int k = NDIMS - 1; k >= 0; k--)
    {
      line (&e, "const int64_t %s = (i / (%s)) %% %s;", out_var[order[k]], div->str, out_size[order[k]]);
      g_string_append_printf (div, " * %s", out_size[order[k]]);
    }
  g_string_free (div, TRUE);
  for (int j = 0; j < 3; j++)
    emit_ranges (&e, d, j);
  line (&e, "const int64_t b = n * P_XN + c * P_XC + (od * P_SD - P_BD) * P_XD + (oh * P_SH - P_BH) * P_XH + "
        "(ow * P_SW - P_BW) * P_XW;");
  line (&e, "y[n * P_YN + c * P_YC + od * P_YD + oh * P_YH + ow * P_YW] =");
  line (&e, "  %s_point (x, b, kd0, kd1, kh0, kh1, kw0, kw1, %s);", name,
        d->kind == PL_POOL_AVERAGE ? "cd * ch * cw" : "1");
  close_block (&e);
  close_block (&e);
  line (&e, "%s", "");
  undef_all (out);
  *block = 256;
  *grid = pl_codegen_cuda_grid (total, 256, n_sms, 32);
}

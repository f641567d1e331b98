/* test-conv-direct.c — the generated direct convolution (kernels/conv-direct.c)
 * and its tuner (kernels/tune.c): the emitted C of every layout compiled and
 * run against a plain reference for strides, padding, dilation, groups,
 * depthwise, 1x1 and batches, with tiles that do and do not divide the
 * output; weight packing; the pebble rule's equations; the tuner's spaces
 * and searches; the CUDA kernel through NVRTC (skipped without it). All the
 * C kernels go into one translation unit, compiled once (and cached under
 * the build directory). */
#include "backend.h"
#include "conv-direct.h"
#include "text-format.h"
#include "tune.h"
#include "test-util.h"

#include <math.h>
#include <string.h>

typedef void (*DirectFn) (const void *x, const void *wp, void *y, int64_t tx, int64_t ty, int64_t tz);

static char *cache_dir;

typedef struct {
  const char *name;
  PlDType dtype;
  int64_t n, c, h, w, k, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, g;
} Case;

static const Case cases[] = {
  { "basic", PL_DTYPE_F32, 1, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1 },
  { "stride2", PL_DTYPE_F32, 2, 4, 11, 10, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1 },
  { "dilation2", PL_DTYPE_F32, 1, 4, 12, 12, 6, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1 },
  { "group2", PL_DTYPE_F32, 1, 8, 9, 9, 6, 3, 3, 1, 1, 1, 1, 1, 0, 0, 2, 2 },
  { "depthwise", PL_DTYPE_F32, 1, 8, 10, 10, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 8 },
  { "pointwise", PL_DTYPE_F32, 3, 16, 6, 5, 24, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1 },
  { "batch3-5x3", PL_DTYPE_F32, 3, 5, 13, 12, 7, 5, 3, 2, 1, 1, 1, 2, 1, 2, 1, 1 },
  { "wide", PL_DTYPE_F32, 2, 16, 37, 37, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1 },
  { "stride-dilation", PL_DTYPE_F32, 1, 4, 15, 15, 16, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 1 },
  { "batch17", PL_DTYPE_F32, 17, 3, 6, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1 },
  { "f64", PL_DTYPE_F64, 2, 6, 9, 17, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1 },
  { "f64-group", PL_DTYPE_F64, 3, 4, 8, 8, 6, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 2 },
  /* kernels smaller than their stride: only some window phases and rows are staged */
  { "1x1-s2", PL_DTYPE_F32, 2, 24, 14, 13, 40, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 1 },
  { "2x1-s3-pads", PL_DTYPE_F32, 3, 5, 17, 16, 6, 2, 1, 3, 3, 1, 1, 1, 0, 2, 1, 1 },
  { "2x2-s3-d2", PL_DTYPE_F64, 1, 4, 19, 19, 8, 2, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1 },
  /* pointwise (NHWC: its own kernel, points' rows read in place) with groups and output channels past
   * the last whole vector (13 a group: a vector of 16 with 3 lanes not stored), f64 with stride 2 */
  { "pointwise-g2-tail", PL_DTYPE_F32, 2, 12, 7, 9, 26, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2 },
  { "pointwise-f64-s2-tail", PL_DTYPE_F64, 1, 7, 9, 11, 20, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 1 },
  /* depthwise with channels past the last whole vector (NHWC: its own kernel, vectors along channels) */
  { "depthwise-s2-tail", PL_DTYPE_F32, 2, 40, 13, 11, 40, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 40 },
  /* ResNeXt's grouped 3x3 conv in small: many groups of 4 channels (NHWC: the small-group kernel,
   * 4 groups a vector, each input lane broadcast over its group; NCHW: vectors along the width),
   * stride 2 */
  { "groups8x4-s2", PL_DTYPE_F32, 2, 32, 12, 11, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 8 },
  /* the small-group kernel with groups of 8 and channels past the last whole vector (40: a vector
   * of 16 twice, then 8 a point at a time), dilation and uneven padding; groups of 2 in f64; 5x5
   * over a row wider than a block of points (blocks inside, single points at the edges); and a
   * row so narrow that every output's window crosses the edge */
  { "groups5x8-tail-d2", PL_DTYPE_F32, 1, 40, 11, 13, 40, 3, 3, 1, 1, 2, 2, 2, 1, 1, 2, 5 },
  { "groups6x2-f64", PL_DTYPE_F64, 2, 12, 7, 7, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 6 },
  { "groups16x4-5x5-wide", PL_DTYPE_F32, 1, 64, 6, 29, 64, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 16 },
  { "groups4x4-5x5-narrow", PL_DTYPE_F32, 1, 16, 4, 3, 16, 5, 5, 1, 2, 1, 1, 2, 2, 2, 2, 4 },
  { "depthwise-f64-5x5-d2", PL_DTYPE_F64, 1, 12, 12, 10, 12, 5, 5, 1, 1, 2, 2, 3, 2, 1, 4, 12 },
  /* CHWN with a batch that divides the vector: a vector holds the images of 16 / N points, rows
   * padded to whole vectors (7 points in groups of 4; 7 in groups of 2, stride 2, groups) */
  { "batch4-odd-row", PL_DTYPE_F32, 4, 6, 9, 7, 10, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1 },
  { "batch8-g4-s2", PL_DTYPE_F32, 8, 16, 11, 13, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 4 },
  /* CHWN's pointwise kernel: channel blocks of 8 and the rest in 4, 2, 1 (30, 29); rows of
   * 7 x 8 points, part vectors at segment ends, tiles narrower than a vector widened; one image
   * of 13 points a row; f64 with groups; an image smaller than a vector (the generic kernel) */
  { "pointwise-b8-tails", PL_DTYPE_F32, 8, 20, 5, 7, 30, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1 },
  { "pointwise-b8-k29", PL_DTYPE_F32, 8, 9, 3, 7, 29, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1 },
  { "pointwise-b1-narrow", PL_DTYPE_F32, 1, 6, 3, 13, 11, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1 },
  { "pointwise-f64-g3", PL_DTYPE_F64, 4, 9, 6, 6, 15, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 3 },
  { "pointwise-tiny", PL_DTYPE_F32, 1, 5, 2, 3, 7, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1 },
  /* and strided, its tiles staged: 8 images of 5 x 6 points of 9 x 11; 16 images, stride 3 x 2, groups */
  { "pointwise-b8-s2", PL_DTYPE_F32, 8, 12, 9, 11, 21, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 1 },
  { "pointwise-b16-s3x2-g2", PL_DTYPE_F32, 16, 10, 8, 7, 18, 1, 1, 3, 2, 1, 1, 0, 0, 0, 0, 2 },
  /* a whole-image tile stages 2.5 MiB: steps of 12 and 4 rows */
  { "pointwise-b16-s2-steps", PL_DTYPE_F32, 16, 160, 32, 32, 24, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 1 },
};

static PlConvDesc
case_desc (const Case *k, PlLayout layout)
{
  PlConvDesc c;
  memset (&c, 0, sizeof c);
  c.dtype = k->dtype;
  c.n = 2;
  c.batch = k->n;
  c.c_in = k->c;
  c.c_out = k->k;
  c.group = k->g;
  c.in[0] = k->h;
  c.in[1] = k->w;
  c.kernel[0] = k->kh;
  c.kernel[1] = k->kw;
  c.strides[0] = k->sh;
  c.strides[1] = k->sw;
  c.dilations[0] = k->dh;
  c.dilations[1] = k->dw;
  c.pads[0] = k->pt;
  c.pads[1] = k->pl;
  c.pads[2] = k->pb;
  c.pads[3] = k->pr;
  for (int i = 0; i < 2; i++)
    c.out[i] = (c.in[i] + c.pads[i] + c.pads[2 + i] - c.dilations[i] * (c.kernel[i] - 1) - 1) / c.strides[i] + 1;
  c.col_rows = c.c_in / c.group * c.kernel[0] * c.kernel[1];
  c.col_cols = c.out[0] * c.out[1];
  c.x_layout = c.y_layout = layout;
  c.impl = PL_CONV_IMPL_DIRECT;
  return c;
}

static void
put (void *buf, PlDType dt, int64_t i, double v)
{
  if (dt == PL_DTYPE_F32)
    ((float *) buf)[i] = (float) v;
  else
    ((double *) buf)[i] = v;
}

static double
take (const void *buf, PlDType dt, int64_t i)
{
  return dt == PL_DTYPE_F32 ? ((const float *) buf)[i] : ((const double *) buf)[i];
}

/* The plain convolution on logical NCHW arrays: y and sum of |terms|. */
static void
reference (const PlConvDesc *c, const double *x, const double *w, double *y, double *scale)
{
  const int64_t CG = c->c_in / c->group, KG = c->c_out / c->group;
  for (int64_t n = 0; n < c->batch; n++)
    for (int64_t k = 0; k < c->c_out; k++)
      for (int64_t oy = 0; oy < c->out[0]; oy++)
        for (int64_t ox = 0; ox < c->out[1]; ox++)
          {
            double s = 0, a = 0;
            for (int64_t ch = 0; ch < CG; ch++)
              for (int64_t kh = 0; kh < c->kernel[0]; kh++)
                for (int64_t kw = 0; kw < c->kernel[1]; kw++)
                  {
                    int64_t ih = oy * c->strides[0] - c->pads[0] + kh * c->dilations[0];
                    int64_t iw = ox * c->strides[1] - c->pads[1] + kw * c->dilations[1];
                    if (ih < 0 || ih >= c->in[0] || iw < 0 || iw >= c->in[1])
                      continue;
                    double t = x[((n * c->c_in + k / KG * CG + ch) * c->in[0] + ih) * c->in[1] + iw]
                               * w[((k * CG + ch) * c->kernel[0] + kh) * c->kernel[1] + kw];
                    s += t;
                    a += fabs (t);
                  }
            int64_t i = ((n * c->c_out + k) * c->out[0] + oy) * c->out[1] + ox;
            y[i] = s;
            scale[i] = a;
          }
}

static PlCpuModule *
compile (const char *source)
{
  g_autoptr (GError) error = NULL;
  PlCpuModule *m = pl_cpu_module_compile (source, cache_dir, NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (m);
  return m;
}

/* One case in one layout: x in the layout, packed weights, and the
 * reference output (logical NCHW) with the sum of |terms| per output. */
typedef struct {
  PlConvDesc c;
  void      *xb, *wp;
  double    *ref, *scale;
  int64_t    ny;
} Data;

static void
data_init (Data *d, size_t index, PlLayout layout)
{
  const PlConvDesc c = d->c = case_desc (&cases[index], layout);
  const int64_t nx = c.batch * c.c_in * c.in[0] * c.in[1];
  const int64_t nw = c.c_out * (c.c_in / c.group) * c.kernel[0] * c.kernel[1];
  const size_t es = pl_dtype_size (c.dtype);
  d->ny = c.batch * c.c_out * c.out[0] * c.out[1];
  g_autofree double *x = g_new (double, nx);
  g_autofree double *w = g_new (double, nw);
  d->ref = g_new (double, d->ny);
  d->scale = g_new (double, d->ny);
  g_autoptr (GRand) rand = g_rand_new_with_seed ((guint32) index + 1);
  for (int64_t j = 0; j < nx; j++)
    x[j] = g_rand_double_range (rand, -1, 1);
  for (int64_t j = 0; j < nw; j++)
    w[j] = g_rand_double_range (rand, -1, 1);
  reference (&c, x, w, d->ref, d->scale);

  int64_t xd[4] = { c.batch, c.c_in, c.in[0], c.in[1] }, xs[4];
  pl_layout_strides (c.x_layout, 4, xd, xs);
  d->xb = g_malloc (nx * es);
  for (int64_t n = 0; n < xd[0]; n++)
    for (int64_t ch = 0; ch < xd[1]; ch++)
      for (int64_t h = 0; h < xd[2]; h++)
        for (int64_t ww = 0; ww < xd[3]; ww++)
          put (d->xb, c.dtype, n * xs[0] + ch * xs[1] + h * xs[2] + ww * xs[3],
               x[((n * xd[1] + ch) * xd[2] + h) * xd[3] + ww]);
  g_autofree void *wb = g_malloc (nw * es);
  for (int64_t j = 0; j < nw; j++)
    put (wb, c.dtype, j, w[j]);
  d->wp = g_malloc (pl_conv_direct_packed_size (&c) * es);
  pl_conv_direct_pack (&c, wb, d->wp);
}

static void
data_clear (Data *d)
{
  g_free (d->xb);
  g_free (d->wp);
  g_free (d->ref);
  g_free (d->scale);
}

/* y filled with NaN, so an output never written shows. */
static void *
nan_output (const Data *d)
{
  void *yb = g_malloc (d->ny * pl_dtype_size (d->c.dtype));
  for (int64_t i = 0; i < d->ny; i++)
    put (yb, d->c.dtype, i, NAN);
  return yb;
}

/* Asserts that y, in the layout, is the reference. */
static void
assert_output (const Data *d, const void *yb, const char *what)
{
  const PlConvDesc *c = &d->c;
  int64_t yd[4] = { c->batch, c->c_out, c->out[0], c->out[1] }, ys[4];
  pl_layout_strides (c->y_layout, 4, yd, ys);
  const double rtol = c->dtype == PL_DTYPE_F32 ? 1e-5 : 1e-12;
  for (int64_t n = 0; n < c->batch; n++)
    for (int64_t k = 0; k < c->c_out; k++)
      for (int64_t oy = 0; oy < c->out[0]; oy++)
        for (int64_t ox = 0; ox < c->out[1]; ox++)
          {
            int64_t i = ((n * c->c_out + k) * c->out[0] + oy) * c->out[1] + ox;
            double got = take (yb, c->dtype, n * ys[0] + k * ys[1] + oy * ys[2] + ox * ys[3]);
            if (!(fabs (got - d->ref[i]) <= rtol * d->scale[i] + 1e-30))
              g_error ("%s in %s: y[%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
                       "] = %.9g, expected %.9g", what, pl_layout_name (c->x_layout), n, k, oy, ox, got, d->ref[i]);
          }
}

static gpointer
compile_thread (gpointer source)
{
  return compile (source);
}

/* Every case in every layout, several tiles each: a module per layout,
 * compiled side by side. */
static void
test_kernels (void)
{
  char *sources[PL_LAYOUT_COUNT];
  GThread *threads[PL_LAYOUT_COUNT];
  PlCpuModule *modules[PL_LAYOUT_COUNT];
  for (int l = 0; l < PL_LAYOUT_COUNT; l++)
    {
      GString *src = g_string_new (NULL);
      for (size_t i = 0; i < G_N_ELEMENTS (cases); i++)
        {
          PlConvDesc c = case_desc (&cases[i], (PlLayout) l);
          g_assert_true (pl_conv_direct_supported (&c, NULL));
          g_autofree char *name = g_strdup_printf ("direct_%zu_%d", i, l);
          pl_conv_direct_emit_c (src, &c, name);
        }
      sources[l] = g_string_free (src, FALSE);
      threads[l] = g_thread_new ("compile", compile_thread, sources[l]);
    }
  for (int l = 0; l < PL_LAYOUT_COUNT; l++)
    {
      modules[l] = g_thread_join (threads[l]);
      g_free (sources[l]);
    }

  for (size_t i = 0; i < G_N_ELEMENTS (cases); i++)
    for (int l = 0; l < PL_LAYOUT_COUNT; l++)
      {
        Data d;
        data_init (&d, i, (PlLayout) l);
        g_autofree char *name = g_strdup_printf ("direct_%zu_%d", i, l);
        DirectFn fn = (DirectFn) pl_cpu_module_symbol (modules[l], name);
        g_assert_nonnull (fn);
        const int64_t OW = d.c.out[1], OH = d.c.out[0], KG = d.c.c_out / d.c.group;
        int64_t tiles[][3] = {
          { 0, 0, 0 },   /* the pebble tile, below */
          { 1, 1, 1 },
          { OW, OH, KG },
          { 3, 5, 7 },
          { 2, 1, 3 },
          { MAX (OW - 1, 1), 2, MAX (KG - 1, 1) },
          { 64, 64, 64 },   /* larger than the output: clamped */
        };
        pl_conv_pebble_tile (&d.c, 16 << 10, 2, 1, tiles[0]);
        for (size_t t = 0; t < G_N_ELEMENTS (tiles); t++)
          {
            g_autofree void *yb = nan_output (&d);
            fn (d.xb, d.wp, yb, tiles[t][0], tiles[t][1], tiles[t][2]);
            g_autofree char *what = g_strdup_printf ("%s, tile %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%"
                                                     G_GINT64_FORMAT, cases[i].name, tiles[t][0], tiles[t][1],
                                                     tiles[t][2]);
            assert_output (&d, yb, what);
          }
        data_clear (&d);
      }
  for (int l = 0; l < PL_LAYOUT_COUNT; l++)
    pl_cpu_module_free (modules[l]);
}

static void
test_supported (void)
{
  PlConvDesc c = case_desc (&cases[0], PL_LAYOUT_NHWC);
  char *why = NULL;
  g_assert_true (pl_conv_direct_supported (&c, &why));
  g_assert_null (why);
  c.y_layout = PL_LAYOUT_NCHW;
  g_assert_false (pl_conv_direct_supported (&c, &why));
  g_assert_nonnull (strstr (why, "same layout"));
  g_clear_pointer (&why, g_free);
  c = case_desc (&cases[0], PL_LAYOUT_NCHW);
  c.n = 1;
  g_assert_false (pl_conv_direct_supported (&c, &why));
  g_assert_nonnull (strstr (why, "2-d"));
  g_clear_pointer (&why, g_free);
  c = case_desc (&cases[0], PL_LAYOUT_NCHW);
  c.dtype = PL_DTYPE_I32;
  g_assert_false (pl_conv_direct_supported (&c, &why));
  g_clear_pointer (&why, g_free);
}

static const Case *
case_named (const char *name)
{
  for (size_t i = 0; i < G_N_ELEMENTS (cases); i++)
    if (strcmp (cases[i].name, name) == 0)
      return &cases[i];
  g_assert_not_reached ();
}

/* Which grouped convs take the small-group NHWC kernel (as many input as
 * output channels a group, fewer than a vector holds), and that its code
 * is the shuffling one: input-stationary blocks at stride 1 only. */
static void
test_small_groups (void)
{
  __builtin_cpu_init ();
  if (!__builtin_cpu_supports ("avx512f"))
    {
      g_test_skip ("the kernel's groups of 4 and 8 are sized for AVX-512's 16 lanes");
      return;
    }
  PlConvDesc c = case_desc (case_named ("groups8x4-s2"), PL_LAYOUT_NHWC);
  g_assert_true (pl_conv_direct_nhwc_grouped (&c));
  g_autoptr (GString) src = g_string_new ("");
  pl_conv_direct_emit_c (src, &c, "g4");
  g_assert_nonnull (strstr (src->str, "D_FN (gfma)"));
  g_assert_nonnull (strstr (src->str, "__builtin_shufflevector"));
  g_assert_nonnull (strstr (src->str, "#define D_IBLOCK(pbc) D_FN (gblock) (x, wt, y, n, oy, ox, c, pbc, 0, 0)"));   /* stride 2 */
  /* its task holds every channel of its points: the tuner leaves z at 1 */
  g_autoptr (PlGraph) g = pl_test_parse ("graph g opset 17 {\n"
                                 "  input x: f32[1, 32, 12, 12]\n"
                                 "  const w: f32[32, 4, 3, 3] = random(seed=3, lo=-0.2, hi=0.2)\n"
                                 "  y = Conv(x, w) {group=8, kernel_shape=[3, 3], pads=[1, 1, 1, 1]}\n"
                                 "  output y\n}\n");
  g_autoptr (GError) error = NULL;
  g_autoptr (GArray) full = NULL, pruned = NULL;
  int64_t pebble[3];
  g_assert_true (pl_graph_infer_shapes (g, &error));
  g_assert_true (pl_tune_spaces (g->nodes->pdata[0], PL_LAYOUT_NHWC, &full, &pruned, pebble, &error));
  g_assert_cmpint (pebble[2], ==, 1);
  g_assert_cmpuint (full->len, ==, 7 * 7);   /* 1,2,3,4,6,8,12 twice; z 1 */
  for (guint i = 0; i < full->len; i++)
    g_assert_cmpint (g_array_index (full, PlTuneTile, i).tile[2], ==, 1);
  c = case_desc (case_named ("groups16x4-5x5-wide"), PL_LAYOUT_NHWC);
  g_assert_true (pl_conv_direct_nhwc_grouped (&c));
  g_string_truncate (src, 0);
  pl_conv_direct_emit_c (src, &c, "g4");
  g_assert_nonnull (strstr (src->str, "#define D_IBLOCK(pbc) D_FN (gblock) (x, wt, y, n, oy, ox, c, pbc, 1, 1)"));
  g_assert_true (pl_conv_direct_nhwc_grouped ((c = case_desc (case_named ("groups5x8-tail-d2"), PL_LAYOUT_NHWC), &c)));
  g_assert_false (pl_conv_direct_nhwc_grouped ((c = case_desc (case_named ("groups8x4-s2"), PL_LAYOUT_NCHW), &c)));
  g_assert_false (pl_conv_direct_nhwc_grouped ((c = case_desc (case_named ("group2"), PL_LAYOUT_NHWC), &c)));
  g_assert_false (pl_conv_direct_nhwc_grouped ((c = case_desc (case_named ("depthwise"), PL_LAYOUT_NHWC), &c)));
  g_assert_false (pl_conv_direct_nhwc_grouped ((c = case_desc (case_named ("pointwise-g2-tail"), PL_LAYOUT_NHWC), &c)));
}

/* Packed [g][c][kh][kw][k], then zeros. */
static void
test_pack (void)
{
  PlConvDesc c = case_desc (&cases[3], PL_LAYOUT_NCHW);   /* group 2: K 6, C 8, 3x3 */
  const int64_t CG = 4, KG = 3, nw = 6 * CG * 9, np = pl_conv_direct_packed_size (&c);
  g_assert_cmpint (np, >=, nw);
  g_autofree float *w = g_new (float, nw);
  g_autofree float *p = g_new (float, np);
  for (int64_t i = 0; i < nw; i++)
    w[i] = (float) i + 1;
  for (int64_t i = 0; i < np; i++)
    p[i] = -1;
  pl_conv_direct_pack (&c, w, p);
  for (int64_t g = 0; g < 2; g++)
    for (int64_t ch = 0; ch < CG; ch++)
      for (int64_t r = 0; r < 9; r++)
        for (int64_t k = 0; k < KG; k++)
          g_assert_cmpfloat (p[((g * CG + ch) * 9 + r) * KG + k], ==, w[((g * KG + k) * CG + ch) * 9 + r]);
  for (int64_t i = nw; i < np; i++)
    g_assert_cmpfloat (p[i], ==, 0);
}

static bool
good_size (int64_t t, int64_t dim)
{
  return t >= 1 && t <= dim && (dim % t == 0 || (t & (t - 1)) == 0);
}

static void
assert_pebble (const PlConvDesc *c, int64_t mem, int np, bool unclamped)
{
  int64_t t[3];
  double S, R;
  pl_conv_pebble_tile (c, mem, np, 1, t);
  pl_conv_pebble_terms (c, mem, np, 1, &S, &R);
  g_assert_true (good_size (t[0], c->out[1]));
  g_assert_true (good_size (t[1], c->out[0]));
  g_assert_true (good_size (t[2], c->c_out / c->group));
  /* CHWN's tile points hold the batch: their input words are N times a point's */
  const double per_point = c->x_layout == PL_LAYOUT_CHWN ? (double) c->batch : 1.0;
  g_assert_cmpfloat_with_epsilon (R, (double) (c->kernel[0] * c->kernel[1]) / (c->strides[0] * c->strides[1]) / per_point,
                                  1e-12);
  if (unclamped)
    {
      /* xy = R z and xyz = S, within the rounding to divisors and powers of two */
      double xy = (double) (t[0] * t[1]), z = (double) t[2];
      g_assert_cmpfloat (xy / (R * z), >=, 0.5 - 1e-9);
      g_assert_cmpfloat (xy / (R * z), <=, 2 + 1e-9);
      g_assert_cmpfloat (xy * z / S, >=, 0.5 - 1e-9);
      g_assert_cmpfloat (xy * z / S, <=, 2 + 1e-9);
    }
}

static void
test_pebble (void)
{
  Case big = { "big", PL_DTYPE_F32, 1, 64, 224, 224, 256, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1 };
  PlConvDesc c = case_desc (&big, PL_LAYOUT_NHWC);
  double S, R;
  pl_conv_pebble_terms (&c, 64 << 10, 1, 1, &S, &R);
  g_assert_cmpfloat (S, ==, 16384);   /* 64 KiB of f32, one unit */
  g_assert_cmpfloat (R, ==, 9);
  assert_pebble (&c, 64 << 10, 1, true);
  assert_pebble (&c, 256 << 10, 4, true);
  c.dtype = PL_DTYPE_F64;
  pl_conv_pebble_terms (&c, 64 << 10, 1, 1, &S, &R);
  g_assert_cmpfloat (S, ==, 8192);
  assert_pebble (&c, 64 << 10, 1, true);
  Case s2 = { "s2", PL_DTYPE_F32, 1, 32, 112, 112, 128, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1 };
  c = case_desc (&s2, PL_LAYOUT_NCHW);
  assert_pebble (&c, 32 << 10, 1, true);
  pl_conv_pebble_terms (&c, 32 << 10, 1, 1, &S, &R);
  g_assert_cmpfloat (R, ==, 2.25);
  /* CHWN: the tile holds the batch, S is per image, and a point's input
   * words are N elements against z Hk Wk weights: xy = R z / N. With R not
   * divided, the tile at batch 64 took 7x7x16 of a 7x7x512 conv and ran at
   * 90% of the full search's best (7x1x256); divided, 7x4x128 at 97%. */
  Case b8 = { "b8", PL_DTYPE_F32, 8, 64, 224, 224, 256, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1 };
  c = case_desc (&b8, PL_LAYOUT_CHWN);
  pl_conv_pebble_terms (&c, 256 << 10, 1, 1, &S, &R);
  g_assert_cmpfloat (S, ==, 65536.0 / 8);
  g_assert_cmpfloat (R, ==, 9.0 / 8);
  assert_pebble (&c, 256 << 10, 1, true);
  int64_t tb[3], tn[3];
  pl_conv_pebble_tile (&c, 256 << 10, 1, 1, tb);
  c = case_desc (&b8, PL_LAYOUT_NHWC);
  pl_conv_pebble_tile (&c, 256 << 10 >> 3, 1, 1, tn);   /* the same S in points */
  g_assert_cmpint (tb[2], >, tn[2]);

  /* clamped: a small conv and a large memory; every unit gets a tile */
  for (size_t i = 0; i < G_N_ELEMENTS (cases); i++)
    for (int l = 0; l < PL_LAYOUT_COUNT; l++)
      for (int np = 1; np <= 4; np *= 2)
        {
          c = case_desc (&cases[i], (PlLayout) l);
          assert_pebble (&c, 1 << 20, np, false);
          int64_t t[3];
          pl_conv_pebble_tile (&c, 1 << 20, np, 1, t);
          const int64_t KG = c.c_out / c.group;
          const int64_t tiles = (l == PL_LAYOUT_CHWN ? 1 : c.batch) * c.group * ((c.out[1] + t[0] - 1) / t[0])
                                * ((c.out[0] + t[1] - 1) / t[1]) * ((KG + t[2] - 1) / t[2]);
          const int64_t most = (l == PL_LAYOUT_CHWN ? 1 : c.batch) * c.group * c.out[0] * c.out[1] * KG;
          g_assert_cmpint (tiles, >=, MIN (np, most) / 2);
        }

  /* Cache lines: the NHWC kernel stages 8 channels of a point (a 3x3
   * kernel's pass) from a line of 16 f32, so R drops by 16 / 8 and the
   * tile takes more channels; NCHW and CHWN stage whole rows (4 channels a
   * pass), and the NHWC pointwise kernel reads whole rows of channels in
   * place */
  c = case_desc (&big, PL_LAYOUT_NHWC);
  g_assert_cmpint (pl_conv_direct_channels_per_pass (&c), ==, 8);
  pl_conv_pebble_terms (&c, 1 << 20, 1, 16, &S, &R);
  g_assert_cmpfloat (R, ==, 9.0 / 2);
  PlConvDesc nchw = case_desc (&big, PL_LAYOUT_NCHW);
  g_assert_cmpint (pl_conv_direct_channels_per_pass (&nchw), ==, 4);
  PlConvDesc pw = case_desc (&cases[12], PL_LAYOUT_NHWC);   /* 1x1-s2 */
  g_assert_true (pl_conv_direct_nhwc_pointwise (&pw));
  /* CHWN's pointwise kernel: an output image of a vector at least */
  PlConvDesc cw = case_desc (&cases[12], PL_LAYOUT_CHWN);   /* strided: staged a tile at a time */
  g_assert_true (pl_conv_direct_chwn_pointwise (&cw));
  cw = case_desc (case_named ("pointwise-b8-tails"), PL_LAYOUT_CHWN);
  g_assert_true (pl_conv_direct_chwn_pointwise (&cw));
  g_assert_false (pl_conv_direct_chwn_pointwise ((cw = case_desc (case_named ("pointwise-tiny"), PL_LAYOUT_CHWN), &cw)));
  g_assert_false (pl_conv_direct_chwn_pointwise ((cw = case_desc (case_named ("pointwise-b8-tails"), PL_LAYOUT_NHWC), &cw)));
  /* its tile spans the width: the points of a row run on into the next */
  int64_t tpw[3];
  cw = case_desc (&(Case) { "b8", PL_DTYPE_F32, 8, 1024, 14, 14, 512, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1 }, PL_LAYOUT_CHWN);
  pl_conv_pebble_tile (&cw, 1 << 20, 2, 16, tpw);
  g_assert_cmpint (tpw[0], ==, 14);
  pl_conv_pebble_terms (&pw, 1 << 20, 1, 16, &S, &R);
  g_assert_cmpfloat (R, ==, 1.0 / 4);
  int64_t t1[3], t16[3];
  pl_conv_pebble_tile (&c, 1 << 20, 1, 1, t1);
  pl_conv_pebble_tile (&c, 1 << 20, 1, 16, t16);
  g_assert_cmpint (t16[2], >, t1[2]);
  g_assert_cmpint (t16[0] * t16[1], <, t1[0] * t1[1]);
  c = case_desc (&big, PL_LAYOUT_NCHW);
  pl_conv_pebble_terms (&c, 1 << 20, 1, 16, &S, &R);
  g_assert_cmpfloat (R, ==, 9);

  /* The working set of a step: the accumulators (padded to vectors), the
   * staged window and the step's weights; it grows with every tile dim */
  c = case_desc (&big, PL_LAYOUT_NHWC);
  const int64_t tile[3] = { 14, 4, 128 };
  const int64_t ws = pl_conv_direct_working_set (&c, tile);
  g_assert_cmpint (ws, >, 14 * 4 * 128 + 9 * 128);
  g_assert_cmpint (ws, <, 2 * (14 * 4 * 128 + 9 * 128) + 64 * 6 * 16);
  for (int d = 0; d < 3; d++)
    {
      int64_t bigger[3] = { tile[0], tile[1], tile[2] };
      bigger[d] *= 2;
      g_assert_cmpint (pl_conv_direct_working_set (&c, bigger), >, ws);
    }
}

static void
test_machine (void)
{
  int64_t mem = pl_cpu_fast_memory_bytes ();
  g_assert_cmpint (mem, >=, 16 << 10);
  g_assert_cmpint (mem, <=, 1 << 30);
  g_assert_cmpint (pl_cpu_parallel_units (), >=, 1);
  g_test_message ("fast memory %" G_GINT64_FORMAT " KiB per unit, %d units", mem >> 10, pl_cpu_parallel_units ());
  /* steal time: -1 where procfs does not say, else a running total that never goes back */
  double s0 = pl_cpu_steal_ms ();
  g_usleep (20000);
  double s1 = pl_cpu_steal_ms ();
  if (s0 < 0)
    g_assert_cmpfloat (s1, <, 0);
  else
    g_assert_cmpfloat (s1, >=, s0);
}

static const char small_conv[] =
  "graph t opset 17 {\n"
  "  input x: f32[2, 8, 14, 14]\n"
  "  const w: f32[16, 8, 3, 3] = random(seed=1, lo=-1, hi=1)\n"
  "  y = Conv(x, w) {pads=[1, 1, 1, 1]}\n"
  "  r = Relu(y)\n"
  "  output r\n"
  "}\n";

static bool
tile_in (const GArray *space, const int64_t *t)
{
  for (guint i = 0; i < space->len; i++)
    if (memcmp (g_array_index (space, PlTuneTile, i).tile, t, 3 * sizeof (int64_t)) == 0)
      return true;
  return false;
}

static void
assert_search (const GArray *trials, const GArray *space, int max_trials, double best, const int64_t *best_tile)
{
  g_assert_cmpuint (trials->len, ==, MIN ((guint) max_trials, space->len));
  double prev = INFINITY, min = INFINITY;
  for (guint i = 0; i < trials->len; i++)
    {
      const PlTuneTrial *t = &g_array_index (trials, PlTuneTrial, i);
      g_assert_true (tile_in (space, t->tile));
      g_assert_cmpfloat (t->ms, >, 0);
      g_assert_cmpfloat (t->best_ms, <=, prev);
      g_assert_cmpfloat (t->best_ms, <=, t->ms);
      min = MIN (min, t->ms);
      g_assert_cmpfloat (t->best_ms, ==, min);
      prev = t->best_ms;
    }
  g_assert_cmpfloat (best, ==, prev);
  g_assert_true (tile_in (space, best_tile));
}

static void
test_tune (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (small_conv);
  PlNode *conv = g->nodes->pdata[0];
  g_assert_cmpstr (conv->op_type, ==, "Conv");
  for (int l = 0; l < PL_LAYOUT_COUNT; l++)
    {
      g_autoptr (GError) error = NULL;
      GArray *full = NULL, *pruned = NULL;
      int64_t pebble[3];
      g_assert_true (pl_tune_spaces (conv, (PlLayout) l, &full, &pruned, pebble, &error));
      g_assert_no_error (error);
      for (guint i = 0; i < pruned->len; i++)
        g_assert_true (tile_in (full, g_array_index (pruned, PlTuneTile, i).tile));
      g_assert_true (tile_in (pruned, pebble));
      g_assert_true (tile_in (full, pebble));
      g_assert_cmpuint (pruned->len * 4, <=, full->len);
      g_assert_cmpuint (full->len, ==, 6 * 6 * 5);   /* 1,2,4,7,8,14 twice; 1,2,4,8,16 */

      PlTuneOptions o = { .max_trials = 6, .repeat = 1, .seed = 3, .rounds = 3, .cache_dir = cache_dir };
      g_autoptr (PlTuneResult) r = pl_tune_conv (conv, (PlLayout) l, &o, &error);
      g_assert_no_error (error);
      g_assert_nonnull (r);
      g_assert_cmpstr (r->conv, ==, conv->name);
      g_assert_cmpint (r->layout, ==, l);
      g_assert_cmpstr (r->shape, ==, "2,8,14,14 -> 16,14,14 k3x3 s1");
      g_assert_cmpint (r->full_space, ==, (int) full->len);
      g_assert_cmpint (r->pruned_space, ==, (int) pruned->len);
      g_assert_cmpmem (r->pebble_tile, sizeof pebble, pebble, sizeof pebble);
      assert_search (r->full, full, 6, r->best_full_ms, r->best_full_tile);
      assert_search (r->pruned, pruned, 6, r->best_pruned_ms, r->best_pruned_tile);
      /* the pruned search starts at the pebble tile */
      g_assert_cmpmem (g_array_index (r->pruned, PlTuneTrial, 0).tile, sizeof pebble, pebble, sizeof pebble);
      /* the two best tiles were timed again side by side; one tile when they agree */
      g_assert_cmpint (r->rounds, ==, 3);
      g_assert_cmpfloat (r->head_full_ms, >, 0);
      g_assert_cmpfloat (r->head_pruned_ms, >, 0);
      if (memcmp (r->best_full_tile, r->best_pruned_tile, sizeof r->best_full_tile) == 0)
        g_assert_cmpfloat (r->head_full_ms, ==, r->head_pruned_ms);
      g_autofree char *json = pl_tune_result_json (r);
      g_assert_nonnull (strstr (json, "\"pruned_space\":"));
      g_assert_nonnull (strstr (json, "\"head_to_head\":{\"rounds\":3,"));
      g_assert_nonnull (strstr (json, "\"best_full\":{\"tile\":["));
      g_assert_nonnull (strstr (json, pl_layout_name ((PlLayout) l)));
      g_array_unref (full);
      g_array_unref (pruned);
    }
}

/* CHWN's pointwise kernel: its pruned tiles span the width, as its pebble tile does */
static void
test_tune_chwn_pointwise (void)
{
  g_autoptr (PlGraph) g = pl_test_parse ("graph t opset 17 {\n"
                                         "  input x: f32[8, 64, 14, 14]\n"
                                         "  const w: f32[128, 64, 1, 1] = random(seed=1, lo=-1, hi=1)\n"
                                         "  y = Conv(x, w)\n"
                                         "  output y\n"
                                         "}\n");
  g_autoptr (GError) error = NULL;
  GArray *full = NULL, *pruned = NULL;
  int64_t pebble[3];
  g_assert_true (pl_tune_spaces (g->nodes->pdata[0], PL_LAYOUT_CHWN, &full, &pruned, pebble, &error));
  g_assert_no_error (error);
  g_assert_cmpint (pebble[0], ==, 14);
  g_assert_cmpuint (pruned->len, >=, 4);
  for (guint i = 0; i < pruned->len; i++)
    g_assert_cmpint (g_array_index (pruned, PlTuneTile, i).tile[0], ==, 14);
  g_array_unref (full);
  g_array_unref (pruned);
}

static void
test_tune_errors (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (small_conv);
  PlTuneOptions o = { .max_trials = 2, .repeat = 1, .seed = 1, .cache_dir = cache_dir };
  g_autoptr (GError) error = NULL;
  PlNode *relu = g->nodes->pdata[1];
  g_assert_null (pl_tune_conv (relu, PL_LAYOUT_NCHW, &o, &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_INVALID);
  g_assert_nonnull (strstr (error->message, "not a Conv"));
  g_clear_error (&error);

  g_autoptr (PlGraph) d = pl_test_parse ("graph d opset 17 {\n"
                                 "  input x: f32[N, 8, 14, 14]\n"
                                 "  const w: f32[16, 8, 3, 3] = random(seed=1, lo=-1, hi=1)\n"
                                 "  y = Conv(x, w)\n"
                                 "  output y\n"
                                 "}\n");
  g_assert_null (pl_tune_conv (d->nodes->pdata[0], PL_LAYOUT_NHWC, &o, &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED);
  g_assert_nonnull (strstr (error->message, "static shapes"));
}

static void
test_cuda (void)
{
  g_autofree char *reason = NULL;
  if (!pl_nvrtc_available (&reason))
    {
      g_test_skip (reason ? reason : "no NVRTC");
      return;
    }
  const size_t pick[] = { 0, 1, 3, 4, 6, 8, 11 };
  for (size_t i = 0; i < G_N_ELEMENTS (pick); i++)
    for (int l = 0; l < PL_LAYOUT_COUNT; l++)
      {
        PlConvDesc c = case_desc (&cases[pick[i]], (PlLayout) l);
        if (i % 2)
          {
            c.tile[0] = 5;
            c.tile[1] = 3;
            c.tile[2] = 4;
          }
        GString *src = g_string_new (NULL);
        unsigned grid[3], block[3];
        pl_conv_direct_emit_cuda (src, &c, "direct_conv", grid, block);
        g_assert_cmpuint (grid[0] * grid[1] * grid[2], >=, 1);
        g_assert_cmpuint (block[0], >=, 32);
        g_assert_cmpuint (block[0], <=, 1024);
        g_assert_cmpuint (block[0] % 32, ==, 0);
        g_autofree char *source = g_string_free (src, FALSE);
        g_autoptr (GError) error = NULL;
        size_t size = 0;
        g_autofree char *ptx = pl_nvrtc_compile (source, "compute_90", NULL, NULL, &size, &error);
        if (error)
          g_error ("%s in %s: %s\n%s", cases[pick[i]].name, pl_layout_name ((PlLayout) l), error->message, source);
        g_assert_nonnull (strstr (ptx, ".entry direct_conv"));
      }
}

/* The CUDA kernels run on the CPU, as C, so that their indexing is checked
 * without a GPU: the threads of a block are coroutines (ucontext) that run
 * in turn from one __syncthreads to the next, __shared__ arrays are static
 * (blocks run one after another). */
static const char cuda_shim[] =
  "#include <stdlib.h>\n#include <ucontext.h>\n"
  "typedef struct { unsigned x, y, z; } dim3;\n"
  "static dim3 threadIdx, blockIdx, gridDim;\n"
  "static ucontext_t sched_ctx, thread_ctx[1024];\n"
  "static unsigned n_threads, current;\n"
  "/* a barrier: the next thread runs; after the last, the first goes on */\n"
  "static void sync_threads (void)\n"
  "{\n"
  "  const unsigned me = current, next = (me + 1) % n_threads;\n"
  "  current = threadIdx.x = next;\n"
  "  swapcontext (&thread_ctx[me], &thread_ctx[next]);\n"
  "  current = threadIdx.x = me;\n"
  "}\n"
  "#define __syncthreads() sync_threads ()\n"
  "#define __global__\n#define __shared__ static\n#define __launch_bounds__(n)\n#define __restrict__ restrict\n"
  "typedef void (*Kernel) (const void *, const void *, void *);\n"
  "static Kernel kernel;\n"
  "static const void *kx, *kw;\n"
  "static void *ky;\n"
  "static void thread_entry (void)\n"
  "{\n"
  "  kernel (kx, kw, ky);\n"
  "}\n"
  "static void launch (Kernel k, const void *x, const void *w, void *y, const unsigned *grid, unsigned threads)\n"
  "{\n"
  "  const size_t stack = 1 << 16;\n"
  "  char *stacks = malloc (stack * threads);\n"
  "  kernel = k, kx = x, kw = w, ky = y;\n"
  "  n_threads = threads;\n"
  "  gridDim = (dim3) { grid[0], grid[1], grid[2] };\n"
  "  for (unsigned bz = 0; bz < grid[2]; bz++)\n"
  "    for (unsigned by = 0; by < grid[1]; by++)\n"
  "      for (unsigned bx = 0; bx < grid[0]; bx++)\n"
  "        {\n"
  "          blockIdx = (dim3) { bx, by, bz };\n"
  "          for (unsigned t = 0; t < threads; t++)\n"
  "            {\n"
  "              getcontext (&thread_ctx[t]);\n"
  "              thread_ctx[t].uc_stack.ss_sp = stacks + stack * t;\n"
  "              thread_ctx[t].uc_stack.ss_size = stack;\n"
  "              thread_ctx[t].uc_link = &sched_ctx;\n"
  "              makecontext (&thread_ctx[t], thread_entry, 0);\n"
  "            }\n"
  "          /* thread 0 starts; each later one, once those before it have ended */\n"
  "          for (unsigned t = 0; t < threads; t++)\n"
  "            {\n"
  "              current = threadIdx.x = t;\n"
  "              swapcontext (&sched_ctx, &thread_ctx[t]);\n"
  "            }\n"
  "        }\n"
  "  free (stacks);\n"
  "}\n\n";

typedef void (*LaunchFn) (const void *x, const void *w, void *y, const unsigned *grid, unsigned threads);

static void
test_cuda_emulated (void)
{
  /* cases with the pebble tile (0s), one that divides nothing, or one with
   * 2 points a thread and a ragged right edge */
  static const struct { size_t index; int64_t tile[3]; } runs[] = {
    { 0, { 0, 0, 0 } }, { 1, { 0, 0, 0 } }, { 2, { 5, 3, 4 } }, { 3, { 5, 3, 4 } }, { 4, { 0, 0, 0 } },
    { 6, { 5, 3, 4 } }, { 7, { 20, 16, 8 } }, { 9, { 0, 0, 0 } }, { 11, { 5, 3, 4 } },
  };
  enum { N_RUNS = G_N_ELEMENTS (runs) };
  GString *src = g_string_new (cuda_shim);
  unsigned grids[N_RUNS][PL_LAYOUT_COUNT][3], blocks[N_RUNS][PL_LAYOUT_COUNT];
  for (size_t i = 0; i < N_RUNS; i++)
    for (int l = 0; l < PL_LAYOUT_COUNT; l++)
      {
        PlConvDesc c = case_desc (&cases[runs[i].index], (PlLayout) l);
        memcpy (c.tile, runs[i].tile, sizeof c.tile);
        g_autofree char *name = g_strdup_printf ("cuda_%zu_%d", i, l);
        unsigned block[3];
        GString *k = g_string_new (NULL);
        pl_conv_direct_emit_cuda (k, &c, name, grids[i][l], block);
        g_string_replace (k, "extern \"C\" ", "", 0);
        g_string_append (src, k->str);
        g_string_free (k, TRUE);
        g_string_append_printf (src, "void run_%s (const void *x, const void *w, void *y, const unsigned *grid, "
                                "unsigned threads) { launch ((Kernel) %s, x, w, y, grid, threads); }\n\n", name, name);
        blocks[i][l] = block[0];
      }
  g_autofree char *source = g_string_free (src, FALSE);
  PlCpuModule *m = compile (source);
  for (size_t i = 0; i < N_RUNS; i++)
    for (int l = 0; l < PL_LAYOUT_COUNT; l++)
      {
        Data d;
        data_init (&d, runs[i].index, (PlLayout) l);
        g_autofree char *name = g_strdup_printf ("run_cuda_%zu_%d", i, l);
        LaunchFn fn = (LaunchFn) pl_cpu_module_symbol (m, name);
        g_assert_nonnull (fn);
        g_autofree void *yb = nan_output (&d);
        fn (d.xb, d.wp, yb, grids[i][l], blocks[i][l]);
        g_autofree char *what = g_strdup_printf ("CUDA %s, tile %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%"
                                                 G_GINT64_FORMAT " (0: pebble)", cases[runs[i].index].name,
                                                 runs[i].tile[0], runs[i].tile[1], runs[i].tile[2]);
        assert_output (&d, yb, what);
        data_clear (&d);
      }
  pl_cpu_module_free (m);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  pl_ops_init ();
  const char *build = g_getenv ("PASSLAB_BUILD_DIR");
  cache_dir = g_build_filename (build ? build : g_get_tmp_dir (), "kernel-cache-tests", NULL);
  g_test_add_func ("/Passlab/ConvDirect/supported", test_supported);
  g_test_add_func ("/Passlab/ConvDirect/pack", test_pack);
  g_test_add_func ("/Passlab/ConvDirect/small-groups", test_small_groups);
  g_test_add_func ("/Passlab/ConvDirect/pebble", test_pebble);
  g_test_add_func ("/Passlab/ConvDirect/machine", test_machine);
  g_test_add_func ("/Passlab/ConvDirect/kernels", test_kernels);
  g_test_add_func ("/Passlab/ConvDirect/tune", test_tune);
  g_test_add_func ("/Passlab/ConvDirect/tune-chwn-pointwise", test_tune_chwn_pointwise);
  g_test_add_func ("/Passlab/ConvDirect/tune-errors", test_tune_errors);
  g_test_add_func ("/Passlab/ConvDirect/cuda", test_cuda);
  g_test_add_func ("/Passlab/ConvDirect/cuda-emulated", test_cuda_emulated);
  int status = g_test_run ();
  g_free (cache_dir);
  return status;
}

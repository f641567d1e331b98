/* test-kernels-layout.c — the runtime with data layouts (seed 003, MACO;
 * DESIGN.md §1.4). Values inside a graph may be stored NHWC or CHWN; the
 * kernels must read and write them so, and the results must equal the
 * reference interpreter's (which ignores layouts):
 *
 *  - convolutions in each layout and impl (im2col + GEMM, generated direct)
 *    over strides, padding, dilation, groups (depthwise too), 1x1 and
 *    batches 1 and 4, as x -> LayoutTransform -> Conv -> Relu ->
 *    LayoutTransform -> y, unfused (gemm) and with the conv's epilogue
 *    fused; X and Y in different layouts;
 *  - the ResNet block with its activations in each layout, unfused and fused;
 *  - pooling (MaxPool, AveragePool, the global pools) generated in each
 *    layout: strides 1 and 2, pads 0 and 1, ceil_mode, count_include_pad,
 *    kernels 2 and 3, dilation, auto_pad SAME, odd sizes (7x7, 1x1), batches
 *    1 and 3, f64; 1-d and 3-d in NCHW; MaxPool with its Indices used
 *    stays a fallback;
 *  - what is not layout-aware still runs right: views (Flatten, Reshape)
 *    become copies, GEMM operands are transposed first, fallbacks see
 *    logical tensors, swap copies between layouts reorder (cpu) or are
 *    refused (cuda); weights that are not constants are packed every run;
 *  - the generated CUDA of every layout compiles with NVRTC (skipped
 *    without libnvrtc) and, with a GPU, agrees with the interpreter. */
#include "builtin-passes.h"
#include "fusion.h"
#include "kernel-plan.h"
#include "pass-manager.h"
#include "runtime.h"
#include "text-format.h"
#include "test-util.h"

#include <stdlib.h>
#include <string.h>

static char *cache_dir;
static bool have_nvrtc, have_gpu;

static const PlLayout layouts[] = { PL_LAYOUT_NCHW, PL_LAYOUT_NHWC, PL_LAYOUT_CHWN };

/* Sets the layout of the named values, then checks the graph. */
static void
set_layouts (PlGraph *g, PlLayout layout, const char *const *names)
{
  for (int i = 0; names[i]; i++)
    {
      PlValue *v = pl_graph_find_value (g, names[i]);
      g_assert_nonnull (v);
      v->layout = layout;
    }
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_graph_verify (g, &error));
  g_assert_no_error (error);
}

static void
assert_all_close (const PlGraph *g, PlTensor **got, PlTensor **want, double rtol, double atol)
{
  for (guint i = 0; i < g->outputs->len; i++)
    {
      double worst = 0;
      if (!pl_tensor_allclose (got[i], want[i], rtol, atol, &worst))
        {
          g_autofree char *a = pl_tensor_summary (got[i], 6), *b = pl_tensor_summary (want[i], 6);
          g_autofree char *text = pl_text_print (g);
          g_printerr ("%s\noutput %u differs (worst %g):\n  got %s\n  ref %s\n", text, i, worst, a, b);
          g_assert_not_reached ();
        }
    }
}

/* Runs g on backend and in the interpreter; the outputs must agree. Returns the report. */
static PlRunReport *
check_on (const PlGraph *g, PlBackend backend, double rtol, double atol)
{
  g_autoptr (GError) error = NULL;
  PlTensor **in = pl_random_inputs (g, 7, 1, &error);
  g_assert_no_error (error);
  PlTensor **want = pl_interp_run (g, in, NULL, &error);
  g_assert_no_error (error);
  PlCompileOptions o;
  pl_compile_options_init (&o, backend);
  o.cache_dir = cache_dir;
  PlExecutable *e = pl_executable_new (g, &o, &error);
  g_assert_no_error (error);
  PlRunReport *r = NULL;
  PlTensor **got = pl_executable_run (e, in, 1, &r, &error);
  g_assert_no_error (error);
  assert_all_close (g, got, want, rtol, atol);
  pl_interp_free_outputs (got, (int) g->outputs->len);
  pl_interp_free_outputs (want, (int) g->outputs->len);
  pl_interp_free_outputs (in, (int) g->inputs->len);
  pl_executable_free (e);
  return r;
}

/* The cpu run; with libnvrtc the CUDA C compiles, with a GPU it runs right too. */
static PlRunReport *
check_graph (const PlGraph *g, double rtol, double atol)
{
  if (have_nvrtc)
    {
      g_autoptr (GError) error = NULL;
      g_autofree char *source = NULL;
      int n = 0;
      bool ok = pl_cuda_compile_check (g, "compute_90", &source, &n, &error);
      if (!ok)
        g_printerr ("%s\n", source ? source : "");
      g_assert_no_error (error);
      g_assert_true (ok);
    }
  if (have_gpu)
    pl_run_report_free (check_on (g, PL_BACKEND_CUDA, rtol, atol));
  return check_on (g, PL_BACKEND_CPU, rtol, atol);
}

static int
count_ops (const PlRunReport *r, const char *ops)
{
  int n = 0;
  for (int i = 0; i < r->n_kernels; i++)
    n += strcmp (r->kernels[i].ops, ops) == 0;
  return n;
}

static const PlKernelTiming *
kernel_with_op (const PlRunReport *r, const char *op)
{
  for (int i = 0; i < r->n_kernels; i++)
    if (strstr (r->kernels[i].ops, op))
      return &r->kernels[i];
  return NULL;
}

/* --- convolutions ------------------------------------------------------------------ */

typedef struct {
  const char *name;
  int64_t     n, c, h, w, k, kh, kw;
  int64_t     stride, dilation, group;
  int64_t     pads[4];
  bool        bias;
} ConvCase;

static const ConvCase conv_cases[] = {
  { "3x3",        1, 8, 9, 9, 16, 3, 3, 1, 1, 1, { 1, 1, 1, 1 }, false },
  { "stride2",    4, 6, 10, 9, 8, 3, 3, 2, 1, 1, { 1, 1, 1, 1 }, true },
  { "dilation2",  1, 4, 11, 11, 6, 3, 3, 1, 2, 1, { 2, 2, 2, 2 }, false },
  { "group2",     4, 8, 7, 7, 12, 3, 3, 1, 1, 2, { 1, 1, 1, 1 }, true },
  { "depthwise",  4, 8, 9, 9, 8, 3, 3, 2, 1, 8, { 1, 1, 1, 1 }, false },
  { "1x1",        4, 16, 7, 7, 8, 1, 1, 1, 1, 1, { 0, 0, 0, 0 }, true },
  { "1x1-group",  1, 8, 5, 5, 4, 1, 1, 1, 1, 2, { 0, 0, 0, 0 }, false },
  { "1x1-stride2", 1, 8, 8, 8, 4, 1, 1, 2, 1, 1, { 0, 0, 0, 0 }, false },
  { "asym",       2, 3, 10, 7, 5, 3, 2, 1, 1, 1, { 0, 1, 2, 0 }, true },
};

typedef struct {
  const ConvCase *cc;
  PlLayout        xl, yl;
  bool            relu_nchw;   /* the Relu writes NCHW (a fused epilogue then reorders) */
} ConvBranch;

/* One graph, one branch per entry (value names suffixed by its index):
 * x -> [LayoutTransform to xl] -> Conv (Y in yl) -> Relu (yl) -> [LayoutTransform to NCHW] -> y.
 * One graph for many convs: one compilation. */
static PlGraph *
conv_graph (const ConvBranch *br, int n_br, const char *impl)
{
  GString *t = g_string_new ("graph conv opset 17 {\n");
  for (int i = 0; i < n_br; i++)
    {
      const ConvCase *cc = br[i].cc;
      g_string_append_printf (t, "  input x%d: f32[%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %"
                              G_GINT64_FORMAT "]\n", i, cc->n, cc->c, cc->h, cc->w);
      g_string_append_printf (t, "  const w%d: f32[%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %"
                              G_GINT64_FORMAT "] = random(seed=%d, lo=-0.5, hi=0.5)\n", i, cc->k, cc->c / cc->group,
                              cc->kh, cc->kw, 3 + i);
      if (cc->bias)
        g_string_append_printf (t, "  const b%d: f32[%" G_GINT64_FORMAT "] = random(seed=%d, lo=-0.5, hi=0.5)\n", i,
                                cc->k, 50 + i);
      if (br[i].xl != PL_LAYOUT_NCHW)
        g_string_append_printf (t, "  xl%d = LayoutTransform(x%d) {to=\"%s\"}\n", i, i, pl_layout_name (br[i].xl));
      g_string_append_printf (t, "  c%d = Conv(%s%d, w%d", i, br[i].xl != PL_LAYOUT_NCHW ? "xl" : "x", i, i);
      if (cc->bias)
        g_string_append_printf (t, ", b%d", i);
      g_string_append_printf (t, ") {strides=[%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "], dilations=[%" G_GINT64_FORMAT
                              ", %" G_GINT64_FORMAT "], group=%" G_GINT64_FORMAT ", pads=[%" G_GINT64_FORMAT ", %"
                              G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "], impl=\"%s\"}\n",
                              cc->stride, cc->stride, cc->dilation, cc->dilation, cc->group, cc->pads[0], cc->pads[1],
                              cc->pads[2], cc->pads[3], impl);
      g_string_append_printf (t, "  r%d = Relu(c%d)\n", i, i);
      if (br[i].yl != PL_LAYOUT_NCHW && !br[i].relu_nchw)
        g_string_append_printf (t, "  y%d = LayoutTransform(r%d) {to=\"NCHW\"}\n  output y%d\n", i, i, i);
      else
        g_string_append_printf (t, "  output r%d\n", i);
    }
  g_string_append (t, "}\n");
  g_autofree char *text = g_string_free (t, FALSE);
  PlGraph *g = pl_test_parse (text);
  for (int i = 0; i < n_br; i++)
    {
      g_autofree char *c = g_strdup_printf ("c%d", i), *r = g_strdup_printf ("r%d", i);
      set_layouts (g, br[i].yl, (const char *const[]) { c, br[i].relu_nchw ? NULL : r, NULL });
    }
  return g;
}

/* conv-direct.c may still be a stub: the planner then plans direct convs as GEMM. */
static bool
direct_available (void)
{
  ConvBranch br = { &conv_cases[0], PL_LAYOUT_NCHW, PL_LAYOUT_NCHW, false };
  g_autoptr (PlGraph) g = conv_graph (&br, 1, "direct");
  g_autoptr (GError) error = NULL;
  g_autoptr (PlKernelPlan) p = pl_kernel_plan_for_node ("k", pl_graph_find_value (g, "c0")->producer, &error);
  g_assert_no_error (error);
  return p->conv.impl == PL_CONV_IMPL_DIRECT;
}

/* Every conv of the report ran as the library kernel of its layout and impl. */
static void
assert_convs (const PlRunReport *r, int n, PlLayout L, const char *impl)
{
  int convs = 0;
  for (int k = 0; k < r->n_kernels; k++)
    {
      const PlKernelTiming *kt = &r->kernels[k];
      if (!strstr (kt->ops, "Conv"))
        continue;
      convs++;
      g_assert_true (kt->library);
      g_assert_false (kt->fallback);
      g_assert_nonnull (strstr (kt->note, pl_layout_name (L)));
      g_assert_nonnull (strstr (kt->note, impl[0] == 'd' ? "direct" : "im2col"));
      g_assert_cmpint (kt->flops, >, 0);
    }
  g_assert_cmpint (convs, ==, n);
}

static void
test_conv (gconstpointer data)
{
  const char *impl = data;
  bool direct = strcmp (impl, "direct") == 0;
  if (direct && !direct_available ())
    {
      g_test_skip ("the direct convolution (conv-direct.c) is not built");
      return;
    }
  int n = (int) G_N_ELEMENTS (conv_cases);
  for (gsize l = 0; l < G_N_ELEMENTS (layouts); l++)
    {
      PlLayout L = layouts[l];
      ConvBranch br[G_N_ELEMENTS (conv_cases)];
      for (int i = 0; i < n; i++)
        br[i] = (ConvBranch) { &conv_cases[i], L, L, false };
      g_autoptr (PlGraph) g = conv_graph (br, n, impl);
      if (!direct)   /* (the direct kernels compile slowly: they run fused only) */
        {
          g_autoptr (PlRunReport) r = check_graph (g, 1e-4, 1e-4);
          assert_convs (r, n, L, impl);
          /* the transforms are kernel rows of their own, named so */
          g_assert_cmpint (count_ops (r, "LayoutTransform"), ==, L == PL_LAYOUT_NCHW ? 0 : 2 * n);
        }
      /* the conv's epilogue (bias, Relu) fused: it reads the raw result in the conv's layout */
      g_autoptr (PlGraph) f = pl_test_passes (g, "fuse-library");
      g_autoptr (PlRunReport) rf = check_graph (f, 1e-4, 1e-4);
      assert_convs (rf, n, L, impl);
      g_assert_cmpint (rf->n_kernels, ==, L == PL_LAYOUT_NCHW ? n : 3 * n);
    }
}

/* X and Y of one conv in different layouts: im2col reads X in its own; and
 * Relus that store NCHW what their conv wrote in another layout (fused: an
 * epilogue that is not in place). */
static void
test_conv_mixed (void)
{
  const PlLayout pairs[][2] = {
    { PL_LAYOUT_NCHW, PL_LAYOUT_NHWC }, { PL_LAYOUT_NHWC, PL_LAYOUT_NCHW }, { PL_LAYOUT_NHWC, PL_LAYOUT_CHWN },
    { PL_LAYOUT_CHWN, PL_LAYOUT_NHWC }, { PL_LAYOUT_CHWN, PL_LAYOUT_NCHW },
  };
  const ConvCase *cases[] = { &conv_cases[1], &conv_cases[3], &conv_cases[5] };
  ConvBranch br[G_N_ELEMENTS (pairs) * G_N_ELEMENTS (cases)];
  int n = 0;
  for (gsize p = 0; p < G_N_ELEMENTS (pairs); p++)
    for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
      br[n++] = (ConvBranch) { cases[i], pairs[p][0], pairs[p][1], i == 1 };
  g_autoptr (PlGraph) g = conv_graph (br, n, "gemm");
  g_autoptr (PlRunReport) r = check_graph (g, 1e-4, 1e-4);
  g_autoptr (PlGraph) f = pl_test_passes (g, "fuse-library");
  g_autoptr (PlRunReport) rf = check_graph (f, 1e-4, 1e-4);
}

/* Weights that are not constants (a graph input here; a training step's
 * parameters) are packed every run instead of once: NHWC GEMM and direct. */
static void
test_conv_weights_input (void)
{
  GString *t = g_string_new ("graph cw opset 17 {\n  input w: f32[8, 3, 3, 3]\n");
  for (int i = 0; i < 6; i++)
    g_string_append_printf (t, "  input x%d: f32[2, 6, 7, 7]\n  t%d = LayoutTransform(x%d) {to=\"%s\"}\n"
                            "  c%d = Conv(t%d, w) {pads=[1, 1, 1, 1], group=2, impl=\"%s\"}\n"
                            "  y%d = LayoutTransform(c%d) {to=\"NCHW\"}\n  output y%d\n", i, i, i,
                            pl_layout_name (layouts[i % 3]), i, i, i < 3 ? "gemm" : "direct", i, i, i);
  g_string_append (t, "}\n");
  g_autofree char *text = g_string_free (t, FALSE);
  g_autoptr (PlGraph) g = pl_test_parse (text);
  for (int i = 0; i < 6; i++)
    {
      g_autofree char *c = g_strdup_printf ("c%d", i);
      set_layouts (g, layouts[i % 3], (const char *const[]) { c, NULL });
    }
  g_autoptr (PlRunReport) r = check_graph (g, 1e-4, 1e-4);
  g_assert_cmpint (r->param_bytes, ==, 0);
}

/* --- the ResNet block --------------------------------------------------------------- */

static char *
replace (const char *text, const char *from, const char *to)
{
  g_assert_nonnull (strstr (text, from));
  g_auto (GStrv) parts = g_strsplit (text, from, 2);
  return g_strconcat (parts[0], to, parts[1], NULL);
}

/* The sample's block with every activation between the two transforms in
 * layout; shortcut_in_layout: the residual Add reads the transformed input
 * (else the NCHW graph input: an elementwise op over two layouts). */
static PlGraph *
resnet_in_layout (PlLayout layout, bool shortcut_in_layout)
{
  g_autofree char *path = pl_test_source_path ("data/graphs/resnet_block.graph");
  g_autofree char *text = NULL;
  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  g_autofree char *lt = g_strdup_printf ("  xt = LayoutTransform(x) {to=\"%s\"}\n  conv1: f32[1, 64, 56, 56] = Conv(xt,",
                                         pl_layout_name (layout));
  g_autofree char *a = replace (text, "  conv1: f32[1, 64, 56, 56] = Conv(x,", lt);
  g_autofree char *b = replace (a, "  out = Relu(residual)\n",
                                "  o = Relu(residual)\n  out = LayoutTransform(o) {to=\"NCHW\"}\n");
  g_autofree char *c = shortcut_in_layout ? replace (b, "Add(bn2, x)", "Add(bn2, xt)") : g_strdup (b);
  PlGraph *g = pl_test_parse (c);
  set_layouts (g, layout, (const char *const[]) { "conv1", "bn1", "relu1", "conv2", "bn2", "residual", "o", NULL });
  return g;
}

static void
test_resnet_block (void)
{
  for (gsize l = 0; l < G_N_ELEMENTS (layouts); l++)
    {
      /* NHWC's shortcut reads the transformed input, the others' the graph's */
      g_autoptr (PlGraph) g = resnet_in_layout (layouts[l], layouts[l] == PL_LAYOUT_NHWC);
      g_autoptr (PlRunReport) r = check_graph (g, 1e-3, 1e-3);
      g_assert_cmpint (count_ops (r, "LayoutTransform"), ==, 2);
      for (int i = 0; i < r->n_kernels; i++)
        g_assert_false (r->kernels[i].fallback);
      g_autoptr (PlGraph) f = pl_test_passes (g, "simplify,decompose,reshape-sink,fuse-library,fuse-loops");
      g_autoptr (PlRunReport) rf = check_graph (f, 1e-3, 1e-3);
      g_assert_cmpint (rf->n_kernels, <, r->n_kernels);
      for (int i = 0; i < rf->n_kernels; i++)
        g_assert_false (rf->kernels[i].fallback);
    }
}

/* --- pooling ------------------------------------------------------------------------ */

typedef struct {
  const char *op;       /* MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool */
  const char *attrs;    /* the node's attributes, without braces */
  const char *x;        /* X's shape and dtype */
  const char *note;     /* the kernel's note without its layout */
} PoolCase;

static const PoolCase pool_cases[] = {
  { "MaxPool", "kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]", "f32[1, 8, 14, 14]", "maxpool 3x3/2" },
  { "MaxPool", "kernel_shape=[3, 3], pads=[1, 1, 1, 1]", "f32[3, 5, 7, 7]", "maxpool 3x3" },
  { "MaxPool", "kernel_shape=[2, 2], strides=[2, 2]", "f32[3, 6, 7, 7]", "maxpool 2x2/2" },
  { "MaxPool", "kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1", "f32[2, 4, 6, 8]", "maxpool 3x3/2" },
  { "MaxPool", "kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]", "f32[2, 3, 1, 1]", "maxpool 3x3/2" },
  { "MaxPool", "kernel_shape=[3, 2], strides=[2, 1], pads=[1, 0, 0, 1], dilations=[2, 1]", "f32[2, 4, 9, 7]",
    "maxpool 3x2/2x1 dilated" },
  { "MaxPool", "kernel_shape=[3, 3], strides=[2, 2], auto_pad=\"SAME_UPPER\"", "f32[1, 4, 8, 9]", "maxpool 3x3/2" },
  { "MaxPool", "kernel_shape=[2, 2], strides=[1, 1]", "f64[2, 3, 5, 5]", "maxpool 2x2" },
  { "AveragePool", "kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]", "f32[2, 6, 7, 7]", "avgpool 3x3/2" },
  { "AveragePool", "kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1", "f32[3, 4, 7, 7]",
    "avgpool 3x3/2 pad-counted" },
  /* ceil_mode past the end pad: the last window has cells that count neither way */
  { "AveragePool", "kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1",
    "f32[1, 3, 6, 6]", "avgpool 3x3/2 pad-counted" },
  { "AveragePool", "kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1", "f32[2, 3, 6, 6]",
    "avgpool 3x3/2" },
  { "AveragePool", "kernel_shape=[2, 2], strides=[2, 2]", "f32[1, 16, 8, 8]", "avgpool 2x2/2" },
  { "AveragePool", "kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1", "f32[2, 3, 1, 1]",
    "avgpool 3x3 pad-counted" },
  { "AveragePool", "kernel_shape=[2, 3], auto_pad=\"SAME_LOWER\"", "f64[2, 3, 5, 6]", "avgpool 2x3" },
  { "GlobalAveragePool", "", "f32[3, 8, 7, 7]", "global avgpool" },
  { "GlobalAveragePool", "", "f32[2, 5, 1, 1]", "global avgpool" },
  { "GlobalMaxPool", "", "f32[3, 8, 7, 7]", "global maxpool" },
  { "GlobalMaxPool", "", "f64[1, 4, 3, 5]", "global maxpool" },
};

/* One branch per case, all in `layout`: x -> [to layout] -> pool -> [to NCHW] -> y. */
static PlGraph *
pool_graph (const PoolCase *const *cases, int n, PlLayout layout)
{
  GString *t = g_string_new ("graph pool opset 17 {\n");
  const bool other = layout != PL_LAYOUT_NCHW;
  for (int i = 0; i < n; i++)
    {
      const PoolCase *pc = cases[i];
      g_string_append_printf (t, "  input x%d: %s\n", i, pc->x);
      if (other)
        g_string_append_printf (t, "  t%d = LayoutTransform(x%d) {to=\"%s\"}\n", i, i, pl_layout_name (layout));
      g_string_append_printf (t, "  p%d = %s(%s%d)%s%s%s\n", i, pc->op, other ? "t" : "x", i, *pc->attrs ? " {" : "",
                              pc->attrs, *pc->attrs ? "}" : "");
      if (other)
        g_string_append_printf (t, "  y%d = LayoutTransform(p%d) {to=\"NCHW\"}\n  output y%d\n", i, i, i);
      else
        g_string_append_printf (t, "  output p%d\n", i);
    }
  g_string_append (t, "}\n");
  g_autofree char *text = g_string_free (t, FALSE);
  PlGraph *g = pl_test_parse (text);
  for (int i = 0; i < n && other; i++)
    {
      g_autofree char *p = g_strdup_printf ("p%d", i);
      set_layouts (g, layout, (const char *const[]) { p, NULL });
    }
  return g;
}

/* Every pool of the report ran generated, with its case's note in the layout. */
static void
assert_pools (const PlRunReport *r, const PoolCase *const *cases, int n, PlLayout layout)
{
  int pools = 0;
  for (int k = 0; k < r->n_kernels; k++)
    {
      const PlKernelTiming *kt = &r->kernels[k];
      if (!strstr (kt->ops, "Pool"))
        continue;
      int i = atoi (kt->name + 1);   /* the node is named after its output, p<i> */
      g_assert_cmpint (i, <, n);
      g_autofree char *note = g_strdup_printf ("%s %s", cases[i]->note, pl_layout_name (layout));
      g_assert_false (kt->fallback);
      g_assert_cmpstr (kt->kind, ==, "op");
      g_assert_cmpstr (kt->note, ==, note);
      g_assert_cmpint (kt->flops, >, 0);
      pools++;
    }
  g_assert_cmpint (pools, ==, n);
}

static void
test_pool (void)
{
  const int n = (int) G_N_ELEMENTS (pool_cases);
  const PoolCase *cases[G_N_ELEMENTS (pool_cases)];
  for (int i = 0; i < n; i++)
    cases[i] = &pool_cases[i];
  for (gsize l = 0; l < G_N_ELEMENTS (layouts); l++)
    {
      g_autoptr (PlGraph) g = pool_graph (cases, n, layouts[l]);
      g_autoptr (PlRunReport) r = check_graph (g, 1e-5, 1e-6);
      assert_pools (r, cases, n, layouts[l]);
      g_assert_cmpint (count_ops (r, "LayoutTransform"), ==, layouts[l] == PL_LAYOUT_NCHW ? 0 : 2 * n);
      if (have_nvrtc)
        {
          /* (check_graph compiled it) every pool is a generated CUDA kernel, not a fallback */
          g_autoptr (GError) error = NULL;
          g_autofree char *source = NULL;
          g_assert_true (pl_cuda_compile_check (g, "compute_90", &source, NULL, &error));
          int kernels = 0;
          for (const char *s = source; (s = strstr (s, "a thread per output (pool.c)")); s++)
            kernels++;
          g_assert_cmpint (kernels, ==, n);
        }
    }
}

/* 1-d and 3-d pools (NCHW, the only layout of ranks other than 4). */
static void
test_pool_ranks (void)
{
  static const PoolCase ranks[] = {
    { "MaxPool", "kernel_shape=[3], strides=[2], pads=[1, 1]", "f32[2, 3, 9]", "maxpool 3/2" },
    { "AveragePool", "kernel_shape=[2], strides=[1], pads=[0, 1], count_include_pad=1", "f32[2, 3, 5]",
      "avgpool 2 pad-counted" },
    { "MaxPool", "kernel_shape=[2, 3, 3], strides=[1, 2, 2], pads=[0, 1, 1, 1, 1, 1]", "f32[1, 4, 3, 7, 7]",
      "maxpool 2x3x3/1x2x2" },
    { "AveragePool", "kernel_shape=[2, 2, 2], strides=[2, 2, 2], ceil_mode=1", "f32[2, 2, 5, 5, 5]",
      "avgpool 2x2x2/2" },
    { "GlobalAveragePool", "", "f32[2, 3, 4, 5, 6]", "global avgpool" },
    { "GlobalMaxPool", "", "f32[2, 3, 11]", "global maxpool" },
  };
  const int n = (int) G_N_ELEMENTS (ranks);
  const PoolCase *cases[G_N_ELEMENTS (ranks)];
  for (int i = 0; i < n; i++)
    cases[i] = &ranks[i];
  g_autoptr (PlGraph) g = pool_graph (cases, n, PL_LAYOUT_NCHW);
  g_autoptr (PlRunReport) r = check_graph (g, 1e-5, 1e-6);
  assert_pools (r, cases, n, PL_LAYOUT_NCHW);
}

/* The plan of a pool, and what stays a fallback: MaxPool whose Indices are
 * read, X and Y in different layouts, integers. */
static void
test_pool_plan (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (
    "graph pp opset 17 {\n  input x: f32[1, 8, 112, 112]\n  input q: u8[1, 2, 4, 4]\n"
    "  t = LayoutTransform(x) {to=\"NHWC\"}\n"
    "  p = MaxPool(t) {kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]}\n"
    "  m, idx = MaxPool(x) {kernel_shape=[2, 2], strides=[2, 2]}\n"
    "  z = MaxPool(t) {kernel_shape=[2, 2], strides=[2, 2]}\n"
    "  u = MaxPool(q) {kernel_shape=[2, 2]}\n"
    "  y = LayoutTransform(p) {to=\"NCHW\"}\n  output y\n  output m\n  output idx\n  output z\n  output u\n}\n");
  set_layouts (g, PL_LAYOUT_NHWC, (const char *const[]) { "p", NULL });
  g_autoptr (GError) error = NULL;
  g_autoptr (PlKernelPlan) p = pl_kernel_plan_for_node ("k", pl_graph_find_value (g, "p")->producer, &error);
  g_assert_no_error (error);
  g_assert_cmpint (p->kind, ==, PL_PLAN_POOL);
  g_assert_cmpstr (p->note, ==, "maxpool 3x3/2 NHWC");
  g_assert_cmpint (p->pool.layout, ==, PL_LAYOUT_NHWC);
  g_assert_cmpint (p->pool.pads[0], ==, 1);
  g_assert_cmpint (p->pool.out[0], ==, 56);
  g_assert_cmpint (p->flops, ==, 8 * 56 * 56 * 9);
  g_assert_cmpuint (p->inputs->len, ==, 1);
  g_assert_cmpuint (p->outputs->len, ==, 1);
  const char *fallbacks[][2] = { { "m", "Indices" }, { "z", "X in NHWC and Y in NCHW" }, { "u", "u8" } };
  for (gsize i = 0; i < G_N_ELEMENTS (fallbacks); i++)
    {
      g_autoptr (PlKernelPlan) f = pl_kernel_plan_for_node ("k", pl_graph_find_value (g, fallbacks[i][0])->producer,
                                                            &error);
      g_assert_no_error (error);
      g_assert_cmpint (f->kind, ==, PL_PLAN_FALLBACK);
      if (!strstr (f->note, fallbacks[i][1]))
        g_error ("%s: '%s' does not say '%s'", fallbacks[i][0], f->note, fallbacks[i][1]);
    }
  g_autoptr (PlRunReport) r = check_graph (g, 0, 0);
  for (int k = 0; k < r->n_kernels; k++)
    if (strstr (r->kernels[k].ops, "MaxPool"))
      g_assert_true (r->kernels[k].fallback == (strcmp (r->kernels[k].name, "p") != 0));
}

/* --- what is not layout-aware -------------------------------------------------------- */

/* Flatten and Reshape of an NHWC value cannot share its memory (the
 * elements are in another order): they become copy loops. */
static void
test_views (void)
{
  for (gsize l = 1; l < G_N_ELEMENTS (layouts); l++)
    {
      g_autofree char *text = g_strdup_printf (
        "graph v opset 17 {\n  input x: f32[2, 8, 5, 5]\n  const wg: f32[200, 10] = random(seed=5, lo=-0.1, hi=0.1)\n"
        "  const shape: i64[3] = [2, 40, 5]\n"
        "  t = LayoutTransform(x) {to=\"%s\"}\n  r = Relu(t)\n  f = Flatten(r) {axis=1}\n  y = Gemm(f, wg)\n"
        "  s = Reshape(r, shape)\n  z = Exp(s)\n  output y\n  output z\n}\n", pl_layout_name (layouts[l]));
      g_autoptr (PlGraph) g = pl_test_parse (text);
      set_layouts (g, layouts[l], (const char *const[]) { "r", NULL });
      g_autoptr (PlRunReport) r = check_graph (g, 1e-4, 1e-5);
      const PlKernelTiming *flat = kernel_with_op (r, "Flatten");
      g_assert_nonnull (flat);
      g_assert_cmpint (flat->n_launches, ==, 1);   /* a copy, not a view */
      g_assert_false (flat->fallback);
      g_autoptr (PlGraph) f = pl_test_passes (g, "simplify,reshape-sink,fuse-library,fuse-loops");
      g_autoptr (PlRunReport) rf = check_graph (f, 1e-4, 1e-5);
    }
}

/* A GEMM operand in another layout is transposed for BLAS first (a launch
 * of the GEMM's kernel row) while an epilogue reading the same value reads
 * it in its layout; a GEMM result stored in another layout is reordered by
 * its epilogue. */
static void
test_gemm_operands (void)
{
  for (gsize l = 1; l < G_N_ELEMENTS (layouts); l++)
    {
      g_autofree char *text = g_strdup_printf (
        "graph m opset 17 {\n  input x: f32[2, 3, 4, 5]\n  input b: f32[2, 3, 5, 6]\n"
        "  t = LayoutTransform(x) {to=\"%s\"}\n  r = Relu(t)\n  m = MatMul(r, b)\n"
        "  r2 = Transpose(r) {perm=[0, 1, 3, 2]}\n  n = MatMul(r, r2)\n  y = LayoutTransform(m) {to=\"NCHW\"}\n"
        "  const sq: f32[5, 5] = random(seed=9, lo=-1, hi=1)\n  q = MatMul(r, sq)\n  z = Add(q, r)\n"
        "  output y\n  output n\n  output z\n}\n", pl_layout_name (layouts[l]));
      g_autoptr (PlGraph) g = pl_test_parse (text);
      set_layouts (g, layouts[l], (const char *const[]) { "r", "m", NULL });
      g_autoptr (PlRunReport) r = check_graph (g, 1e-4, 1e-5);
      const PlKernelTiming *mm = kernel_with_op (r, "MatMul");
      g_assert_nonnull (mm);
      g_assert_cmpint (mm->n_launches, ==, 2);   /* transpose + GEMM */
      g_assert_false (mm->fallback);
      g_autoptr (PlGraph) f = pl_test_passes (g, "fuse-library");
      g_autoptr (PlRunReport) rf = check_graph (f, 1e-4, 1e-5);
      /* q and z as one kernel: z's epilogue reads r in its layout while the GEMM reads it transposed */
      PlNode *qz[2] = { pl_graph_find_value (g, "q")->producer, pl_graph_find_value (g, "z")->producer };
      g_autoptr (GError) error = NULL;
      PlNode *fz = pl_fusion_create (g, qz, 2, PL_FUSION_KIND_OUTPUT, &error);
      g_assert_no_error (error);
      g_autoptr (PlKernelPlan) p = pl_kernel_plan_for_node ("qz", fz, &error);
      g_assert_no_error (error);
      g_assert_cmpint (p->kind, ==, PL_PLAN_GEMM);
      g_assert_nonnull (p->loop);
      g_autoptr (PlRunReport) rz = check_graph (g, 1e-4, 1e-5);
    }
}

/* A fallback (LpPool has no generated kernel) reads and writes NHWC
 * buffers through logical host tensors. */
static void
test_fallback (void)
{
  for (gsize l = 1; l < G_N_ELEMENTS (layouts); l++)
    {
      g_autofree char *text = g_strdup_printf (
        "graph p opset 17 {\n  input x: f32[2, 4, 6, 6]\n  t = LayoutTransform(x) {to=\"%s\"}\n  r = Relu(t)\n"
        "  p = LpPool(r) {kernel_shape=[2, 2], strides=[2, 2]}\n  e = Exp(p)\n  y = LayoutTransform(e) {to=\"NCHW\"}\n"
        "  output y\n}\n", pl_layout_name (layouts[l]));
      g_autoptr (PlGraph) g = pl_test_parse (text);
      set_layouts (g, layouts[l], (const char *const[]) { "r", "p", "e", NULL });
      g_autoptr (PlRunReport) r = check_graph (g, 1e-5, 1e-6);
      const PlKernelTiming *pool = kernel_with_op (r, "LpPool");
      g_assert_nonnull (pool);
      g_assert_true (pool->fallback);
    }
}

/* Swap copies keep the bytes; when the swapped value's layout differs from
 * the input's (the swap pass did not carry it over), the cpu reorders while
 * it copies and cuda refuses with a clear error. */
static void
test_swap (void)
{
  for (int carried = 0; carried < 2; carried++)
    {
      g_autoptr (PlGraph) g = pl_test_parse (
        "graph s opset 17 {\n  input x: f32[2, 4, 6, 6]\n  t = LayoutTransform(x) {to=\"NHWC\"}\n  r = Relu(t)\n"
        "  h = SwapOut(r)\n  i = SwapIn(h)\n  e = Exp(i)\n  output e\n}\n");
      set_layouts (g, PL_LAYOUT_NHWC, (const char *const[]) { "r", carried ? "h" : NULL, "i", NULL });
      if (carried)
        {
          g_autoptr (PlRunReport) r = check_graph (g, 1e-5, 1e-6);
          g_assert_cmpint (r->n_copies, ==, 2);
          continue;
        }
      g_autoptr (PlRunReport) r = check_on (g, PL_BACKEND_CPU, 1e-5, 1e-6);
      g_assert_cmpint (r->n_copies, ==, 2);
      if (have_nvrtc)
        {
          g_autoptr (GError) error = NULL;
          g_assert_false (pl_cuda_compile_check (g, "compute_90", NULL, NULL, &error));
          g_assert_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED);
          g_assert_nonnull (strstr (error->message, "keeps the layout"));
        }
    }
}

/* --- plans ------------------------------------------------------------------------------ */

/* A LayoutTransform is a loop in its destination's order: the innermost
 * loop stores contiguously; a pointwise op in NHWC is one flat loop. */
static void
test_transform_plan (void)
{
  g_autoptr (PlGraph) g = pl_test_parse ("graph t opset 17 {\n  input x: f32[2, 16, 7, 9]\n  t = LayoutTransform(x) {to=\"NHWC\"}\n"
                                 "  r = Relu(t)\n  y = LayoutTransform(r) {to=\"NCHW\"}\n  output y\n}\n");
  set_layouts (g, PL_LAYOUT_NHWC, (const char *const[]) { "r", NULL });
  g_autoptr (GError) error = NULL;
  g_autoptr (PlKernelPlan) t = pl_kernel_plan_for_node ("t", pl_graph_find_value (g, "t")->producer, &error);
  g_assert_no_error (error);
  g_assert_cmpint (t->kind, ==, PL_PLAN_LOOP);
  g_assert_cmpstr (t->ops, ==, "LayoutTransform");
  g_assert_cmpstr (t->note, ==, "transpose NCHW -> NHWC");
  const PlStore *st = &g_array_index (t->loop->stores, PlStore, 0);
  bool nested;
  g_assert_cmpint (pl_idx_coord_coef (st->index, t->loop->rank - 1, &nested), ==, 1);
  g_assert_cmpint (t->flops, ==, 0);
  g_autoptr (PlKernelPlan) r = pl_kernel_plan_for_node ("r", pl_graph_find_value (g, "r")->producer, &error);
  g_assert_no_error (error);
  g_assert_cmpint (r->loop->rank, ==, 1);
  g_autoptr (PlRunReport) rep = check_graph (g, 0, 0);
  const PlKernelTiming *k = kernel_with_op (rep, "LayoutTransform");
  g_assert_nonnull (k);
  g_assert_cmpint (k->bytes, ==, 2 * 2 * 16 * 7 * 9 * 4);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  pl_passes_init ();
  const char *build = g_getenv ("PASSLAB_BUILD_DIR");
  cache_dir = g_build_filename (build ? build : g_get_tmp_dir (), "kernel-cache-tests", NULL);
  char *why = NULL;
  if (!pl_backend_available (PL_BACKEND_CPU, &why))
    {
      g_test_message ("no cpu backend: %s", why);
      return 77;
    }
  PlGraph *probe = pl_graph_new ("probe");
  g_autoptr (GError) error = NULL;
  /* an empty graph compiles to an empty module: a cheap probe for NVRTC */
  have_nvrtc = pl_cuda_compile_check (probe, NULL, NULL, NULL, &error);
  if (!have_nvrtc)
    g_test_message ("no NVRTC: %s", error->message);
  pl_graph_free (probe);
  have_gpu = pl_backend_available (PL_BACKEND_CUDA, NULL);
  g_test_add_data_func ("/Passlab/KernelsLayout/conv/gemm", "gemm", test_conv);
  g_test_add_data_func ("/Passlab/KernelsLayout/conv/direct", "direct", test_conv);
  g_test_add_func ("/Passlab/KernelsLayout/conv-mixed", test_conv_mixed);
  g_test_add_func ("/Passlab/KernelsLayout/conv-weights-input", test_conv_weights_input);
  g_test_add_func ("/Passlab/KernelsLayout/resnet-block", test_resnet_block);
  g_test_add_func ("/Passlab/KernelsLayout/pool", test_pool);
  g_test_add_func ("/Passlab/KernelsLayout/pool-ranks", test_pool_ranks);
  g_test_add_func ("/Passlab/KernelsLayout/pool-plan", test_pool_plan);
  g_test_add_func ("/Passlab/KernelsLayout/views", test_views);
  g_test_add_func ("/Passlab/KernelsLayout/gemm-operands", test_gemm_operands);
  g_test_add_func ("/Passlab/KernelsLayout/fallback", test_fallback);
  g_test_add_func ("/Passlab/KernelsLayout/swap", test_swap);
  g_test_add_func ("/Passlab/KernelsLayout/transform-plan", test_transform_plan);
  int rc = g_test_run ();
  g_free (cache_dir);
  return rc;
}

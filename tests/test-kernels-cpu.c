/* test-kernels-cpu.c — the generated C kernels and the runtime on the cpu
 * backend, checked against the reference interpreter: every sample graph
 * unfused and after the fusion pipeline, random graphs, hand-made fusions
 * (broadcast and transpose index functions, layer norm and softmax as ONE
 * kernel with several passes over a row), library kernels (GEMM with
 * transpose flags and epilogues, convolution), fallbacks, the kernel cache,
 * the memory plan and the report / trace JSON, in-place sharing (outputs
 * written over dying inputs, as the memory profile plans them), and
 * swapping under a device budget (the training samples after grad and
 * swap). Compiled objects are cached under the build directory, so a
 * second run compiles nothing. */
#include "backend.h"
#include "builtin-passes.h"
#include "codegen.h"
#include "fusion.h"
#include "index-expr.h"
#include "kernel-plan.h"
#include "pass-manager.h"
#include "runtime.h"
#include "schedule.h"
#include "text-format.h"
#include "test-util.h"

#include <float.h>
#include <math.h>
#include <string.h>

#define PIPELINE "simplify,decompose,reshape-sink,fuse-library,fuse-loops"

static char *cache_dir;

static PlExecutable *
compile (const PlGraph *g)
{
  PlCompileOptions o;
  pl_compile_options_init (&o, PL_BACKEND_CPU);
  o.cache_dir = cache_dir;
  g_autoptr (GError) error = NULL;
  PlExecutable *e = pl_executable_new (g, &o, &error);
  g_assert_no_error (error);
  g_assert_nonnull (e);
  return e;
}

/* Runs g on the cpu backend and the interpreter with the same random
 * inputs; every output must agree. Returns the report (free it). */
static PlRunReport *
check_graph (const PlGraph *g, guint32 seed, double rtol, double atol)
{
  g_autoptr (GError) error = NULL;
  PlTensor **in = pl_random_inputs (g, seed, 1, &error);
  g_assert_no_error (error);
  PlTensor **want = pl_interp_run (g, in, NULL, &error);
  g_assert_no_error (error);
  PlExecutable *e = compile (g);
  PlRunReport *r = NULL;
  PlTensor **got = pl_executable_run (e, in, 2, &r, &error);
  g_assert_no_error (error);
  g_assert_nonnull (got);
  for (guint i = 0; i < g->outputs->len; i++)
    {
      double worst = 0;
      if (!pl_tensor_allclose (got[i], want[i], rtol, atol, &worst))
        {
          g_autofree char *a = pl_tensor_summary (got[i], 6), *b = pl_tensor_summary (want[i], 6);
          g_autofree char *text = pl_text_print (g);
          g_printerr ("%s\noutput %u differs (worst %g):\n  cpu %s\n  ref %s\n", text, i, worst, a, b);
          g_assert_not_reached ();
        }
    }
  pl_interp_free_outputs (got, (int) g->outputs->len);
  pl_interp_free_outputs (want, (int) g->outputs->len);
  pl_interp_free_outputs (in, (int) g->inputs->len);
  pl_executable_free (e);
  return r;
}

static int
count_kind (const PlRunReport *r, const char *kind)
{
  int n = 0;
  for (int i = 0; i < r->n_kernels; i++)
    n += strcmp (r->kernels[i].kind, kind) == 0;
  return n;
}

/* --- the sample graphs ------------------------------------------------------------------ */

static void
test_samples (gconstpointer data)
{
  const char *name = data;
  g_autoptr (PlGraph) g = pl_test_load_sample (name);
  g_autoptr (PlRunReport) r = check_graph (g, 3, 1e-4, 1e-5);
  g_assert_cmpint (r->n_kernels, >, 0);
  g_assert_cmpint (count_kind (r, "fallback"), ==, 0);

  g_autoptr (PlGraph) f = pl_test_passes (g, PIPELINE);
  g_autoptr (PlRunReport) rf = check_graph (f, 3, 1e-4, 1e-5);
  /* fusion reduces the launches, and nothing falls back or splits */
  g_assert_cmpint (rf->n_kernels, <, r->n_kernels);
  g_assert_cmpint (count_kind (rf, "fallback"), ==, 0);
  g_assert_cmpint (count_kind (rf, "split"), ==, 0);
  for (int i = 0; i < rf->n_kernels; i++)
    g_assert_cmpint (rf->kernels[i].n_launches, ==, 1);
}

/* --- random graphs, unfused and fused ---------------------------------------------------------- */

static void
test_random (void)
{
  for (guint32 seed = 1; seed <= 8; seed++)
    {
      g_autoptr (PlGraph) g = pl_test_random_graph (seed, 16);
      g_autoptr (PlRunReport) r = check_graph (g, seed, 1e-3, 1e-4);
      g_autoptr (PlGraph) f = pl_test_passes (g, PIPELINE);
      g_autoptr (PlRunReport) rf = check_graph (f, seed, 1e-3, 1e-4);
    }
}

/* --- hand-made kernels ---------------------------------------------------------------------- */

/* Broadcast and transpose fold into the index functions of one loop. */
static void
test_index_functions (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (
    "graph idx opset 17 {\n"
    "  input a: f32[4, 8, 16]\n  input b: f32[16, 8]\n  input c: f32[4, 1, 1]\n"
    "  const shape: i64[2] = [32, 16]\n"
    "  bt: f32[8, 16] = Transpose(b) {perm=[1, 0]}\n"
    "  s = Add(a, bt)\n  m = Mul(s, c)\n  r: f32[32, 16] = Reshape(m, shape)\n  y = Relu(r)\n  output y\n}\n");
  g_autoptr (PlGraph) f = pl_test_passes (g, "fuse-loops");
  g_assert_cmpuint (f->nodes->len, ==, 1);
  g_autoptr (PlRunReport) r = check_graph (f, 5, 1e-6, 1e-6);
  g_assert_cmpint (r->n_kernels, ==, 1);
  g_assert_cmpstr (r->kernels[0].kind, ==, "loop");
  g_assert_cmpint (r->kernels[0].n_ops, ==, 5);

  /* the plan, over y's dims: a read in place, b transposed, c broadcast; the
   * reshape folds away */
  PlNode *fn = g_ptr_array_index (f->nodes, 0);
  g_autoptr (GError) error = NULL;
  g_autoptr (PlKernelPlan) p = pl_kernel_plan_for_node ("k", fn, &error);
  g_assert_no_error (error);
  g_autofree char *dump = pl_kernel_plan_dump (p);
  g_assert_nonnull (strstr (dump, "loop dims [32, 16]"));
  g_assert_nonnull (strstr (dump, "in0[(16 * c0 + c1)]"));
  g_assert_nonnull (strstr (dump, "in1[((c0 % 8) + 8 * c1)]"));
  g_assert_nonnull (strstr (dump, "in2[(c0 / 8)]"));
  g_assert_nonnull (strstr (dump, "out0[(16 * c0 + c1)]"));
}

/* The nine ops of layer norm as one stitched fusion: one kernel, three
 * passes over each row (mean; variance; normalize and store). */
static void
test_layer_norm_one_kernel (void)
{
  g_autoptr (PlGraph) g = pl_test_load_sample ("layer_norm.graph");
  int n;
  g_autofree PlNode **order = pl_graph_topo_order (g, &n, NULL);
  g_autoptr (GError) error = NULL;
  PlNode *f = pl_fusion_create (g, order, n, PL_FUSION_KIND_INPUT, &error);
  g_assert_no_error (error);
  g_assert_nonnull (f);
  g_autoptr (PlKernelPlan) p = pl_kernel_plan_for_node ("ln", f, &error);
  g_assert_no_error (error);
  g_assert_cmpint (p->kind, ==, PL_PLAN_LOOP);
  g_assert_cmpint (p->loop->n_passes, ==, 3);
  g_assert_cmpint (p->loop->n_scratch, ==, 1);   /* d = x - mean, read again by the last pass */
  g_assert_cmpint (p->loop->n_rows, ==, 512);
  g_assert_cmpint (p->loop->row_len, ==, 256);
  g_assert_cmpint (p->loop->reductions->len, ==, 2);

  g_autoptr (PlRunReport) r = check_graph (g, 9, 1e-4, 1e-5);
  g_assert_cmpint (r->n_kernels, ==, 1);
  g_assert_cmpint (r->kernels[0].n_launches, ==, 1);
  g_assert_cmpint (r->kernels[0].n_ops, ==, 9);
}

/* Softmax: max, then the sum of exp, then exp / sum — exp materialized in
 * the row scratch between the passes. */
static void
test_softmax_one_kernel (void)
{
  g_autoptr (PlGraph) g = pl_test_load_sample ("softmax.graph");
  int n;
  g_autofree PlNode **order = pl_graph_topo_order (g, &n, NULL);
  g_autoptr (GError) error = NULL;
  PlNode *f = pl_fusion_create (g, order, n, PL_FUSION_KIND_INPUT, &error);
  g_assert_no_error (error);
  g_autoptr (PlKernelPlan) p = pl_kernel_plan_for_node ("sm", f, &error);
  g_assert_no_error (error);
  g_assert_cmpint (p->loop->n_passes, ==, 3);
  g_assert_cmpint (p->loop->n_scratch, ==, 1);
  g_autoptr (PlRunReport) r = check_graph (g, 4, 1e-5, 1e-6);
  g_assert_cmpint (r->n_kernels, ==, 1);
}

/* NCHW group norm as exporters write it (reshape to [N, G, C/G*H*W], row
 * statistics, reshape back, per-channel affine): one kernel over the group
 * rows. The output, [N, C, H, W], is D's elements in another shape; the
 * reshape round trip folds to a contiguous index (k (e % n) + k n ((e / n)
 * % m) = k (e % nm), then e % nm + nm (e / nm) = e), and the loop splits
 * the row where gamma's channel (e / (H*W)) is read, so its loads are
 * invariant in the inner loop. */
static void
test_group_norm_one_kernel (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (
    "graph gn opset 17 {\n"
    "  input x: f32[2, 8, 5, 6]\n"
    "  const grouped_shape: i64[3] = [2, 4, 60]\n  const image_shape: i64[4] = [2, 8, 5, 6]\n"
    "  const eps: f32[] = 1e-05\n"
    "  const gamma: f32[8, 1, 1] = random(seed=3, lo=0.5, hi=1.5)\n"
    "  const beta: f32[8, 1, 1] = random(seed=4, lo=-0.5, hi=0.5)\n"
    "  grouped = Reshape(x, grouped_shape)\n  mean = ReduceMean(grouped) {axes=[2], keepdims=1}\n"
    "  centered = Sub(grouped, mean)\n  squared = Mul(centered, centered)\n"
    "  var = ReduceMean(squared) {axes=[2], keepdims=1}\n  var_eps = Add(var, eps)\n  std = Sqrt(var_eps)\n"
    "  normalized = Div(centered, std)\n  image = Reshape(normalized, image_shape)\n"
    "  scaled = Mul(image, gamma)\n  out = Add(scaled, beta)\n  output out\n}\n");
  int n;
  g_autofree PlNode **order = pl_graph_topo_order (g, &n, NULL);
  g_autoptr (GError) error = NULL;
  PlNode *f = pl_fusion_create (g, order, n, PL_FUSION_KIND_INPUT, &error);
  g_assert_no_error (error);
  g_autoptr (PlKernelPlan) p = pl_kernel_plan_for_node ("gn", f, &error);
  g_assert_no_error (error);
  g_assert_cmpint (p->kind, ==, PL_PLAN_LOOP);
  g_assert_cmpint (p->loop->n_rows, ==, 8);
  g_assert_cmpint (p->loop->row_len, ==, 60);
  g_autofree char *dump = pl_kernel_plan_dump (p);
  g_assert_nonnull (strstr (dump, "loop dims [2, 4, 2r, 30r]"));
  g_assert_nonnull (strstr (dump, "in0[(240 * c0 + 60 * c1 + 30 * c2 + c3)]"));   /* x, contiguous */
  g_assert_nonnull (strstr (dump, "in1[(2 * c1 + c2)]"));       /* gamma: no division in the row */
  g_assert_nonnull (strstr (dump, "out0[(240 * c0 + 60 * c1 + 30 * c2 + c3)]"));
  g_autoptr (PlRunReport) r = check_graph (g, 11, 1e-4, 1e-5);
  g_assert_cmpint (r->n_kernels, ==, 1);
  g_assert_cmpint (r->kernels[0].n_launches, ==, 1);
}

/* Single ops of the reduce family, each one kernel. */
static void
test_reductions (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (
    "graph red opset 17 {\n"
    "  input x: f32[3, 5, 7, 4]\n"
    "  const ax: i64[2] = [1, 2]\n"
    "  s = ReduceSum(x, ax) {keepdims=0}\n"
    "  m = ReduceMax(x) {axes=[0], keepdims=1}\n"
    "  l = ReduceLogSumExp(x) {axes=[3], keepdims=0}\n"
    "  p = ReduceL2(x) {axes=[1, 3], keepdims=1}\n"
    "  a = ArgMax(x) {axis=2, keepdims=0}\n"
    "  b = ArgMin(x) {axis=1, keepdims=1, select_last_index=1}\n"
    "  sm = Softmax(x) {axis=1}\n"
    "  ls = LogSoftmax(x) {axis=-1}\n"
    "  hm = Hardmax(x) {axis=2}\n"
    "  const sc: f32[4] = [1.0, 2.0, 0.5, -1.0]\n  const bi: f32[4] = [0.1, 0.2, 0.3, 0.4]\n"
    "  ln, mean, inv = LayerNormalization(x, sc, bi) {axis=2, epsilon=0.001}\n"
    "  all = ReduceMean(x) {keepdims=0}\n"
    "  output s, m, l, p, a, b, sm, ls, hm, ln, mean, inv, all\n}\n");
  g_autoptr (PlRunReport) r = check_graph (g, 11, 1e-4, 1e-5);
  g_assert_cmpint (count_kind (r, "fallback"), ==, 0);
  g_assert_cmpint (r->n_kernels, ==, 11);
}

/* Few long rows: each pass's loop is the parallel one (reduction clauses
 * combine the threads' partial results), scratch shared by the threads. */
static void
test_long_rows (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (
    "graph lr opset 17 {\n  input x: f32[3, 70000]\n"
    "  sm = Softmax(x) {axis=-1}\n  all = ReduceSum(x) {keepdims=0}\n  am = ArgMax(x) {axis=1}\n"
    "  output sm, all, am\n}\n");
  g_autoptr (PlRunReport) r = check_graph (g, 18, 1e-4, 1e-6);
  g_autoptr (PlGraph) f = pl_test_passes (g, "fuse-loops");
  g_autoptr (PlRunReport) rf = check_graph (f, 18, 1e-4, 1e-6);
  PlNode *sm = pl_graph_find_node (g, "sm");
  PlExecutable *e = compile (g);
  g_assert_nonnull (strstr (pl_executable_source (e, sm->id), "#pragma omp parallel for simd schedule(static) reduction(max:acc0)"));
  pl_executable_free (e);
}

/* Elementwise ops of several dtypes: casts, comparisons, Where, Clip. */
static void
test_elementwise_dtypes (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (
    "graph ew opset 17 {\n"
    "  input x: f32[6, 10]\n  input y: f32[10]\n"
    "  const lo: f32[] = -0.25\n  const hi: f32[] = 0.5\n  const two: f32[] = 2.0\n  const k: i64[] = 3\n"
    "  c = Clip(x, lo, hi)\n  gt = Greater(x, y)\n  w = Where(gt, x, y)\n"
    "  xi = Cast(x) {to=7}\n  t = Mul(x, two)\n  ti = Cast(t) {to=7}\n  sum = Add(ti, k)\n"
    "  nb = Not(gt)\n  e = Exp(x)\n  th = Tanh(w)\n  er = Erf(x)\n  sg = Sigmoid(x)\n  ge = Gelu(x)\n"
    "  hs = HardSwish(x)\n  lr = LeakyRelu(x) {alpha=0.2}\n  sp = Softplus(x)\n  ab = Abs(xi)\n  ng = Neg(sum)\n"
    "  mx = Max(x, y, c)\n  mn = Min(x, y)\n  p = Pow(x, two)\n  sq = Sqrt(e)\n  lg = Log(e)\n"
    "  output c, w, sum, nb, th, er, sg, ge, hs, lr, sp, ab, ng, mx, mn, p, sq, lg\n}\n");
  g_autoptr (PlRunReport) r = check_graph (g, 12, 1e-4, 1e-5);
  g_assert_cmpint (count_kind (r, "fallback"), ==, 0);
  g_autoptr (PlGraph) f = pl_test_passes (g, "fuse-loops");
  g_autoptr (PlRunReport) rf = check_graph (f, 12, 1e-4, 1e-5);
  g_assert_cmpint (rf->n_kernels, <, r->n_kernels);
}

/* GEMMs: batched MatMul with broadcasting, Gemm with flags and C, a
 * library fusion with transposes absorbed and a bias + GELU epilogue. */
static void
test_gemm (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (
    "graph mm opset 17 {\n"
    "  input a: f32[2, 3, 5, 7]\n  input b: f32[3, 7, 4]\n  input c: f32[6, 5]\n  input d: f32[4, 6]\n"
    "  const bias: f32[4] = [0.5, -0.5, 1.0, 2.0]\n  const cc: f32[1, 4] = [1.0, 2.0, 3.0, 4.0]\n"
    "  m = MatMul(a, b)\n  g1 = Gemm(c, d, cc) {transA=1, transB=1, alpha=0.5, beta=2.0}\n"
    "  ct: f32[5, 6] = Transpose(c) {perm=[1, 0]}\n  dt: f32[6, 4] = Transpose(d) {perm=[1, 0]}\n"
    "  m2 = MatMul(ct, dt)\n  m3 = Add(m2, bias)\n  y = Gelu(m3)\n"
    "  const vv: f32[6] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]\n  mv = MatMul(vv, c)\n"
    "  output m, g1, y, mv\n}\n");
  g_autoptr (PlRunReport) r = check_graph (g, 13, 1e-4, 1e-5);
  g_autoptr (PlGraph) f = pl_test_passes (g, "fuse-library");
  bool found = false;
  for (guint i = 0; i < f->nodes->len; i++)
    found |= ((PlNode *) f->nodes->pdata[i])->body != NULL;
  g_assert_true (found);
  g_autoptr (PlRunReport) rf = check_graph (f, 13, 1e-4, 1e-5);
  int lib = 0;
  for (int i = 0; i < rf->n_kernels; i++)
    lib += rf->kernels[i].library;
  g_assert_cmpint (lib, ==, 4);
  g_assert_cmpint (count_kind (rf, "output"), ==, 1);
}

/* Convolutions: strides, padding, dilation, groups; with a bias + relu epilogue. */
static void
test_conv (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (
    "graph cv opset 17 {\n"
    "  input x: f32[2, 4, 9, 8]\n"
    "  const w: f32[6, 2, 3, 3] = random(seed=1, lo=-0.5, hi=0.5)\n"
    "  const b: f32[6] = [0.1, 0.2, -0.3, 0.4, 0.0, -1.0]\n"
    "  const w1: f32[3, 4, 1, 1] = random(seed=2, lo=-0.5, hi=0.5)\n"
    "  y = Conv(x, w, b) {group=2, strides=[2, 1], pads=[1, 2, 0, 1], dilations=[1, 2]}\n"
    "  r = Relu(y)\n"
    "  z = Conv(x, w1)\n"
    "  output r, z\n}\n");
  g_autoptr (PlRunReport) r = check_graph (g, 14, 1e-4, 1e-5);
  g_autoptr (PlGraph) f = pl_test_passes (g, "fuse-library");
  g_autoptr (PlRunReport) rf = check_graph (f, 14, 1e-4, 1e-5);
  g_assert_cmpint (rf->n_kernels, ==, 2);
}

/* The kernels of r whose ops name ConvTranspose: each a planned GEMM +
 * col2im, none a fallback. Returns how many. */
static int
assert_conv_transpose_planned (const PlRunReport *r)
{
  int n = 0;
  for (int i = 0; i < r->n_kernels; i++)
    {
      const PlKernelTiming *k = &r->kernels[i];
      if (!strstr (k->ops, "ConvTranspose"))
        continue;
      if (k->fallback || strcmp (k->kind, "fallback") == 0 || !k->library || !k->note || !strstr (k->note, "col2im"))
        g_error ("%s (%s): kind %s, note '%s'", k->name, k->ops, k->kind, k->note ? k->note : "");
      n++;
    }
  return n;
}

/* One ConvTranspose of the given geometry (2-d unless kernel[2] > 0: 3-d
 * is not asked for; k1 = 0: 1-d) against the reference, alone and after
 * fuse-library with a Relu epilogue. */
typedef struct {
  const char *dtype;
  int64_t     batch, c, mg, group, h, w, k0, k1, s0, s1, d0, d1, p[4], op0, op1;
  bool        bias;
} ConvT;

static void
check_conv_transpose (const ConvT *t, guint32 seed)
{
  bool one_d = t->k1 == 0;
  int64_t m = t->mg * t->group;
  GString *s = g_string_new ("graph ct opset 17 {\n");
  if (one_d)
    g_string_append_printf (s, "  input x: %s[%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]\n"
                            "  const w: %s[%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "] = "
                            "random(seed=%u, lo=-0.5, hi=0.5)\n", t->dtype, t->batch, t->c, t->h, t->dtype, t->c,
                            t->mg, t->k0, seed);
  else
    g_string_append_printf (s, "  input x: %s[%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %"
                            G_GINT64_FORMAT "]\n  const w: %s[%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %"
                            G_GINT64_FORMAT ", %" G_GINT64_FORMAT "] = random(seed=%u, lo=-0.5, hi=0.5)\n", t->dtype,
                            t->batch, t->c, t->h, t->w, t->dtype, t->c, t->mg, t->k0, t->k1, seed);
  if (t->bias)
    g_string_append_printf (s, "  const b: %s[%" G_GINT64_FORMAT "] = random(seed=%u, lo=-1, hi=1)\n", t->dtype, m,
                            seed + 1);
  if (one_d)
    g_string_append_printf (s, "  y = ConvTranspose(x, w%s) {group=%" G_GINT64_FORMAT ", strides=[%" G_GINT64_FORMAT
                            "], dilations=[%" G_GINT64_FORMAT "], pads=[%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                            "], output_padding=[%" G_GINT64_FORMAT "]}\n", t->bias ? ", b" : "", t->group, t->s0,
                            t->d0, t->p[0], t->p[2], t->op0);
  else
    g_string_append_printf (s, "  y = ConvTranspose(x, w%s) {group=%" G_GINT64_FORMAT ", strides=[%" G_GINT64_FORMAT
                            ", %" G_GINT64_FORMAT "], dilations=[%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "], pads=[%"
                            G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                            "], output_padding=[%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]}\n", t->bias ? ", b" : "",
                            t->group, t->s0, t->s1, t->d0, t->d1, t->p[0], t->p[1], t->p[2], t->p[3], t->op0, t->op1);
  g_string_append (s, "  r = Relu(y)\n  output y, r\n}\n");
  g_autoptr (PlGraph) g = pl_test_parse (s->str);
  g_string_free (s, TRUE);
  g_autoptr (PlRunReport) r = check_graph (g, seed, 1e-4, 1e-5);
  g_assert_cmpint (assert_conv_transpose_planned (r), ==, 1);
  /* fuse-library: a conv_backward_input library node, the col2im result read by the Relu */
  g_autoptr (PlGraph) f = pl_test_passes (g, "fuse-library");
  g_autoptr (PlRunReport) rf = check_graph (f, seed, 1e-4, 1e-5);
  g_assert_cmpint (assert_conv_transpose_planned (rf), ==, 1);
}

/* ConvTranspose as GEMM + col2im (conv-transpose.c) against the reference:
 * fixed cases for stride 2, pads, dilation 2, output_padding 1, group 2,
 * with and without bias, f64 and 1-d; then random geometries. */
static void
test_conv_transpose (void)
{
  static const ConvT fixed[] = {
    { "f32", 2, 4, 3, 2, 5, 6, 3, 3, 2, 2, 1, 1, { 1, 1, 1, 1 }, 1, 1, true },
    { "f32", 1, 3, 2, 1, 6, 5, 3, 2, 1, 2, 2, 2, { 2, 0, 1, 1 }, 0, 1, false },
    { "f32", 1, 8, 8, 1, 9, 9, 3, 3, 1, 1, 1, 1, { 1, 1, 1, 1 }, 0, 0, false },   /* resnet's backward-input */
    { "f32", 2, 2, 2, 2, 4, 3, 1, 1, 2, 3, 1, 1, { 0, 0, 0, 0 }, 1, 2, true },
    { "f64", 2, 4, 2, 2, 5, 4, 2, 3, 2, 1, 2, 1, { 1, 2, 0, 1 }, 1, 0, true },
    { "f32", 2, 4, 3, 2, 7, 0, 3, 0, 2, 0, 2, 0, { 1, 0, 2, 0 }, 1, 0, true },    /* 1-d */
  };
  for (size_t i = 0; i < G_N_ELEMENTS (fixed); i++)
    check_conv_transpose (&fixed[i], 40 + (guint32) i);
  g_autoptr (GRand) rand = g_rand_new_with_seed (7);
  for (guint32 seed = 0; seed < 8; seed++)
    {
      ConvT t = { "f32", g_rand_int_range (rand, 1, 3), 0, g_rand_int_range (rand, 1, 4), g_rand_int_range (rand, 1, 3) };
      t.c = t.group * g_rand_int_range (rand, 1, 4);
      t.h = g_rand_int_range (rand, 2, 9);
      t.w = g_rand_int_range (rand, 2, 9);
      t.k0 = g_rand_int_range (rand, 1, 4);
      t.k1 = g_rand_int_range (rand, 1, 4);
      t.s0 = g_rand_int_range (rand, 1, 3);
      t.s1 = g_rand_int_range (rand, 1, 3);
      t.d0 = g_rand_int_range (rand, 1, 3);
      t.d1 = g_rand_int_range (rand, 1, 3);
      /* pads within the dilated kernel, output_padding below the stride: the output is never empty */
      int64_t k[2] = { (t.k0 - 1) * t.d0, (t.k1 - 1) * t.d1 };
      for (int j = 0; j < 4; j++)
        t.p[j] = g_rand_int_range (rand, 0, (gint32) k[j % 2] / 2 + 1);
      t.op0 = g_rand_int_range (rand, 0, (gint32) t.s0);
      t.op1 = g_rand_int_range (rand, 0, (gint32) t.s1);
      t.bias = g_rand_boolean (rand);
      check_conv_transpose (&t, 60 + seed);
    }
}

/* An op without generated code runs its reference implementation, marked
 * fallback, and its neighbours still run as kernels. */
static void
test_fallback (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (
    "graph fb opset 17 {\n"
    "  input x: f32[3, 4, 4]\n"
    "  e = Exp(x)\n  g = Det(e)\n  y = Relu(g)\n  output y\n}\n");
  g_autoptr (PlRunReport) r = check_graph (g, 15, 1e-6, 1e-6);
  g_assert_cmpint (r->n_kernels, ==, 3);
  g_assert_true (r->kernels[1].fallback);
  g_assert_cmpstr (r->kernels[1].kind, ==, "fallback");
  g_assert_false (r->kernels[0].fallback);
  g_autofree char *json = pl_run_report_json (r);
  g_assert_nonnull (strstr (json, "\"fallback\": true"));
}

/* Runs the graph `text` on the cpu as it is and after fuse-loops, each
 * against the reference, with `fallbacks` reference kernels both times;
 * returns the fused graph, and its run's report in *rf. */
static PlGraph *
check_unfused_and_fused (const char *text, guint32 seed, int fallbacks, PlRunReport **rf)
{
  g_autoptr (PlGraph) g = pl_test_parse (text);
  g_autoptr (PlRunReport) r = check_graph (g, seed, 1e-6, 1e-6);
  g_assert_cmpint (count_kind (r, "fallback"), ==, fallbacks);
  PlGraph *f = pl_test_passes (g, "fuse-loops");
  *rf = check_graph (f, seed, 1e-6, 1e-6);
  g_assert_cmpint (count_kind (*rf, "fallback"), ==, fallbacks);
  return f;
}

/* The kernel plan of the fusion that computes value `name` of f, dumped. */
static char *
fusion_plan_dump (const PlGraph *f, const char *name)
{
  PlNode *n = pl_graph_find_value (f, name)->producer;
  g_assert_nonnull (n->body);
  g_autoptr (GError) error = NULL;
  g_autoptr (PlKernelPlan) p = pl_kernel_plan_for_node ("k", n, &error);
  g_assert_no_error (error);
  return pl_kernel_plan_dump (p);
}

/* Slice and Split are index functions: generated, and a Slice fuses into
 * the loop around it; a negative step reads backwards (a mirror atom). */
static void
test_slice_split (void)
{
  g_autoptr (PlRunReport) rf = NULL;
  g_autoptr (PlGraph) f = check_unfused_and_fused (PL_TEST_SLICE_SPLIT_GRAPH, 17, 0, &rf);
  /* y[i, j, k] = relu (exp (x[i, 1 + 3 j, 1 + 2 k])): one loop */
  g_autofree char *dump = fusion_plan_dump (f, "y");
  g_assert_nonnull (strstr (dump, "loop dims [3, 3, 6]"));
  g_assert_nonnull (strstr (dump, "in0[(120 * c0 + 36 * c1 + 2 * c2 + 13)]"));

  /* negative steps read backwards: x[i, 6 - 2 j] and a full reversal of
   * both axes fused with its neighbours, generated */
  g_autoptr (PlRunReport) rn = NULL;
  g_autoptr (PlGraph) nf = check_unfused_and_fused (PL_TEST_SLICE_NEG_GRAPH, 18, 0, &rn);
  g_autofree char *nd = fusion_plan_dump (nf, "y");   /* Exp+Slice+Relu */
  g_assert_nonnull (strstr (nd, "in0[(7 * (3 - c0) + (6 - c1))]"));
}

/* A Split into parts of different sizes runs a generated kernel per part,
 * one row of the kernel table. */
static void
test_split_parts (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (PL_TEST_SPLIT_PARTS_GRAPH);
  g_autoptr (PlRunReport) r = check_graph (g, 27, 0, 0);
  g_assert_cmpint (count_kind (r, "fallback"), ==, 0);
  g_assert_cmpint (r->n_kernels, ==, 2);
  g_assert_cmpint (r->kernels[0].n_launches, ==, 2);
  g_assert_cmpint (r->kernels[1].n_launches, ==, 3);
}

/* Concat is generated (a select among its inputs on the axis coordinate) and
 * fuses with the ops around it. */
static void
test_concat (void)
{
  g_autoptr (PlRunReport) rf = NULL;
  g_autoptr (PlGraph) f = check_unfused_and_fused (PL_TEST_CONCAT_GRAPH, 19, 0, &rf);
  g_assert_cmpint (rf->n_kernels, ==, 3);   /* Exp+Concat+Relu, Concat+Neg, Concat */
  g_autofree char *dump = fusion_plan_dump (f, "y");
  g_assert_nonnull (strstr (dump, "loop dims [2, 8, 5]"));
  g_assert_nonnull (strstr (dump, "index(c1)"));
}

/* The clamped index the select ops read through: x - shift itself where it
 * stays inside [0, n) (a plain offset, no clamp), else compares that the
 * generated code evaluates per element; it survives substitution. */
static void
test_index_clamp (void)
{
  PlIdxArena *a = pl_idx_arena_new (2, (int64_t[]) { 10, 4 });
  const PlIdx *c0 = pl_idx_coord (a, 0), *c1 = pl_idx_coord (a, 1);
  const char *names[] = { "i", "j" };
  g_assert_true (pl_idx_clamp (a, c0, 0, 10) == c0);
  g_assert_true (pl_idx_clamp (a, c0, 0, 1) == pl_idx_const (a, 0));
  /* c0 + 5 - 3 = c0 + 2, inside [0, 12) */
  g_assert_true (pl_idx_clamp (a, pl_idx_add (a, c0, pl_idx_const (a, 5)), 3, 12) == pl_idx_add (a, c0, pl_idx_const (a, 2)));
  /* a negative shift (a crop) only adds */
  g_assert_true (pl_idx_clamp (a, c1, -3, 7) == pl_idx_add (a, c1, pl_idx_const (a, 3)));
  const PlIdx *k = pl_idx_clamp (a, c0, 2, 4);
  g_assert_cmpint (k->max, ==, 3);
  g_autofree char *text = pl_idx_to_c (k, names);
  g_assert_cmpstr (text, ==, "(i < 2 ? 0 : i > 5 ? 3 : i - 2)");
  /* c0 = 4 * h + l: the clamp of the substituted sum */
  PlIdxArena *b = pl_idx_arena_new (2, (int64_t[]) { 3, 4 });
  const PlIdx *repl[] = { pl_idx_add (b, pl_idx_mul (b, pl_idx_coord (b, 0), 4), pl_idx_coord (b, 1)), pl_idx_const (b, 0) };
  g_autofree char *sub = pl_idx_to_c (pl_idx_substitute (b, k, repl), names);
  g_assert_cmpstr (sub, ==, "((4 * i + j) < 2 ? 0 : (4 * i + j) > 5 ? 3 : (4 * i + j) - 2)");
  pl_idx_arena_free (b);
  pl_idx_arena_free (a);
}

/* Pad (constant mode) and Trilu are generated, and Pad fuses. */
static void
test_pad_trilu (void)
{
  g_autoptr (PlRunReport) rf = NULL;
  g_autoptr (PlGraph) f = check_unfused_and_fused (PL_TEST_PAD_TRILU_GRAPH, 20, 0, &rf);
  g_assert_nonnull (pl_graph_find_value (f, "y")->producer->body);   /* Exp+Pad+Relu */
}

/* Pad in the other modes reads through an index function of the mode
 * (clamp, mod, mirror): generated, no select, and it fuses. */
static void
test_pad_modes (void)
{
  g_autoptr (PlRunReport) rf = NULL;
  g_autoptr (PlGraph) f = check_unfused_and_fused (PL_TEST_PAD_MODES_GRAPH, 24, 0, &rf);
  g_autofree char *dump = fusion_plan_dump (f, "y");   /* Exp+Pad+Relu */
  g_assert_nonnull (strstr (dump, "loop (Exp+Pad+Relu)"));
  g_assert_nonnull (strstr (dump, "(c1 < 2 ? 2 - c1 : c1 > 6 ? 10 - c1 : c1 - 2)"));
  g_assert_null (strstr (dump, "select"));
}

/* DepthToSpace, SpaceToDepth and Tile are index functions (div and mod of
 * the coordinates), generated and fused; GatherElements a gather load. */
static void
test_space_depth_tile (void)
{
  g_autoptr (PlRunReport) rf = NULL;
  g_autoptr (PlGraph) f = check_unfused_and_fused (PL_TEST_SPACE_DEPTH_GRAPH, 25, 0, &rf);
  g_autofree char *dump = fusion_plan_dump (f, "y");
  g_assert_nonnull (strstr (dump, "loop (Exp+DepthToSpace+Relu)"));
  g_autofree char *dump2 = fusion_plan_dump (f, "z");
  g_assert_nonnull (strstr (dump2, "loop (DepthToSpace+SpaceToDepth)"));
}

/* CumSum is its own generated kernel (a scan plan), between fusions. */
static void
test_cumsum (void)
{
  g_autoptr (PlRunReport) rf = NULL;
  g_autoptr (PlGraph) f = check_unfused_and_fused (PL_TEST_CUMSUM_GRAPH, 27, 0, &rf);
  g_autoptr (GError) error = NULL;
  g_autoptr (PlKernelPlan) p = pl_kernel_plan_for_node ("k", pl_graph_find_value (f, "z")->producer, &error);
  g_assert_no_error (error);
  g_assert_cmpint (p->kind, ==, PL_PLAN_SCAN);
  g_assert_cmpstr (p->note, ==, "cumsum 1x[4]x1100 exclusive reverse");
  g_assert_cmpuint (p->inputs->len, ==, 1);
}

/* Compiles g for the cpu and runs it on `bad` inputs (an index out of range,
 * a division by zero): the run fails with a
 * message containing `message`; then on `good` ones (when not NULL): the
 * same executable agrees with the reference. */
static void
check_run_error (const PlGraph *g, PlTensor *const *bad, const char *message, PlTensor *const *good)
{
  g_autoptr (GError) error = NULL;
  PlCompileOptions o;
  pl_compile_options_init (&o, PL_BACKEND_CPU);
  PlExecutable *e = pl_executable_new (g, &o, &error);
  g_assert_no_error (error);
  g_assert_null (pl_executable_run (e, bad, 0, NULL, &error));
  g_assert_nonnull (error);
  g_assert_nonnull (strstr (error->message, message));
  g_clear_error (&error);
  if (good)
    {
      PlTensor **got = pl_executable_run (e, good, 0, NULL, &error);
      g_assert_no_error (error);
      PlTensor **want = pl_interp_run (g, good, NULL, &error);
      g_assert_no_error (error);
      pl_test_assert_close (got[0], want[0], 0, 0);
      pl_interp_free_outputs (got, 1);
      pl_interp_free_outputs (want, 1);
    }
  pl_executable_free (e);
}

/* ScatterND and ScatterElements are their own generated kernels; an index
 * out of range fails the run naming the op, the index and the axis. */
static void
test_scatter (void)
{
  g_autoptr (PlRunReport) rf = NULL;
  g_autoptr (PlGraph) f = check_unfused_and_fused (PL_TEST_SCATTER_GRAPH, 28, 0, &rf);
  g_autoptr (GError) error = NULL;
  g_autoptr (PlKernelPlan) p = pl_kernel_plan_for_node ("k", pl_graph_find_value (f, "a")->producer, &error);
  g_assert_no_error (error);
  g_assert_cmpint (p->kind, ==, PL_PLAN_SCATTER);
  g_assert_cmpstr (p->note, ==, "scatternd 3 slices of 24 into [8, 4, 6], add");

  g_autoptr (PlGraph) g = pl_test_parse ("graph s opset 16 {\n  input x: f32[4, 3]\n  input i: i64[2, 1]\n"
                                         "  input u: f32[2, 3]\n  s = ScatterND(x, i, u)\n  output s\n}\n");
  g_autoptr (PlTensor) x = pl_test_random (PL_DTYPE_F32, 2, PL_DIMS (4, 3), 1, -1, 1);
  g_autoptr (PlTensor) u = pl_test_random (PL_DTYPE_F32, 2, PL_DIMS (2, 3), 2, -1, 1);
  g_autoptr (PlTensor) bad = pl_test_tensor (PL_DTYPE_I64, 2, PL_DIMS (2, 1), (const double[]) { 1, 4 });
  g_autoptr (PlTensor) good = pl_test_tensor (PL_DTYPE_I64, 2, PL_DIMS (2, 1), (const double[]) { 1, -4 });
  check_run_error (g, (PlTensor *[]) { x, bad, u }, "index 4 of ScatterND 's' (axis 0 of size 4) is out of range",
                     (PlTensor *[]) { x, good, u });
}

/* TopK is its own generated kernel: the reference's order, ties by index,
 * NaN best for largest and worst for smallest. */
static void
test_topk (void)
{
  g_autoptr (PlRunReport) rf = NULL;
  g_autoptr (PlGraph) f = check_unfused_and_fused (PL_TEST_TOPK_GRAPH, 29, 0, &rf);
  g_autoptr (GError) error = NULL;
  g_autoptr (PlKernelPlan) p = pl_kernel_plan_for_node ("k", pl_graph_find_value (f, "w")->producer, &error);
  g_assert_no_error (error);
  g_assert_cmpint (p->kind, ==, PL_PLAN_TOPK);
  g_assert_cmpstr (p->note, ==, "top 3 of 3x[50]x2, smallest");
  g_assert_cmpuint (p->inputs->len, ==, 1);
  g_assert_cmpuint (p->outputs->len, ==, 2);
}

/* GatherND is a gather load (each index of a tuple checked), fused with its
 * neighbours; an index out of range names its axis. */
static void
test_gather_nd (void)
{
  g_autoptr (PlRunReport) rf = NULL;
  g_autoptr (PlGraph) f = check_unfused_and_fused (PL_TEST_GATHERND_GRAPH, 30, 0, &rf);
  g_autofree char *dump = fusion_plan_dump (f, "s");
  g_assert_nonnull (strstr (dump, "loop (GatherND+Sigmoid)"));

  g_autoptr (PlGraph) g = pl_test_parse ("graph s opset 13 {\n  input x: f32[4, 5]\n  input i: i64[2, 2]\n"
                                         "  n = GatherND(x, i)\n  output n\n}\n");
  g_autoptr (PlTensor) x = pl_test_random (PL_DTYPE_F32, 2, PL_DIMS (4, 5), 1, -1, 1);
  g_autoptr (PlTensor) bad = pl_test_tensor (PL_DTYPE_I64, 2, PL_DIMS (2, 2), (const double[]) { 1, 2, 3, 5 });
  g_autoptr (PlTensor) good = pl_test_tensor (PL_DTYPE_I64, 2, PL_DIMS (2, 2), (const double[]) { 1, 2, -4, -5 });
  check_run_error (g, (PlTensor *[]) { x, bad }, "index 5 of GatherND 'n' (axis 1 of size 5) is out of range",
                     (PlTensor *[]) { x, good });
}

/* Integer Div and Mod are generated with a check for a zero divisor, which
 * fails the run as the reference does; float Mod both ways. */
static void
test_div_mod (void)
{
  g_autoptr (PlRunReport) rf = NULL;
  g_autoptr (PlGraph) f = check_unfused_and_fused (PL_TEST_DIVMOD_GRAPH, 31, 0, &rf);
  g_autoptr (PlGraph) g = pl_test_parse ("graph z opset 13 {\n  input a: i64[4]\n  input b: i64[4]\n"
                                         "  q = Div(a, b)\n  output q\n}\n");
  g_autoptr (PlTensor) a = pl_test_tensor (PL_DTYPE_I64, 1, PL_DIMS (4), (const double[]) { 7, -7, 9, 1 });
  g_autoptr (PlTensor) bad = pl_test_tensor (PL_DTYPE_I64, 1, PL_DIMS (4), (const double[]) { 2, 0, 3, 1 });
  g_autoptr (PlTensor) good = pl_test_tensor (PL_DTYPE_I64, 1, PL_DIMS (4), (const double[]) { 2, -1, -3, 1 });
  check_run_error (g, (PlTensor *[]) { a, bad }, "(Div): Div 'q': an integer division by zero",
                     (PlTensor *[]) { a, good });
}

/* OneHot is a select on the index (generated, fused with what feeds its
 * indices and what reads it). */
static void
test_onehot (void)
{
  g_autoptr (PlRunReport) rf = NULL;
  g_autoptr (PlGraph) f = check_unfused_and_fused (PL_TEST_ONEHOT_GRAPH, 26, 0, &rf);
  g_autofree char *d1 = fusion_plan_dump (f, "r");
  g_assert_nonnull (strstr (d1, "loop (OneHot+Relu)"));
  g_autofree char *d2 = fusion_plan_dump (f, "o2");
  g_assert_nonnull (strstr (d2, "loop (Add+OneHot)"));
}

/* The mirrored index: itself inside; compares for one mirror a side; the
 * periodic form (mod 2 (n - 1)) for pads longer than the axis. */
static void
test_index_reflect (void)
{
  PlIdxArena *a = pl_idx_arena_new (2, (int64_t[]) { 10, 30 });
  const PlIdx *c0 = pl_idx_coord (a, 0), *c1 = pl_idx_coord (a, 1);
  const char *names[] = { "i", "j" };
  g_assert_true (pl_idx_reflect (a, c0, 0, 10) == c0);
  g_assert_true (pl_idx_reflect (a, c0, 4, 1) == pl_idx_const (a, 0));
  const PlIdx *r = pl_idx_reflect (a, c0, 2, 6);
  g_assert_cmpint (r->max, ==, 5);
  g_autofree char *t1 = pl_idx_to_c (r, names);
  g_assert_cmpstr (t1, ==, "(i < 2 ? 2 - i : i > 7 ? 12 - i : i - 2)");
  /* j - 7 over [-7, 22] into 5: period 8, (j + 1) % 8 */
  g_autofree char *t2 = pl_idx_to_c (pl_idx_reflect (a, c1, 7, 5), names);
  g_assert_cmpstr (t2, ==, "((j + 1) % 8 < 5 ? (j + 1) % 8 : 8 - (j + 1) % 8)");
  /* never above the shift but mirrored more than once below it (a pad of 2
   * on an axis of 2, the last column cropped; found by the fuzzer): not
   * s - i, which read i = 0 at 2, past the axis */
  PlIdxArena *b = pl_idx_arena_new (1, (int64_t[]) { 3 });
  g_autofree char *t3 = pl_idx_to_c (pl_idx_reflect (b, pl_idx_coord (b, 0), 2, 2), names);
  g_assert_cmpstr (t3, ==, "(i % 2 < 2 ? i % 2 : 2 - i % 2)");
  pl_idx_arena_free (b);
  pl_idx_arena_free (a);
}

/* A nearest Resize by integer factors is an index function (generated,
 * fused); by 1.5 it stays the reference. */
static void
test_resize_nearest (void)
{
  g_autoptr (PlRunReport) rf = NULL;
  g_autoptr (PlGraph) f = check_unfused_and_fused (PL_TEST_RESIZE_GRAPH, 21, 1, &rf);
  g_autofree char *dump = fusion_plan_dump (f, "y");   /* Exp+Resize+Relu */
  g_assert_nonnull (strstr (dump, "(c2 / 2)"));
}

/* Linear Resize with constant scales or sizes is generated as a weighted
 * sum of clamped taps, and fuses; exclude_outside runs as the reference. */
static void
test_resize_linear (void)
{
  g_autoptr (PlRunReport) rf = NULL;
  g_autoptr (PlGraph) f = check_unfused_and_fused (PL_TEST_RESIZE_LINEAR_GRAPH, 23, 1, &rf);
  g_autofree char *dump = fusion_plan_dump (f, "y");   /* Exp+Resize+Relu */
  g_assert_nonnull (strstr (dump, "loop (Exp+Resize+Relu)"));
  /* the weights come from the coordinates: (2 (o + 1) % 2 + 1) / 4 */
  g_assert_nonnull (strstr (dump, "load.i64 index((2 * ((c1 + 1) % 2) + 1))"));
  g_assert_nonnull (strstr (dump, "const.f32 0.25"));
}

/* Cubic Resize with constant scales or sizes is generated as the weighted
 * sum of 4 clamped taps per axis, exclude_outside too, and fuses. */
static void
test_resize_cubic (void)
{
  g_autoptr (PlRunReport) rf = NULL;
  g_autoptr (PlGraph) f = check_unfused_and_fused (PL_TEST_RESIZE_CUBIC_GRAPH, 29, 1, &rf);
  g_autofree char *dump = fusion_plan_dump (f, "y");   /* Exp+Resize+Relu */
  g_assert_nonnull (strstr (dump, "loop (Exp+Resize+Relu)"));
  g_assert_nonnull (strstr (dump, "const.f32 1.25"));   /* a + 2, a = -0.75 */
}

/* GridSample (bilinear, nearest, bicubic; zeros, border and reflection
 * padding) is a weighted sum of gathered taps, against the reference on a
 * grid reaching outside the image. */
static void
test_grid_sample (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (PL_TEST_GRID_SAMPLE_GRAPH);
  g_autoptr (PlRunReport) r = check_graph (g, 31, 1e-6, 1e-6);
  g_assert_cmpint (count_kind (r, "fallback"), ==, 0);
  /* grid values that land on pixel centres, halves (nearest's ties: x 0.5 and -0.5 at v 2.5 and 0.5, to
   * even), outside, and NaN */
  static const char exact[] =
    "graph gx opset 16 {\n  input x: f32[1, 2, 3, 4]\n"
    "  const grid: f32[1, 2, 4, 2] = [-1, -1, -0.75, -0.5, 0, 0, 0.5, 0, -0.5, 0, 1.5, -1.5, 0.125, 0.625, nan, 0]\n"
    "  a = GridSample(x, grid) {mode=\"nearest\"}\n  b = GridSample(x, grid) {align_corners=1}\n"
    "  c = GridSample(x, grid) {mode=\"bicubic\", padding_mode=\"border\"}\n"
    "  d = GridSample(x, grid) {padding_mode=\"reflection\"}\n  output a, b, c, d\n}\n";
  g_autoptr (PlGraph) gx = pl_test_parse (exact);
  g_autoptr (PlRunReport) rx = check_graph (gx, 32, 1e-6, 1e-6);
  g_assert_cmpint (count_kind (rx, "fallback"), ==, 0);
}

/* RoiAlign with a fixed sampling ratio is generated (bilinear samples
 * gathered from the roi's image), avg and max, both coordinate modes,
 * against the reference on rois that reach outside the image; an adaptive
 * ratio runs as the reference; a batch index outside the batch fails the
 * run as the reference's does. */
static void
test_roi_align (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (PL_TEST_ROI_ALIGN_GRAPH);
  g_autoptr (PlRunReport) r = check_graph (g, 33, 1e-6, 1e-6);
  g_assert_cmpint (count_kind (r, "fallback"), ==, 1);
  for (int i = 0; i < r->n_kernels; i++)
    if (r->kernels[i].fallback)
      g_assert_cmpstr (r->kernels[i].name, ==, "d");

  g_autofree char *bad_text = g_strdup (PL_TEST_ROI_ALIGN_GRAPH);
  char *at = strstr (bad_text, "[0, 1, 1, 0, 1]");
  g_assert_nonnull (at);
  memcpy (at, "[0, 1, 2, 0, 1]", 15);
  g_autoptr (PlGraph) bad = pl_test_parse (bad_text);
  g_autoptr (GError) error = NULL;
  PlCompileOptions o;
  pl_compile_options_init (&o, PL_BACKEND_CPU);
  g_autoptr (PlTensor) x = pl_test_random (PL_DTYPE_F32, 4, PL_DIMS (2, 3, 6, 7), 3, -1, 1);
  PlExecutable *e = pl_executable_new (bad, &o, &error);
  g_assert_no_error (error);
  PlTensor **out = pl_executable_run (e, (PlTensor *[]) { x }, 1, NULL, &error);
  g_assert_null (out);
  g_assert_error (error, PL_ERROR, PL_ERROR_EXEC);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "batch index 2 of RoiAlign"));
  pl_executable_free (e);
}

/* ReverseSequence is a gather along the time axis at the reversed index
 * within each sequence's length, against the reference; a length beyond
 * the time axis fails the run as the reference's does. */
static void
test_reverse_sequence (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (PL_TEST_REVERSE_SEQUENCE_GRAPH);
  g_autoptr (GError) error = NULL;
  g_autoptr (PlTensor) x = pl_test_random (PL_DTYPE_F32, 3, PL_DIMS (5, 4, 3), 1, -1, 1);
  g_autoptr (PlTensor) z = pl_test_random (PL_DTYPE_F32, 4, PL_DIMS (4, 6, 2, 3), 2, -1, 1);
  int64_t lens[4] = { 6, 2, 0, 5 };
  g_autoptr (PlTensor) lz = pl_tensor_new (PL_DTYPE_I64, 1, PL_DIMS (4), &error);
  memcpy (lz->data, lens, sizeof lens);
  PlTensor *in[] = { x, z, lz };
  PlExecutable *e = compile (g);
  g_autoptr (PlRunReport) r = NULL;
  PlTensor **got = pl_executable_run (e, in, 1, &r, &error);
  g_assert_no_error (error);
  PlTensor **want = pl_interp_run (g, in, NULL, &error);
  g_assert_no_error (error);
  for (int i = 0; i < 2; i++)
    g_assert_true (pl_tensor_allclose (got[i], want[i], 1e-6, 1e-6, NULL));
  g_assert_cmpint (count_kind (r, "fallback"), ==, 0);
  pl_interp_free_outputs (got, 2);
  pl_interp_free_outputs (want, 2);

  ((int64_t *) lz->data)[3] = 7;   /* beyond the 6 steps */
  g_assert_null (pl_executable_run (e, in, 1, NULL, &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_EXEC);
  g_assert_nonnull (strstr (error->message, "sequence length 7 of ReverseSequence"));
  pl_executable_free (e);
}

/* The C source of the kernel of value `name`'s producer in g. */
static char *
kernel_source (const PlGraph *g, const char *name)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (PlKernelPlan) p = pl_kernel_plan_for_node ("k", pl_graph_find_value (g, name)->producer, &error);
  g_assert_no_error (error);
  GString *src = g_string_new (NULL);
  g_assert_true (pl_codegen_c_kernel (src, p));
  return g_string_free (src, FALSE);
}

/* The number of times needle occurs in s. */
static int
occurrences (const char *s, const char *needle)
{
  int n = 0;
  for (const char *p = s; (p = strstr (p, needle)); p += strlen (needle))
    n++;
  return n;
}

/* Clamps and mirrors on the innermost dim are peeled off its edges, and an
 * interior (or a whole row) that still divides that dim by 2 or 3 takes its
 * phases side by side (codegen-c-peel.c): linear Resize up by 2 and 3 in
 * the coordinate modes, down by 2, to a size (align_corners), Pad edge and
 * reflect, nearest Resize, DepthToSpace, each alone and fused, against the
 * reference; the kernels' interiors load contiguous elements with no
 * clamp. */
static void
test_edge_peeling (void)
{
  static const char text[] =
    "graph pe opset 13 {\n"
    "  input x: f32[2, 3, 6, 40]\n  input z: f32[1, 8, 5, 20]\n"
    "  const s2: f32[4] = [1, 1, 2, 2]\n  const s3: f32[4] = [1, 1, 1, 3]\n  const sd: f32[4] = [1, 1, 1, 0.5]\n"
    "  const sz: i64[4] = [2, 3, 6, 67]\n  const pads: i64[8] = [0, 0, 0, 3, 0, 0, 0, 5]\n"
    "  e = Exp(x)\n  u = Resize(e, _, s2) {mode=\"linear\"}\n  y = Relu(u)\n"
    "  a = Resize(x, _, _, sz) {mode=\"linear\", coordinate_transformation_mode=\"align_corners\"}\n"
    "  b = Resize(x, _, s3) {mode=\"linear\", coordinate_transformation_mode=\"pytorch_half_pixel\"}\n"
    "  c = Resize(x, _, sd) {mode=\"linear\", coordinate_transformation_mode=\"asymmetric\"}\n"
    "  h = Resize(x, _, s3) {mode=\"linear\", coordinate_transformation_mode=\"half_pixel\"}\n"
    "  p = Pad(x, pads) {mode=\"edge\"}\n  q = Pad(x, pads) {mode=\"reflect\"}\n"
    "  nn = Resize(x, _, s2) {mode=\"nearest\"}\n  ds = DepthToSpace(z) {blocksize=2}\n"
    "  output y, a, b, c, h, p, q, nn, ds\n}\n";
  g_autoptr (PlRunReport) rf = NULL;
  g_autoptr (PlGraph) f = check_unfused_and_fused (text, 41, 0, &rf);
  g_autoptr (PlGraph) g = pl_test_parse (text);

  /* 2x: the first output column, 39 iterations of two phases, the last */
  g_autofree char *u = kernel_source (g, "u");
  g_assert_cmpint (occurrences (u, "#pragma omp simd"), ==, 3);
  g_assert_nonnull (strstr (u, "for (int64_t c2 = 0; c2 < 39; c2++)"));
  g_assert_nonnull (strstr (u, "240 * c0 + c2 + 1)]"));
  g_assert_nonnull (strstr (u, "out0[(960 * c0 + 80 * c1 + 2 * c2 + 2)]"));
  /* 3x: three phases */
  g_autofree char *h = kernel_source (g, "h");
  g_assert_cmpint (occurrences (h, "in0[(40 * c0 + c1 + 1)]"), ==, 3);
  /* Pad: the copy of the middle is a plain one, edges apart */
  g_autofree char *p = kernel_source (g, "p");
  g_assert_nonnull (strstr (p, "in0[(40 * c0 + c1)]"));
  g_assert_nonnull (strstr (p, "for (int64_t c1 = 43; c1 < 48; c1++)"));
  g_autofree char *q = kernel_source (g, "q");
  g_assert_nonnull (strstr (q, "in0[(40 * c0 + c1)]"));
  /* no edges, but the row divided by 2: the phases alone */
  g_autofree char *nn = kernel_source (g, "nn");
  g_assert_nonnull (strstr (nn, "for (int64_t c2 = 0; c2 < 40; c2++)"));
  g_assert_nonnull (strstr (nn, "out0[(960 * c0 + 80 * c1 + 2 * c2 + 1)]"));
  g_autofree char *ds = kernel_source (g, "ds");
  g_assert_nonnull (strstr (ds, "100 * c0 + c2 + 200)]"));
  /* fused with Exp and Relu, still peeled */
  g_autofree char *fy = kernel_source (f, "y");
  g_assert_cmpint (occurrences (fy, "#pragma omp simd"), ==, 3);
}

/* Gather is generated: a load whose offset adds the index (negative ones
 * counted from the end), for any axis, i64 or i32 indices. */
static void
test_gather (void)
{
  g_autoptr (PlRunReport) rf = NULL;
  g_autoptr (PlGraph) f = check_unfused_and_fused (PL_TEST_GATHER_GRAPH, 31, 0, &rf);
  g_autoptr (GError) error = NULL;
  g_autoptr (PlKernelPlan) p = pl_kernel_plan_for_node ("k", pl_graph_find_value (f, "g1")->producer, &error);
  g_assert_no_error (error);
  g_autofree char *dump = pl_kernel_plan_dump (p);
  g_assert_nonnull (strstr (dump, " * 4]"));   /* the index times the axis' stride */
  /* the lookup fuses with the Relu it feeds; a gather's data computed by a
   * fusible op is not fused with it (the data is read from memory) */
  g_autofree char *fused = fusion_plan_dump (f, "y");
  g_assert_nonnull (strstr (fused, "loop (Gather+Relu)"));
  g_assert_null (pl_graph_find_value (f, "g3")->producer->body);
  g_assert_cmpint (pl_graph_find_value (f, "g3")->producer->op, ==, PL_OP_Gather);
}

/* An index out of range fails the run, as on the reference. */
static void
test_gather_out_of_range (void)
{
  pl_test_index_out_of_range (PL_BACKEND_CPU);
}

/* A fusion whose body is not one kernel (reductions over different rows)
 * runs as the fewest runs of body nodes that each are one kernel: here
 * ReduceSum over rows, then ReduceSum over columns with the Add: one table
 * row, two launches, the right result. */
static void
test_split_fusion (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (
    "graph sp opset 17 {\n"
    "  input x: f32[4, 6]\n"
    "  a = ReduceSum(x) {axes=[1], keepdims=1}\n  b = ReduceSum(x) {axes=[0], keepdims=1}\n"
    "  c = Add(a, b)\n  output c\n}\n");
  int n;
  g_autofree PlNode **order = pl_graph_topo_order (g, &n, NULL);
  g_autoptr (GError) error = NULL;
  pl_fusion_create (g, order, n, PL_FUSION_KIND_INPUT, &error);
  g_assert_no_error (error);
  g_autoptr (PlRunReport) r = check_graph (g, 16, 1e-5, 1e-6);
  g_assert_cmpint (r->n_kernels, ==, 1);
  g_assert_cmpstr (r->kernels[0].kind, ==, "split");
  g_assert_cmpint (r->kernels[0].n_launches, ==, 2);
}

/* The second compile of the same graph loads the cached object. */
static void
test_cache (void)
{
  g_autoptr (PlGraph) g = pl_test_parse ("graph c opset 17 {\n  input x: f32[3]\n  const k: f32[] = 0.125\n"
                                 "  y = Mul(x, k)\n  z = Sin(y)\n  output z\n}\n");
  g_autofree char *dir = g_build_filename (cache_dir, "fresh", NULL);
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", dir);
  g_assert_true (g_spawn_command_line_sync (rm, NULL, NULL, NULL, NULL));
  PlCompileOptions o;
  pl_compile_options_init (&o, PL_BACKEND_CPU);
  o.cache_dir = dir;
  g_autoptr (GError) error = NULL;
  PlExecutable *a = pl_executable_new (g, &o, &error);
  g_assert_no_error (error);
  g_assert_false (pl_executable_cache_hit (a));
  PlExecutable *b = pl_executable_new (g, &o, &error);
  g_assert_no_error (error);
  g_assert_true (pl_executable_cache_hit (b));
  g_assert_cmpstr (pl_executable_full_source (a), ==, pl_executable_full_source (b));
  PlNode *mul = pl_graph_find_node (g, "y");
  g_assert_nonnull (strstr (pl_executable_source (a, mul->id), "#pragma omp simd"));
  pl_executable_free (a);
  pl_executable_free (b);
}

/* --- the memory plan and in-place sharing ----------------------------------------------------- */

static const PlKernelTiming *
kernel_named (const PlRunReport *r, const char *name)
{
  for (int i = 0; i < r->n_kernels; i++)
    if (strcmp (r->kernels[i].name, name) == 0)
      return &r->kernels[i];
  g_error ("no kernel %s", name);
  return NULL;
}

/* Whether kernel `name` says it writes in place over `over` (NULL: over nothing). */
static void
assert_in_place (const PlRunReport *r, const char *name, const char *over)
{
  const char *note = kernel_named (r, name)->note;
  if (!over)
    {
      if (note && strstr (note, "in place"))
        g_error ("kernel %s: '%s', expected no in-place sharing", name, note);
      return;
    }
  g_autofree char *want = g_strdup_printf ("in place over %s", over);
  if (!note || !strstr (note, want))
    g_error ("kernel %s: '%s', expected '%s'", name, note ? note : "", want);
}

static int
count_in_place (const PlRunReport *r)
{
  int n = 0;
  for (int i = 0; i < r->n_kernels; i++)
    n += r->kernels[i].note && strstr (r->kernels[i].note, "in place over") != NULL;
  return n;
}

/* The graph's memory profile plans what the runtime does: the same outputs
 * share, the same peak. */
static void
assert_profile_matches (const PlGraph *g, const PlRunReport *r)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (PlMemoryProfile) mp = pl_memory_profile (g, 1, &error);
  g_assert_no_error (error);
  g_assert_cmpint (mp->n_in_place, ==, count_in_place (r));
  g_assert_cmpint (mp->peak_bytes, ==, r->peak_bytes);
}

/* The memory plan: intermediates share the arena, views share their
 * source, the timeline starts and ends with the inputs/outputs in use. */
static void
test_memory_and_trace (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (
    "graph mem opset 17 {\n"
    "  input x: f32[256, 256]\n  const s: i64[1] = [65536]\n"
    "  a = Exp(x)\n  b = Sin(a)\n  c = Cos(b)\n  d = Reshape(c, s)\n  e = Neg(d)\n  output e\n}\n");
  g_autoptr (PlRunReport) r = check_graph (g, 17, 1e-5, 1e-6);
  int64_t t = 256 * 256 * 4;
  g_assert_cmpint (r->n_kernels, ==, 4);          /* the Reshape is a view */
  g_assert_cmpint (r->peak_bytes, ==, 2 * t);       /* x and a while Exp runs; then one tensor */
  g_assert_cmpint (r->arena_bytes, ==, 2 * t);      /* b, c and e write over a (e over d, c's view): one place */
  assert_in_place (r, "e", "d");
  g_assert_cmpint (r->memory[0].bytes, ==, t);
  g_assert_cmpint (r->memory[r->n_memory - 1].bytes, ==, t);
  g_assert_cmpint (r->n_events, ==, 4);
  g_autofree char *trace = pl_run_report_trace_json (r);
  g_assert_nonnull (strstr (trace, "\"traceEvents\""));
  g_assert_nonnull (strstr (trace, "\"ph\": \"X\""));
  g_assert_nonnull (strstr (trace, "\"ph\": \"C\""));
  g_autofree char *json = pl_run_report_json (r);
  g_assert_nonnull (strstr (json, "\"kernels\": ["));
}

/* --- in-place sharing -------------------------------------------------------------------------- */

/* a = Exp(x) -> b = Sin(a) -> c = Add(a, b) -> d = Mul(c, k) -> e = Relu(d),
 * 256 KiB each. b cannot write over a (c reads a later); c writes over a
 * (its first input read last), d over c, e over d (a graph output may take
 * an intermediate's place); x, a graph input, is never written over. So two
 * tensors at most (x, a at the first step) where separate buffers need
 * three (a, b, c at the Add): the arena is two. The shared slots lose
 * restrict, the vectorized loop reads each element before it writes it,
 * and the outputs are the interpreter's. */
static void
test_in_place_chain (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (
    "graph ip opset 17 {\n  input x: f32[256, 256]\n  const k: f32[] = 0.5\n"
    "  a = Exp(x)\n  b = Sin(a)\n  c = Add(a, b)\n  d = Mul(c, k)\n  e = Relu(d)\n  output e\n}\n");
  g_autoptr (PlRunReport) r = check_graph (g, 21, 1e-5, 1e-6);
  int64_t t = 256 * 256 * 4;
  g_assert_cmpint (r->n_kernels, ==, 5);
  assert_in_place (r, "a", NULL);
  assert_in_place (r, "b", NULL);
  assert_in_place (r, "c", "a");
  assert_in_place (r, "d", "c");
  assert_in_place (r, "e", "d");
  g_assert_cmpint (r->peak_bytes, ==, 2 * t);
  g_assert_cmpint (r->arena_bytes, ==, 2 * t);
  assert_profile_matches (g, r);

  PlExecutable *e = compile (g);
  const char *add = pl_executable_source (e, pl_graph_find_node (g, "c")->id);
  g_assert_nonnull (strstr (add, "const float * in0 = "));        /* a: shared with out0 */
  g_assert_nonnull (strstr (add, "const float *restrict in1 = "));
  g_assert_nonnull (strstr (add, "float * out0 = "));
  g_assert_nonnull (strstr (add, "#pragma omp parallel for simd"));
  const char *sin = pl_executable_source (e, pl_graph_find_node (g, "b")->id);
  g_assert_nonnull (strstr (sin, "const float *restrict in0 = "));
  g_assert_nonnull (strstr (sin, "float *restrict out0 = "));
  pl_executable_free (e);
}

/* A graph output is never written over, not even by its last reader: c is
 * an output that d reads. c itself may take a's place. */
static void
test_in_place_keeps_outputs (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (
    "graph io opset 17 {\n  input x: f32[64, 1024]\n"
    "  a = Exp(x)\n  b = Sin(a)\n  c = Add(a, b)\n  d = Neg(c)\n  output c, d\n}\n");
  g_autoptr (PlRunReport) r = check_graph (g, 22, 1e-5, 1e-6);
  assert_in_place (r, "a", NULL);
  assert_in_place (r, "c", "a");
  assert_in_place (r, "d", NULL);
  assert_profile_matches (g, r);
}

/* A loop fusion of elementwise ops is one pointwise kernel: it writes over
 * an input it reads last (a), element for element, and only that input
 * and the output lose restrict. */
static void
test_in_place_fusion (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (
    "graph ipf opset 17 {\n  input x: f32[128, 512]\n  const k: f32[] = 0.5\n"
    "  a = Exp(x)\n  b = Sin(a)\n  c = Add(a, b)\n  d = Mul(c, k)\n  e = Relu(d)\n  output e\n}\n");
  PlNode *members[] = { pl_graph_find_node (g, "c"), pl_graph_find_node (g, "d"), pl_graph_find_node (g, "e") };
  g_autoptr (GError) error = NULL;
  PlNode *f = pl_fusion_create (g, members, 3, PL_FUSION_KIND_LOOP, &error);
  g_assert_no_error (error);
  g_autoptr (PlRunReport) r = check_graph (g, 23, 1e-5, 1e-6);
  g_assert_cmpint (r->n_kernels, ==, 3);
  assert_in_place (r, f->name, "a");
  g_assert_cmpint (r->arena_bytes, ==, 2 * 128 * 512 * 4);
  assert_profile_matches (g, r);

  PlExecutable *e = compile (g);
  const char *src = pl_executable_source (e, f->id);
  g_assert_cmpint (occurrences (src, "*restrict in"), ==, 1);
  g_assert_cmpint (occurrences (src, "* in"), ==, 1);
  g_assert_nonnull (strstr (src, "float * out0 = "));
  pl_executable_free (e);
}

/* --- swapping under a device budget ----------------------------------------------------------- */

/* A pipeline with parameters. */
static PlGraph *
with_passes (const PlGraph *g, const char *spec, const char *const *params)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (PlPipeline) p = pl_pipeline_parse (spec, &error);
  g_assert_no_error (error);
  for (int i = 0; params && params[i]; i++)
    {
      pl_pipeline_set_param (p, params[i], &error);
      g_assert_no_error (error);
    }
  PlRunOptions o;
  pl_run_options_init (&o);
  g_autoptr (PlHistory) h = pl_pipeline_run (g, p, &o, &error);
  g_assert_no_error (error);
  g_assert_null (h->error);
  return pl_graph_copy (pl_history_step (h, pl_history_n_steps (h) - 1)->graph);
}

static PlExecutable *
compile_budget (const PlGraph *g, int64_t budget, GError **error)
{
  PlCompileOptions o;
  pl_compile_options_init (&o, PL_BACKEND_CPU);
  o.cache_dir = cache_dir;
  o.device_budget = budget;
  return pl_executable_new (g, &o, error);
}

/* First-fit fragmentation the arena may add over the planned peak. */
#define ALLOCATOR_SLACK (160 * 1024)

/* grad, then swap with budget=50%: under a device budget of half the
 * unswapped planned peak (the memory profile's: tensors) plus the kernel
 * workspace the profile does not know (im2col) plus ALLOCATOR_SLACK, the
 * swapped graph runs with the same outputs (exactly for swap mode, within
 * f16 rounding for compress mode), its measured device peak fits the
 * budget and host memory holds the swapped tensors; the unswapped graph is
 * refused under that budget with an error that names both. */
static void
test_swap_budget (gconstpointer data)
{
  const char *name = data;
  g_autoptr (PlGraph) g = pl_test_load_sample (name);
  static const char *const grad_only[] = { NULL };
  g_autoptr (PlGraph) tg = with_passes (g, "grad", grad_only);
  g_autoptr (PlMemoryProfile) mp = pl_memory_profile (tg, 1, NULL);
  g_assert_nonnull (mp);

  g_autoptr (GError) error = NULL;
  PlTensor **in = pl_random_inputs (tg, 5, 1, &error);
  g_assert_no_error (error);
  PlExecutable *e0 = compile_budget (tg, 0, &error);
  g_assert_no_error (error);
  g_autoptr (PlRunReport) r0 = NULL;
  PlTensor **want = pl_executable_run (e0, in, 1, &r0, &error);
  g_assert_no_error (error);
  g_assert_cmpint (r0->n_copies, ==, 0);
  g_assert_cmpint (r0->host_peak_bytes, ==, 0);
  /* the unswapped step agrees with the reference; a convolution's
   * backward-input (ConvTranspose) is a planned GEMM + col2im */
  PlTensor **ref = pl_interp_run (tg, in, NULL, &error);
  g_assert_no_error (error);
  for (guint i = 0; i < tg->outputs->len; i++)
    pl_test_assert_close (want[i], ref[i], 1e-3, 1e-4);
  pl_interp_free_outputs (ref, (int) tg->outputs->len);
  g_assert_cmpint (assert_conv_transpose_planned (r0), ==, g_str_has_prefix (name, "resnet") ? 1 : 0);
  /* the profile the swap pass plans with shares what the runtime shares */
  g_assert_cmpint (count_in_place (r0), >, 0);
  assert_profile_matches (tg, r0);
  pl_executable_free (e0);

  int64_t budget = mp->peak_bytes / 2 + r0->workspace_bytes + ALLOCATOR_SLACK;
  g_test_message ("%s: profile peak %" G_GINT64_FORMAT ", runtime peak %" G_GINT64_FORMAT " (arena %" G_GINT64_FORMAT
                  ", workspace %" G_GINT64_FORMAT "), budget %" G_GINT64_FORMAT, name, mp->peak_bytes, r0->peak_bytes,
                  r0->arena_bytes, r0->workspace_bytes, budget);

  /* unswapped: refused, naming the need and the budget */
  g_assert_null (compile_budget (tg, budget, &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_EXEC);
  g_autofree char *need = g_format_size_full ((guint64) r0->arena_bytes, G_FORMAT_SIZE_IEC_UNITS);
  g_autofree char *have = g_format_size_full ((guint64) budget, G_FORMAT_SIZE_IEC_UNITS);
  g_autofree char *head = g_strdup_printf ("needs %s of device memory", need);
  g_assert_true (g_str_has_prefix (error->message, head));
  g_assert_nonnull (strstr (error->message, have));
  g_assert_nonnull (strstr (error->message, "swap.budget="));
  g_clear_error (&error);

  static const char *const swap[] = { "swap.budget=50%", NULL };
  static const char *const compress[] = { "swap.budget=50%", "swap.mode=compress", NULL };
  for (int mode = 0; mode < 2; mode++)
    {
      g_autoptr (PlGraph) sg = with_passes (tg, "swap", mode == 0 ? swap : compress);
      /* compress mode cannot reach 50% on these graphs (the swap report says
       * so): it runs under no budget, and must still lower the peak */
      PlExecutable *e = compile_budget (sg, mode == 0 ? budget : 0, &error);
      g_assert_no_error (error);
      g_autoptr (PlRunReport) r = NULL;
      PlTensor **got = pl_executable_run (e, in, 1, &r, &error);
      g_assert_no_error (error);
      for (guint i = 0; i < tg->outputs->len; i++)
        {
          double worst = 0;
          bool ok = mode == 0 ? pl_tensor_allclose (got[i], want[i], 0, 0, &worst)
                              : pl_tensor_allclose (got[i], want[i], 1e-2, 1e-3, &worst);
          if (!ok)
            g_error ("%s (%s): output %u differs by %g", name, mode ? "compress" : "swap", i, worst);
        }
      int64_t dev_peak = 0, host_peak = 0;
      for (int k = 0; k < r->n_memory; k++)
        {
          dev_peak = MAX (dev_peak, r->memory[k].bytes);
          host_peak = MAX (host_peak, r->memory[k].host_bytes);
        }
      g_assert_cmpint (dev_peak, ==, r->peak_bytes);
      g_assert_cmpint (host_peak, ==, r->host_peak_bytes);
      g_autoptr (PlMemoryProfile) smp = pl_memory_profile (sg, 1, &error);
      g_assert_no_error (error);
      g_assert_cmpint (smp->n_in_place, ==, count_in_place (r));
      g_test_message ("%s %s: %d outputs in place; planned peak %" G_GINT64_FORMAT ", runtime peak %" G_GINT64_FORMAT,
                      name, mode ? "compress" : "swap", smp->n_in_place, smp->peak_bytes, r->peak_bytes);
      g_assert_cmpint (r->peak_bytes, <, r0->peak_bytes);
      if (mode == 0)
        {
          g_assert_cmpint (dev_peak, <=, budget);
          g_assert_cmpint (r->arena_bytes, <=, budget);
          g_assert_cmpint (r->device_budget, ==, budget);
          g_assert_cmpint (host_peak, >, 0);
          g_assert_cmpint (r->host_pool_bytes, >=, host_peak);
          g_assert_cmpint (r->n_copies, >, 0);
          g_assert_cmpint (count_kind (r, "swap-out"), >, 0);
          g_assert_cmpint (count_kind (r, "swap-in"), >, 0);
          g_assert_cmpint (r->copy_bytes, >, 0);
          g_assert_true (r->copy_ms > 0);
          g_assert_true (r->wait_ms == r->copy_ms);   /* cpu: synchronous copies */
        }
      else
        {
          g_assert_cmpint (host_peak, ==, 0);
          g_assert_cmpint (r->n_copies, ==, 0);
        }
      g_test_message ("%s %s: device peak %" G_GINT64_FORMAT " (arena %" G_GINT64_FORMAT "), host peak %" G_GINT64_FORMAT
                      ", copy %.3f ms, total %.3f ms (unswapped %.3f ms)", name, mode ? "compress" : "swap",
                      r->peak_bytes, r->arena_bytes, r->host_peak_bytes, r->copy_ms, r->total_ms, r0->total_ms);
      pl_interp_free_outputs (got, (int) tg->outputs->len);
      pl_executable_free (e);

      /* the same graph's CUDA kernels (copies are not kernels) still compile with NVRTC, where there is one */
      int n_kernels = 0;
      if (!pl_cuda_compile_check (sg, NULL, NULL, &n_kernels, &error))
        {
          g_assert_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED);
          g_clear_error (&error);
        }
      else
        g_assert_cmpint (n_kernels, >, 0);
    }
  pl_interp_free_outputs (want, (int) tg->outputs->len);
  pl_interp_free_outputs (in, (int) tg->inputs->len);
}

/* Inputs of the wrong shape are an error, not a crash. */
static void
test_bad_input (void)
{
  g_autoptr (PlGraph) g = pl_test_parse ("graph b opset 17 {\n  input x: f32[3]\n  y = Exp(x)\n  output y\n}\n");
  PlExecutable *e = compile (g);
  g_autoptr (PlTensor) t = pl_test_tensor (PL_DTYPE_F32, 1, PL_DIMS (4), NULL);
  g_autoptr (GError) error = NULL;
  PlTensor *in[1] = { t };
  g_assert_null (pl_executable_run (e, in, 1, NULL, &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_EXEC);
  pl_executable_free (e);

  g_autoptr (PlGraph) sym = pl_test_parse ("graph s opset 17 {\n  input x: f32[N]\n  y = Exp(x)\n  output y\n}\n");
  PlCompileOptions o;
  pl_compile_options_init (&o, PL_BACKEND_CPU);
  o.cache_dir = cache_dir;
  g_clear_error (&error);
  g_assert_null (pl_executable_new (sym, &o, &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED);
}

/* g's nodes as one input fusion (a stitched kernel), without the passes. */
static PlNode *
fuse_whole (PlGraph *g)
{
  int n;
  g_autofree PlNode **order = pl_graph_topo_order (g, &n, NULL);
  g_autoptr (GError) error = NULL;
  PlNode *f = pl_fusion_create (g, order, n, PL_FUSION_KIND_INPUT, &error);
  g_assert_no_error (error);
  return f;
}

/* --- vectorized math ---------------------------------------------------------------------------- */

/* Error of `got` against the exact `want` in ulps of f32 at want's
 * magnitude (subnormals: the smallest ulp). NaN must match NaN, a result
 * rounding to inf must be inf of that sign, and vice versa. */
static double
ulps_f32 (float got, double want)
{
  if (isnan (want) || isnan (got))
    return isnan (want) && isnan (got) ? 0 : INFINITY;
  if (isinf ((float) want) || isinf (got))
    return (float) want == got ? 0 : INFINITY;
  int ex;
  frexp (fabs (want), &ex);   /* |want| in [2^(ex-1), 2^ex) */
  return fabs ((double) got - want) / ldexp (1.0, MAX (ex - 1, -126) - 23);
}

static double
sigmoid_ref (double x)
{
  return 1.0 / (1.0 + exp (-x));
}

/* The math functions of the generated C (the prelude's inline exp and tanh,
 * libmvec's erf, log, ... where the C library has it) in vectorized loops,
 * against libm in double over the special values and a sweep of every
 * 4099th f32 bit pattern (all signs and exponents) plus [-20, 20] densely.
 * The tolerances are the ones the prelude documents (measured here with
 * glibc 2.36: exp 1.89, tanh 1.63, sigmoid 3.45; libmvec erf 4.00, log
 * 3.79, tan 3.18, the others below 3 ulp). */
static void
test_vector_math (void)
{
  static const struct {
    const char *name, *expr;
    double (*ref) (double);
    double max_ulps;
  } fns[] = {
    { "exp", "expf (x[i])", exp, 2 },         { "tanh", "tanhf (x[i])", tanh, 2 },
    { "sigmoid", "pl_sigmoidf (x[i])", sigmoid_ref, 4 },
    { "erf", "erff (x[i])", erf, 5 },         { "log", "logf (x[i])", log, 5 },
    { "expm1", "expm1f (x[i])", expm1, 5 },   { "log1p", "log1pf (x[i])", log1p, 5 },
    { "sin", "sinf (x[i])", sin, 5 },         { "cos", "cosf (x[i])", cos, 5 },
    { "tan", "tanf (x[i])", tan, 5 },         { "asin", "asinf (x[i])", asin, 5 },
    { "acos", "acosf (x[i])", acos, 5 },      { "atan", "atanf (x[i])", atan, 5 },
    { "sinh", "sinhf (x[i])", sinh, 5 },      { "cosh", "coshf (x[i])", cosh, 5 },
    { "asinh", "asinhf (x[i])", asinh, 5 },   { "acosh", "acoshf (x[i])", acosh, 5 },
    { "atanh", "atanhf (x[i])", atanh, 5 },
  };
  static const struct {
    const char *name;
    double (*ref) (double);
  } fns64[] = { { "exp", exp }, { "log", log }, { "tanh", tanh }, { "erf", erf }, { "sin", sin }, { "expm1", expm1 } };
  g_autofree char *prelude = pl_codegen_c_prelude ();
  GString *src = g_string_new (prelude);
  for (size_t f = 0; f < G_N_ELEMENTS (fns); f++)
    g_string_append_printf (src, "void t_%s (const float *restrict x, float *restrict y, int64_t n)\n{\n"
                            "#pragma omp simd\n  for (int64_t i = 0; i < n; i++)\n    y[i] = %s;\n}\n",
                            fns[f].name, fns[f].expr);
  for (size_t f = 0; f < G_N_ELEMENTS (fns64); f++)
    g_string_append_printf (src, "void t64_%s (const double *restrict x, double *restrict y, int64_t n)\n{\n"
                            "#pragma omp simd\n  for (int64_t i = 0; i < n; i++)\n    y[i] = %s (x[i]);\n}\n",
                            fns64[f].name, fns64[f].name);
  g_autoptr (GError) error = NULL;
  PlCpuModule *m = pl_cpu_module_compile (src->str, cache_dir, NULL, &error);
  g_assert_no_error (error);
  g_string_free (src, TRUE);

  static const float special[] = {
    0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, FLT_MIN, -FLT_MIN, FLT_MAX, -FLT_MAX, 0x1p-149f, -0x1p-149f,
    1e-30f, -1e-30f, 1e-8f, -1e-8f, 0.5f, 0.625f, 0x1.3fffffp-1f, 1.0f, -1.0f, 2.0f, 9.0f, 10.0f, -10.0f,
    88.0f, 88.72283f, 88.72284f, 89.0f, -87.0f, -87.33654f, -87.5f, -100.0f, -103.97207f, -103.98f, -104.0f,
    -1000.0f, 1000.0f,
  };
  GArray *xs = g_array_new (FALSE, FALSE, sizeof (float));
  g_array_append_vals (xs, special, G_N_ELEMENTS (special));
  for (guint64 u = 0; u < ((guint64) 1 << 32); u += 4099)
    {
      guint32 bits = (guint32) u;
      float x;
      memcpy (&x, &bits, 4);
      g_array_append_val (xs, x);
    }
  for (int i = -200000; i <= 200000; i++)
    {
      float x = (float) i * 1e-4f;
      g_array_append_val (xs, x);
    }
  int64_t n = xs->len;
  float *y = g_new (float, n);
  for (size_t f = 0; f < G_N_ELEMENTS (fns); f++)
    {
      g_autofree char *sym = g_strdup_printf ("t_%s", fns[f].name);
      void (*fn) (const float *, float *, int64_t) = (void (*) (const float *, float *, int64_t))
        pl_cpu_module_symbol (m, sym);
      g_assert_nonnull (fn);
      fn ((const float *) xs->data, y, n);
      double worst = 0;
      int64_t at = 0;
      for (int64_t i = 0; i < n; i++)
        {
          double e = ulps_f32 (y[i], fns[f].ref ((double) g_array_index (xs, float, i)));
          if (e > worst)
            worst = e, at = i;
        }
      float x = g_array_index (xs, float, at);
      g_test_message ("%s: max error %.3f ulp at %a", fns[f].name, worst, x);
      if (worst > fns[f].max_ulps)
        g_error ("%s (%a) = %a, libm %a: %g ulp > %g", fns[f].name, x, y[at], fns[f].ref (x), worst, fns[f].max_ulps);
    }
  g_free (y);

  /* f64 through libmvec: within 4 ulp of libm (the sweep's floats as doubles) */
  double *xd = g_new (double, n), *yd = g_new (double, n);
  for (int64_t i = 0; i < n; i++)
    xd[i] = g_array_index (xs, float, i);
  for (size_t f = 0; f < G_N_ELEMENTS (fns64); f++)
    {
      g_autofree char *sym = g_strdup_printf ("t64_%s", fns64[f].name);
      void (*fn) (const double *, double *, int64_t) = (void (*) (const double *, double *, int64_t))
        pl_cpu_module_symbol (m, sym);
      g_assert_nonnull (fn);
      fn (xd, yd, n);
      for (int64_t i = 0; i < n; i++)
        {
          double want = fns64[f].ref (xd[i]);
          bool ok = isnan (want) ? isnan (yd[i]) : isinf (want) ? yd[i] == want
                    : fabs (yd[i] - want) <= 4 * (nextafter (fabs (want), INFINITY) - fabs (want));
          if (!ok)
            g_error ("%s (%a) = %a, libm %a", fns64[f].name, xd[i], yd[i], want);
        }
    }
  g_free (xd);
  g_free (yd);
  g_array_free (xs, TRUE);
  pl_cpu_module_free (m);
}

/* Rows stored through a staging row and non-temporal stores (outputs of
 * 64 MiB and more, rows of 4 KiB and more): pl_stream at every alignment
 * and length, then a softmax whose output is that large against the
 * interpreter. */
static void
test_streaming_stores (void)
{
  g_autofree char *prelude = pl_codegen_c_prelude ();
  /* builtins, not <immintrin.h>: parsing that header doubled every module's compile */
  g_assert_null (strstr (prelude, "immintrin"));
  g_autofree char *src = g_strconcat (prelude, "void t_stream (void *d, const void *s, size_t n) { pl_stream (d, s, n); "
                                      "PL_SFENCE (); }\n", NULL);
  g_autoptr (GError) error = NULL;
  PlCpuModule *m = pl_cpu_module_compile (src, cache_dir, NULL, &error);
  g_assert_no_error (error);
  void (*stream) (void *, const void *, size_t) = (void (*) (void *, const void *, size_t))
    pl_cpu_module_symbol (m, "t_stream");
  g_assert_nonnull (stream);
  enum { MAX_N = 4500, SPAN = MAX_N + 128 };
  guint8 *from = g_malloc (MAX_N + 1), *to = g_aligned_alloc (1, SPAN, 64);
  for (int i = 0; i <= MAX_N; i++)
    from[i] = (guint8) (i * 7 + 1);
  /* short rows (memcpy when off a line), long ones (masked ends, streamed lines) */
  for (int off = 0; off < 64; off += 3)
    for (int n = 0; n <= MAX_N; n += n < 300 ? 7 : n < 4000 ? 1000 : 13)
      {
        memset (to, 0xee, SPAN);
        guint8 *d = to + 64 + off;
        stream (d, from + 1, (size_t) n);
        g_assert_cmpmem (d, n, from + 1, n);
        g_assert_cmpint (d[-1], ==, 0xee);
        g_assert_cmpint (d[n], ==, 0xee);
      }
  g_free (from);
  g_aligned_free (to);
  pl_cpu_module_free (m);

  g_autoptr (PlGraph) g = pl_test_parse (
    "graph big opset 17 {\n  input x: f32[16384, 1024]\n"
    "  m = ReduceMax(x) {axes=[-1], keepdims=1}\n  d = Sub(x, m)\n  e = Exp(d)\n"
    "  s = ReduceSum(e) {axes=[-1], keepdims=1}\n  y = Div(e, s)\n  output y\n}\n");
  PlNode *f = fuse_whole (g);
  g_autoptr (PlRunReport) r = check_graph (g, 21, 1e-5, 1e-6);
  g_assert_cmpint (r->n_kernels, ==, 1);
  PlExecutable *e = compile (g);
  /* the last pass prefetches in chunks, and each chunk leaves as soon as it is computed */
  g_assert_nonnull (strstr (pl_executable_source (e, f->id),
                            "pl_stream (out0 + (1024 * c0 + 0) + cb, st0, sizeof *st0 * (size_t) (ce - cb));"));
  pl_executable_free (e);

  /* rows of whole cache lines stream too, however short: 1 KiB rows, the whole row at once */
  g_autoptr (PlGraph) g2 = pl_test_parse (
    "graph short_rows opset 17 {\n  input x: f32[65536, 256]\n"
    "  m = ReduceMax(x) {axes=[-1], keepdims=1}\n  d = Sub(x, m)\n  e = Exp(d)\n"
    "  s = ReduceSum(e) {axes=[-1], keepdims=1}\n  y = Div(e, s)\n  output y\n}\n");
  f = fuse_whole (g2);
  g_autoptr (PlRunReport) r2 = check_graph (g2, 23, 1e-5, 1e-6);
  g_assert_cmpint (r2->n_kernels, ==, 1);
  e = compile (g2);
  g_assert_nonnull (strstr (pl_executable_source (e, f->id),
                            "pl_stream (out0 + (256 * c0 + 0), st0, sizeof *st0 * 256);"));
  pl_executable_free (e);
}

/* A normalization over rows of 3 x 700 whose scale w depends on the first
 * reduced dim, which keeps the two reduced dims apart in the kernel's loops. */
static PlGraph *
parse_two_reduced_dims (int rows)
{
  g_autofree char *text = g_strdup_printf (
    "graph two_reduced opset 17 {\n  input x: f32[%d, 3, 700]\n  const w: f32[3, 1] = random(seed=2, lo=0.5, hi=1.5)\n"
    "  m = ReduceMean(x) {axes=[1, 2], keepdims=1}\n  d = Sub(x, m)\n  d2 = Mul(d, d)\n"
    "  v = ReduceMean(d2) {axes=[1, 2], keepdims=1}\n  n = Div(d, v)\n  y = Mul(n, w)\n  output y\n}\n", rows);
  return pl_test_parse (text);
}

/* Split reductions: a pass's float sums, maxima and minima over a row run as
 * four slices side by side with their own accumulators, then combined; the
 * slices are whole vectors, not 2 KiB apart, and the elements after the
 * fourth slice get their own loop. Rows of 1500 (slices of 368, 28 left),
 * 4096 (1008 rather than 1024, 64 left) and 300 (64, 44 left), f32 and f64;
 * with two reduced dims, the inner one splits inside a loop over the outer. */
static void
test_split_reductions (void)
{
  static const struct { int64_t len; const char *dtype; int64_t slice; } cases[] = {
    { 1500, "f32", 368 }, { 4096, "f32", 1008 }, { 300, "f64", 64 }, { 2048, "f64", 496 },
  };
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      g_autofree char *text = g_strdup_printf (
        "graph split opset 17 {\n  input x: %s[33, %" G_GINT64_FORMAT "]\n"
        "  s = ReduceSum(x) {axes=[-1], keepdims=1}\n  mx = ReduceMax(x) {axes=[-1], keepdims=1}\n"
        "  mn = ReduceMin(x) {axes=[-1], keepdims=1}\n  r = Sub(mx, mn)\n  d = Sub(x, mn)\n"
        "  n = Div(d, r)\n  y = Mul(n, s)\n  output y\n}\n", cases[c].dtype, cases[c].len);
      g_autoptr (PlGraph) g = pl_test_parse (text);
      PlNode *f = fuse_whole (g);
      g_autoptr (PlRunReport) r = check_graph (g, 24 + c, 1e-4, 1e-4);   /* sums of ~1500 in another order */
      g_assert_cmpint (r->n_kernels, ==, 1);
      PlExecutable *e = compile (g);
      const char *src = pl_executable_source (e, f->id);
      g_autofree char *loop = g_strdup_printf ("for (int64_t cq = 0; cq < %" G_GINT64_FORMAT "; cq++)", cases[c].slice);
      g_autofree char *last = g_strdup_printf ("const int64_t c1 = cq + %" G_GINT64_FORMAT ";", 3 * cases[c].slice);
      g_autofree char *rest = g_strdup_printf ("for (int64_t c1 = %" G_GINT64_FORMAT "; c1 < %" G_GINT64_FORMAT
                                               "; c1++)", 4 * cases[c].slice, cases[c].len);
      g_assert_nonnull (strstr (src, loop));
      g_assert_nonnull (strstr (src, last));
      g_assert_nonnull (strstr (src, rest));
      g_assert_nonnull (strstr (src, "reduction(max:acc1,acc1_1,acc1_2,acc1_3)"));
      g_assert_nonnull (strstr (src, "acc1_2 = acc1_3 > acc1_2 ? acc1_3 : acc1_2;"));
      pl_executable_free (e);
    }

  g_autoptr (PlGraph) g = parse_two_reduced_dims (9);
  PlNode *f = fuse_whole (g);
  g_autoptr (PlRunReport) r = check_graph (g, 30, 1e-4, 1e-4);
  g_assert_cmpint (r->n_kernels, ==, 1);
  PlExecutable *e = compile (g);
  const char *src = pl_executable_source (e, f->id);
  const char *outer = strstr (src, "for (int64_t c1 = 0; c1 < 3; c1++)");   /* w's index keeps the dims apart */
  if (!outer)
    g_printerr ("%s\n", src);
  g_assert_nonnull (outer);
  g_assert_nonnull (strstr (outer, "for (int64_t cq = 0; cq < 160; cq++)"));
  g_assert_nonnull (strstr (outer, "for (int64_t c2 = 640; c2 < 700; c2++)"));
  pl_executable_free (e);
}

/* Long rows: a later pass runs in chunks that prefetch the next row's
 * lines; a row length that is no multiple of the chunk ends in a short one. */
static void
test_prefetch_next_row (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (
    "graph pf opset 17 {\n  input x: f32[64, 1500]\n  const w: f32[1500] = random(seed=1, lo=0.5, hi=1.5)\n"
    "  m = ReduceMean(x) {axes=[-1], keepdims=1}\n  d = Sub(x, m)\n  d2 = Mul(d, d)\n"
    "  v = ReduceMean(d2) {axes=[-1], keepdims=1}\n  s = Sqrt(v)\n  n = Div(d, s)\n  y = Mul(n, w)\n  output y\n}\n");
  PlNode *f = fuse_whole (g);
  g_autoptr (PlRunReport) r = check_graph (g, 22, 1e-5, 1e-6);
  g_assert_cmpint (r->n_kernels, ==, 1);
  PlExecutable *e = compile (g);
  const char *src = pl_executable_source (e, f->id);
  g_assert_nonnull (strstr (src, "__builtin_prefetch (&in0[(1500 * c0 + pf)] + 1500);"));
  g_assert_nonnull (strstr (src, "const int64_t ce = cb + 256 < 1500 ? cb + 256 : 1500;"));
  g_assert_nonnull (strstr (src, "* (1.0f / v"));   /* the divide by the row's deviation */
  pl_executable_free (e);

  /* two reduced dims (w's index keeps them apart) laid out as one row: the
   * last pass prefetches the next row's chunk of each inner row */
  g_autoptr (PlGraph) g2 = parse_two_reduced_dims (16);
  f = fuse_whole (g2);
  g_autoptr (PlRunReport) r2 = check_graph (g2, 31, 1e-4, 1e-4);
  g_assert_cmpint (r2->n_kernels, ==, 1);
  e = compile (g2);
  src = pl_executable_source (e, f->id);
  const char *outer = strstr (src, "for (int64_t c1 = 0; c1 < 3; c1++)");
  g_assert_nonnull (outer);
  g_assert_nonnull (strstr (outer, "__builtin_prefetch (&in0[(2100 * c0 + 700 * c1 + pf)] + 2100);"));
  pl_executable_free (e);
}

/* A single row or column of the result runs as BLAS gemv: every
 * transpose of Gemm with M = 1 and N = 1, MatMul by a vector on either
 * side, batched, and f64. */
static void
test_gemv (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (
    "graph gv opset 17 {\n"
    "  input r: f32[1, 9]\n  input rt: f32[9, 1]\n  input b: f32[9, 7]\n  input bt: f32[7, 9]\n"
    "  input v: f32[9]\n  input bb: f32[3, 9, 7]\n  input d: f64[5, 6]\n  input dv: f64[6, 1]\n"
    "  g0 = Gemm(r, b) {alpha=0.5}\n  g1 = Gemm(rt, b) {transA=1}\n  g2 = Gemm(r, bt) {transB=1}\n"
    "  g3 = Gemm(rt, bt) {transA=1, transB=1, alpha=2.0}\n"
    "  c0 = Gemm(bt, rt)\n  c1 = Gemm(b, rt) {transA=1}\n  c2 = Gemm(bt, r) {transB=1, alpha=-1.0}\n"
    "  c3 = Gemm(b, r) {transA=1, transB=1}\n"
    "  m0 = MatMul(v, b)\n  m1 = MatMul(bt, v)\n  m2 = MatMul(v, bb)\n  m3 = MatMul(d, dv)\n"
    "  output g0, g1, g2, g3, c0, c1, c2, c3, m0, m1, m2, m3\n}\n");
  g_autoptr (PlRunReport) r = check_graph (g, 31, 1e-5, 1e-6);
  g_assert_cmpint (count_kind (r, "fallback"), ==, 0);
  g_assert_nonnull (strstr (kernel_named (r, "g3")->note, "gemm 1x7x9"));
  g_assert_nonnull (strstr (kernel_named (r, "c0")->note, "gemm 7x1x9"));
}

/* A GEMM of 2 to 32 rows runs the generated kernel (gemm-small.c), not
 * BLAS: B transposed or not, row blocks of 8 and the rest, column blocks
 * and their tails, k past the last whole vector, alpha, rows gathered from
 * a batch, a batch of weights; against the reference. */
static void
test_gemm_small (void)
{
  static const char text[] =
    "graph gs opset 17 {\n"
    "  input a8: f32[8, 70]\n  input bt: f32[37, 70]\n  input a13: f32[13, 40]\n  input b: f32[40, 53]\n"
    "  input x3: f32[2, 3, 24]\n  input xb: f32[3, 5, 32]\n  input wb: f32[3, 32, 20]\n"
    "  input a16: f32[16, 16]\n  input b16: f32[16, 16]\n  input a29: f32[29, 33]\n  input b29: f32[33, 64]\n"
    "  const w: f32[24, 100] = random(seed=5, lo=-1, hi=1)\n"
    "  s0 = Gemm(a8, bt) {transB=1}\n  s1 = Gemm(a13, b) {alpha=0.5}\n  s2 = MatMul(x3, w)\n"
    "  s3 = MatMul(xb, wb)\n  s4 = Gemm(a16, b16) {transB=1, alpha=-1.0}\n  s5 = Gemm(a29, b29)\n"
    "  output s0, s1, s2, s3, s4, s5\n}\n";
  g_autoptr (PlGraph) g = pl_test_parse (text);
  g_autoptr (PlRunReport) r = check_graph (g, 37, 1e-5, 1e-5);
  g_assert_cmpint (count_kind (r, "fallback"), ==, 0);
  g_assert_nonnull (strstr (kernel_named (r, "s2")->note, "gemm 6x100x24"));
  const char *const names[] = { "s0", "s1", "s2", "s3", "s4", "s5" };
  for (size_t i = 0; i < G_N_ELEMENTS (names); i++)
    {
      g_autofree char *src = kernel_source (g, names[i]);
      g_assert_nonnull (strstr (src, "#define G_NAME k_smallm"));
      /* products this small run on one thread: a parallel region cost more */
      g_assert_nonnull (strstr (src, "#define G_PAR 0"));
    }
}

/* A batched MatMul by a shared weight is one GEMM of batch x M rows; a
 * weight per batch, or A broadcast over the batch, stays batched. */
static void
test_gemm_batch_rows (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (
    "graph br opset 17 {\n"
    "  input x: f32[6, 1, 8]\n  input z: f32[2, 3, 4, 8]\n  input a: f32[4, 8]\n  input bs: f32[3, 8, 5]\n"
    "  const w: f32[8, 5] = random(seed=3, lo=-1, hi=1)\n"
    "  p = MatMul(x, w)\n  q = MatMul(z, w)\n  s = MatMul(a, bs)\n"
    "  output p, q, s\n}\n");
  g_autoptr (PlRunReport) r = check_graph (g, 29, 1e-5, 1e-6);
  g_assert_nonnull (strstr (kernel_named (r, "p")->note, "gemm 6x5x8"));
  g_assert_nonnull (strstr (kernel_named (r, "q")->note, "gemm 24x5x8"));
  g_assert_nonnull (strstr (kernel_named (r, "s")->note, "gemm 3 x 4x5x8"));
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
  static const char *const samples[] = { "layer_norm.graph", "softmax.graph", "group_norm.graph",
                                         "ghost_batch_norm.graph", "gelu_mlp.graph", "resnet_block.graph",
                                         "transformer_block.graph" };
  for (size_t i = 0; i < G_N_ELEMENTS (samples); i++)
    {
      g_autofree char *path = g_strdup_printf ("/Passlab/KernelsCpu/sample/%s", samples[i]);
      g_test_add_data_func (path, samples[i], test_samples);
    }
  g_test_add_func ("/Passlab/KernelsCpu/random", test_random);
  g_test_add_func ("/Passlab/KernelsCpu/index-functions", test_index_functions);
  g_test_add_func ("/Passlab/KernelsCpu/layer-norm-one-kernel", test_layer_norm_one_kernel);
  g_test_add_func ("/Passlab/KernelsCpu/softmax-one-kernel", test_softmax_one_kernel);
  g_test_add_func ("/Passlab/KernelsCpu/group-norm-one-kernel", test_group_norm_one_kernel);
  g_test_add_func ("/Passlab/KernelsCpu/reductions", test_reductions);
  g_test_add_func ("/Passlab/KernelsCpu/long-rows", test_long_rows);
  g_test_add_func ("/Passlab/KernelsCpu/elementwise-dtypes", test_elementwise_dtypes);
  g_test_add_func ("/Passlab/KernelsCpu/gemm", test_gemm);
  g_test_add_func ("/Passlab/KernelsCpu/gemm-batch-rows", test_gemm_batch_rows);
  g_test_add_func ("/Passlab/KernelsCpu/gemv", test_gemv);
  g_test_add_func ("/Passlab/KernelsCpu/conv", test_conv);
  g_test_add_func ("/Passlab/KernelsCpu/conv-transpose", test_conv_transpose);
  g_test_add_func ("/Passlab/KernelsCpu/fallback", test_fallback);
  g_test_add_func ("/Passlab/KernelsCpu/split-fusion", test_split_fusion);
  g_test_add_func ("/Passlab/KernelsCpu/slice-split", test_slice_split);
  g_test_add_func ("/Passlab/KernelsCpu/concat", test_concat);
  g_test_add_func ("/Passlab/KernelsCpu/index-clamp", test_index_clamp);
  g_test_add_func ("/Passlab/KernelsCpu/pad-trilu", test_pad_trilu);
  g_test_add_func ("/Passlab/KernelsCpu/pad-modes", test_pad_modes);
  g_test_add_func ("/Passlab/KernelsCpu/gather-out-of-range", test_gather_out_of_range);
  g_test_add_func ("/Passlab/KernelsCpu/cumsum", test_cumsum);
  g_test_add_func ("/Passlab/KernelsCpu/scatter", test_scatter);
  g_test_add_func ("/Passlab/KernelsCpu/topk", test_topk);
  g_test_add_func ("/Passlab/KernelsCpu/gather-nd", test_gather_nd);
  g_test_add_func ("/Passlab/KernelsCpu/div-mod", test_div_mod);
  g_test_add_func ("/Passlab/KernelsCpu/space-depth-tile", test_space_depth_tile);
  g_test_add_func ("/Passlab/KernelsCpu/onehot", test_onehot);
  g_test_add_func ("/Passlab/KernelsCpu/split-parts", test_split_parts);
  g_test_add_func ("/Passlab/KernelsCpu/index-reflect", test_index_reflect);
  g_test_add_func ("/Passlab/KernelsCpu/resize-nearest", test_resize_nearest);
  g_test_add_func ("/Passlab/KernelsCpu/resize-linear", test_resize_linear);
  g_test_add_func ("/Passlab/KernelsCpu/resize-cubic", test_resize_cubic);
  g_test_add_func ("/Passlab/KernelsCpu/grid-sample", test_grid_sample);
  g_test_add_func ("/Passlab/KernelsCpu/roi-align", test_roi_align);
  g_test_add_func ("/Passlab/KernelsCpu/reverse-sequence", test_reverse_sequence);
  g_test_add_func ("/Passlab/KernelsCpu/edge-peeling", test_edge_peeling);
  g_test_add_func ("/Passlab/KernelsCpu/gemm-small", test_gemm_small);
  g_test_add_func ("/Passlab/KernelsCpu/gather", test_gather);
  g_test_add_func ("/Passlab/KernelsCpu/cache", test_cache);
  g_test_add_func ("/Passlab/KernelsCpu/memory-and-trace", test_memory_and_trace);
  g_test_add_func ("/Passlab/KernelsCpu/in-place/chain", test_in_place_chain);
  g_test_add_func ("/Passlab/KernelsCpu/in-place/keeps-outputs", test_in_place_keeps_outputs);
  g_test_add_func ("/Passlab/KernelsCpu/in-place/fusion", test_in_place_fusion);
  g_test_add_func ("/Passlab/KernelsCpu/bad-input", test_bad_input);
  g_test_add_func ("/Passlab/KernelsCpu/vector-math", test_vector_math);
  g_test_add_func ("/Passlab/KernelsCpu/streaming-stores", test_streaming_stores);
  g_test_add_func ("/Passlab/KernelsCpu/prefetch-next-row", test_prefetch_next_row);
  g_test_add_func ("/Passlab/KernelsCpu/split-reductions", test_split_reductions);
  g_test_add_data_func ("/Passlab/KernelsCpu/swap-budget/transformer_train", "transformer_train.graph", test_swap_budget);
  g_test_add_data_func ("/Passlab/KernelsCpu/swap-budget/resnet_train", "resnet_train.graph", test_swap_budget);
  int status = g_test_run ();
  g_free (cache_dir);
  return status;
}

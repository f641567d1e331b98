/* test-kernels-cuda.c — the CUDA backend. Without a GPU: the generated CUDA
 * C of every sample graph (unfused, loop-fused and stitched), of random
 * graphs and of hand-made kernels compiles with NVRTC (skipped when libnvrtc
 * cannot be loaded), the thread mapping follows the plan (a block per long
 * row, warps for short rows, the stitch pass's attributes when present), and
 * an output stored over an input drops __restrict__ on both. With a GPU
 * (pl_backend_available), or on the CUDA emulator (kernels-cuda-emulated in
 * meson.build runs this program with PASSLAB_CUDA=emulator), the same graphs
 * run and agree with the reference interpreter. */
#include "builtin-passes.h"
#include "codegen.h"
#include "fusion.h"
#include "kernel-plan.h"
#include "pass-manager.h"
#include "runtime.h"
#include "text-format.h"
#include "test-util.h"

#include <string.h>

static bool have_nvrtc;

/* true (and the test marked skipped) where NVRTC cannot be loaded */
static bool
skip_without_nvrtc (void)
{
  if (!have_nvrtc)
    g_test_skip ("libnvrtc cannot be loaded");
  return !have_nvrtc;
}
static bool have_gpu;

/* NVRTC-compiles g's kernels; returns the CUDA source. */
static char *
compile_check (const PlGraph *g, int min_kernels)
{
  g_autoptr (GError) error = NULL;
  char *source = NULL;
  int n = 0;
  bool ok = pl_cuda_compile_check (g, "compute_90", &source, &n, &error);
  if (!ok)
    g_printerr ("%s\n", source ? source : "");
  g_assert_no_error (error);
  g_assert_true (ok);
  g_assert_cmpint (n, >=, min_kernels);
  return source;
}

/* With a GPU: runs g on cuda and compares with the interpreter. */
static void
run_on_gpu (const PlGraph *g)
{
  if (!have_gpu)
    return;
  g_autoptr (GError) error = NULL;
  PlTensor **in = pl_random_inputs (g, 5, 1, &error);
  g_assert_no_error (error);
  PlTensor **want = pl_interp_run (g, in, NULL, &error);
  g_assert_no_error (error);
  PlCompileOptions o;
  pl_compile_options_init (&o, PL_BACKEND_CUDA);
  PlExecutable *e = pl_executable_new (g, &o, &error);
  g_assert_no_error (error);
  g_autoptr (PlRunReport) r = NULL;
  PlTensor **got = pl_executable_run (e, in, 2, &r, &error);
  g_assert_no_error (error);
  for (guint i = 0; i < g->outputs->len; i++)
    pl_test_assert_close (got[i], want[i], 1e-4, 1e-5);
  pl_interp_free_outputs (got, (int) g->outputs->len);
  pl_interp_free_outputs (want, (int) g->outputs->len);
  pl_interp_free_outputs (in, (int) g->inputs->len);
  pl_executable_free (e);
}

static void
test_samples (gconstpointer data)
{
  if (skip_without_nvrtc ())
    return;
  g_autoptr (PlGraph) g = pl_test_load_sample (data);
  g_autofree char *a = compile_check (g, 1);
  run_on_gpu (g);
  g_autoptr (PlGraph) f = pl_test_passes (g, "simplify,decompose,reshape-sink,fuse-library,fuse-loops");
  g_autofree char *b = compile_check (f, 1);
  run_on_gpu (f);
  if (pl_pass_find ("stitch"))
    {
      g_autoptr (PlGraph) s = pl_test_passes (g, "simplify,decompose,reshape-sink,fuse-library,stitch");
      g_autofree char *c = compile_check (s, 1);
      run_on_gpu (s);
      /* reshapes left in: one kernel over a group norm's group rows, its
       * loop split where gamma's channel is read (kernel-plan-loop.c) */
      g_autoptr (PlGraph) t = pl_test_passes (g, "simplify,decompose,fuse-library,stitch");
      g_autofree char *d = compile_check (t, 1);
      run_on_gpu (t);
    }
}

/* Random graphs (the fuzzer's generator), unfused, loop-fused and stitched. */
static void
test_random (void)
{
  if (!have_gpu && skip_without_nvrtc ())
    return;
  for (guint32 seed = 1; seed <= 6; seed++)
    {
      g_autoptr (PlGraph) g = pl_test_random_graph (seed, 16);
      const char *pipelines[] = { NULL, "simplify,decompose,reshape-sink,fuse-library,fuse-loops",
                                  "simplify,decompose,reshape-sink,fuse-library,stitch" };
      for (size_t i = 0; i < G_N_ELEMENTS (pipelines); i++)
        {
          g_autoptr (PlGraph) f = pipelines[i] ? pl_test_passes (g, pipelines[i]) : pl_graph_copy (g);
          if (have_nvrtc)
            g_free (compile_check (f, 1));
          run_on_gpu (f);
        }
    }
}

/* The kernel of one fusion node, generated for CUDA. */
static char *
cuda_of (const PlNode *node, PlCudaLaunch *launch)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (PlKernelPlan) p = pl_kernel_plan_for_node ("k", node, &error);
  g_assert_no_error (error);
  GString *s = g_string_new (NULL);
  g_assert_cmpint (pl_codegen_cuda_kernel (s, p, 132, launch), >=, 1);
  return g_string_free (s, FALSE);
}

static PlNode *
fuse_all (PlGraph *g, const char *kind)
{
  int n;
  g_autofree PlNode **order = pl_graph_topo_order (g, &n, NULL);
  g_autoptr (GError) error = NULL;
  PlNode *f = pl_fusion_create (g, order, n, kind, &error);
  g_assert_no_error (error);
  return f;
}

/* Layer norm rows of 256: a warp per row, several rows per block, shuffles
 * only; 4096-long rows: a block per row with a shared-memory second level. */
static void
test_mapping (void)
{
  g_autoptr (PlGraph) g = pl_test_load_sample ("layer_norm.graph");
  PlNode *f = fuse_all (g, PL_FUSION_KIND_INPUT);
  PlCudaLaunch l[2];
  g_autofree char *src = cuda_of (f, l);
  g_assert_cmpint (l[0].block, ==, 256);
  g_assert_cmpint (l[0].grid, >=, 1);
  g_assert_nonnull (strstr (src, "pl_shfl"));
  g_assert_null (strstr (src, "__syncthreads"));
  g_assert_cmpint (l[0].shared_bytes, ==, 8 * 256 * 8);   /* d materialized: 8 rows x 256 */
  pl_cuda_launch_clear (&l[0]);

  g_autoptr (PlGraph) big = pl_test_parse (
    "graph sm opset 17 {\n  input x: f32[64, 4096]\n  m = ReduceMax(x) {axes=[1]}\n  s = Sub(x, m)\n"
    "  e = Exp(s)\n  t = ReduceSum(e) {axes=[1]}\n  y = Div(e, t)\n  output y\n}\n");
  PlNode *fb = fuse_all (big, PL_FUSION_KIND_INPUT);
  g_autofree char *src2 = cuda_of (fb, l);
  g_assert_cmpint (l[0].block, ==, 512);
  g_assert_nonnull (strstr (src2, "__syncthreads"));
  g_assert_cmpint (l[0].shared_bytes, ==, 4096 * 8);
  pl_cuda_launch_clear (&l[0]);

  /* the stitch pass's mapping wins */
  pl_node_set_attr_int (fb, "block_size", 128);
  pl_node_set_attr_int (fb, "rows_per_block", 1);
  g_autofree char *src3 = cuda_of (fb, l);
  g_assert_cmpint (l[0].block, ==, 128);
  pl_cuda_launch_clear (&l[0]);
  /* 4 rows of 64 threads in a block of 256: a row's two warps combine */
  pl_node_set_attr_int (fb, "block_size", 256);
  pl_node_set_attr_int (fb, "rows_per_block", 4);
  g_autofree char *src4 = cuda_of (fb, l);
  g_assert_nonnull (strstr (src4, "for (int w = sub * 2; w < (sub + 1) * 2; w++)"));
  /* 4 rows' scratch (128 KiB) exceeds shared memory: global scratch, one slot per resident row */
  g_assert_cmpint (l[0].shared_bytes, ==, 0);
  g_assert_cmpint (l[0].scratch_bytes, ==, l[0].grid * 4 * 4096 * 8);
  g_assert_nonnull (strstr (src4, "(scratch + (((int64_t) blockIdx.x * 4 + sub)"));
  pl_cuda_launch_clear (&l[0]);
  if (have_nvrtc)
    {
      g_autoptr (PlGraph) copy = pl_graph_copy (big);
      g_autofree char *c = compile_check (copy, 1);
    }

  if (have_nvrtc)
    {
      g_autofree char *a = compile_check (g, 1);
      g_autofree char *b = compile_check (big, 1);
      run_on_gpu (big);
    }
}

/* One reduction over rows longer than a warp, more rows than blocks: each
 * block loops over rows and reuses its shared partial sums, so the barrier
 * at the end of a row matters (without it the emulator's reversed odd
 * blocks read the next row's partials: errors of 15). */
static void
test_row_reuse (void)
{
  if (!have_gpu && skip_without_nvrtc ())
    return;
  g_autoptr (PlGraph) g = pl_test_parse (
    "graph rows opset 17 {\n  input x: f32[512, 1024]\n  e = Exp(x)\n  s = ReduceSum(e) {axes=[1]}\n"
    "  y = Div(e, s)\n  output y\n}\n");
  g_autoptr (PlGraph) f = pl_test_passes (g, "simplify,decompose,reshape-sink,fuse-library,stitch");
  g_assert_cmpuint (f->nodes->len, ==, 1);
  if (have_nvrtc)
    g_free (compile_check (f, 1));
  run_on_gpu (f);
}

/* Few long rows: the stitch pass splits each over blocks, and the kernel
 * combines the blocks' partial reductions after a grid barrier (a
 * cooperative launch). Layer norm (two reductions), ArgMax (value, index),
 * and one reduction over more rows than the grid takes at once (the
 * partials' two sets alternate by iteration). */
static void
test_split_rows (void)
{
  if (!have_gpu && skip_without_nvrtc ())
    return;
  g_autoptr (PlGraph) g = pl_test_parse (
    "graph split opset 17 {\n  input x: f32[3, 20000]\n  input z: f32[9, 6000]\n"
    "  const w: f32[20000] = random(seed=1, lo=0.5, hi=1.5)\n  const two: f32[] = 2.0\n  const eps: f32[] = 1e-05\n"
    "  mean = ReduceMean(x) {axes=[-1], keepdims=1}\n  d = Sub(x, mean)\n  d2 = Pow(d, two)\n"
    "  var = ReduceMean(d2) {axes=[-1], keepdims=1}\n  ve = Add(var, eps)\n  sd = Sqrt(ve)\n  n = Div(d, sd)\n"
    "  y = Mul(n, w)\n  a = ArgMax(x) {axis=1, keepdims=1}\n"
    "  e = Exp(z)\n  s = ReduceSum(e) {axes=[1]}\n  q = Div(e, s)\n  output y, a, q\n}\n");
  g_autoptr (PlGraph) f = pl_test_passes (g, "simplify,decompose,fuse-library,stitch");
  int split = 0;
  for (guint i = 0; i < f->nodes->len; i++)
    split += pl_node_attr_int (f->nodes->pdata[i], "blocks_per_row", 0) > 1;
  g_assert_cmpint (split, ==, 3);
  PlCudaLaunch l[2];
  for (guint i = 0; i < f->nodes->len; i++)
    {
      g_autofree char *src = cuda_of (f->nodes->pdata[i], l);
      g_assert_nonnull (strstr (src, "pl_grid_sync (pl_bar);"));
      g_assert_true (l[0].cooperative);
      g_assert_cmpint (l[0].grid, <=, 132);   /* one wave: a block a multiprocessor */
      g_assert_cmpint (l[0].scratch_bytes, >=, 16);
      pl_cuda_launch_clear (&l[0]);
    }
  if (have_nvrtc)
    g_free (compile_check (f, 3));
  run_on_gpu (f);
}

/* Every dtype and reduction kind the generator handles compiles. */
static void
test_dtypes_and_reductions (void)
{
  if (skip_without_nvrtc ())
    return;
  g_autoptr (PlGraph) g = pl_test_parse (
    "graph d opset 17 {\n"
    "  input x: f32[6, 10, 3]\n  input y: f64[6, 10]\n"
    "  const two: f32[] = 2.0\n  const k: i64[] = 3\n"
    "  xi = Cast(x) {to=7}\n  s = Add(xi, k)\n  a = ArgMax(x) {axis=1, keepdims=0}\n"
    "  b = ArgMin(x) {axis=1, select_last_index=1}\n  p = ReduceProd(s) {axes=[1]}\n  m = ReduceMin(s) {axes=[0, 2]}\n"
    "  l = ReduceLogSumExp(y) {axes=[1]}\n  h = Hardmax(x) {axis=1}\n  c = Greater(x, two)\n  n = Not(c)\n"
    "  w = Where(n, x, two)\n  t = Tanh(w)\n  e = Erf(y)\n  all = ReduceSum(x) {keepdims=0}\n"
    "  output a, b, p, m, l, h, t, e, all\n}\n");
  g_autofree char *src = compile_check (g, 9);
  run_on_gpu (g);
  g_autoptr (PlGraph) f = pl_test_passes (g, "fuse-loops");
  g_autofree char *src2 = compile_check (f, 1);
  run_on_gpu (f);
}

/* Compiles (and with a GPU runs) the graph as it is and after fuse-loops. */
static void
check_unfused_and_fused (const char *text, int n_unfused, int n_fused)
{
  if (skip_without_nvrtc ())
    return;
  g_autoptr (PlGraph) g = pl_test_parse (text);
  g_autofree char *src = compile_check (g, n_unfused);
  run_on_gpu (g);
  g_autoptr (PlGraph) f = pl_test_passes (g, "fuse-loops");
  g_autofree char *src2 = compile_check (f, n_fused);
  run_on_gpu (f);
}

/* Slice (strided, positive steps) and Split as index functions, alone and
 * fused with their neighbours: NVRTC compiles them, and the device (or the
 * emulator) agrees with the reference. */
static void
test_slice_split (void)
{
  check_unfused_and_fused (PL_TEST_SLICE_SPLIT_GRAPH, 5, 1);
  check_unfused_and_fused (PL_TEST_SLICE_NEG_GRAPH, 4, 2);   /* negative steps */
}

/* Concat as a select among its inputs, alone and fused. */
static void
test_concat (void)
{
  check_unfused_and_fused (PL_TEST_CONCAT_GRAPH, 6, 3);
}

/* Pad (constant mode) and Trilu, alone and fused. */
static void
test_pad_trilu (void)
{
  check_unfused_and_fused (PL_TEST_PAD_TRILU_GRAPH, 6, 3);
}

/* Pad in edge, reflect and wrap modes, alone and fused. */
static void
test_pad_modes (void)
{
  check_unfused_and_fused (PL_TEST_PAD_MODES_GRAPH, 10, 8);
}

/* DepthToSpace, SpaceToDepth, Tile and GatherElements, alone and fused. */
static void
test_space_depth_tile (void)
{
  check_unfused_and_fused (PL_TEST_SPACE_DEPTH_GRAPH, 7, 4);
}

/* A Split into parts of different sizes: a kernel per part. */
static void
test_split_parts (void)
{
  check_unfused_and_fused (PL_TEST_SPLIT_PARTS_GRAPH, 5, 5);
}

/* OneHot, alone and fused. */
static void
test_onehot (void)
{
  check_unfused_and_fused (PL_TEST_ONEHOT_GRAPH, 4, 2);
}

/* CumSum, a thread per line (scan.c). */
static void
test_cumsum (void)
{
  check_unfused_and_fused (PL_TEST_CUMSUM_GRAPH, 7, 7);
}

/* ScatterND / ScatterElements: a copy, then a thread per line (scatter.c). */
static void
test_scatter (void)
{
  check_unfused_and_fused (PL_TEST_SCATTER_GRAPH, 6, 6);
}

/* TopK, a thread per line (topk.c). */
static void
test_topk (void)
{
  check_unfused_and_fused (PL_TEST_TOPK_GRAPH, 6, 6);
}

/* GatherND, alone and fused. */
static void
test_gather_nd (void)
{
  check_unfused_and_fused (PL_TEST_GATHERND_GRAPH, 5, 3);
}

/* Integer Div and Mod with their zero-divisor checks, float Mod. */
static void
test_div_mod (void)
{
  check_unfused_and_fused (PL_TEST_DIVMOD_GRAPH, 8, 1);
}

/* Nearest Resize by integer factors, alone and fused. */
static void
test_resize_nearest (void)
{
  check_unfused_and_fused (PL_TEST_RESIZE_GRAPH, 4, 2);
}

/* Linear Resize (weighted clamped taps), alone and fused. */
static void
test_resize_linear (void)
{
  check_unfused_and_fused (PL_TEST_RESIZE_LINEAR_GRAPH, 6, 4);
}

/* Cubic Resize (4 weighted clamped taps per axis), alone and fused. */
static void
test_resize_cubic (void)
{
  check_unfused_and_fused (PL_TEST_RESIZE_CUBIC_GRAPH, 8, 6);
}

/* GridSample (gathered taps), alone and fused with its Relu. */
static void
test_grid_sample (void)
{
  check_unfused_and_fused (PL_TEST_GRID_SAMPLE_GRAPH, 10, 9);
}

/* RoiAlign (bilinear samples gathered from the roi's image), alone and fused with its Relu. */
static void
test_roi_align (void)
{
  check_unfused_and_fused (PL_TEST_ROI_ALIGN_GRAPH, 4, 3);
}

/* ReverseSequence (a gather along the time axis), beside an Exp and a Relu. */
static void
test_reverse_sequence (void)
{
  check_unfused_and_fused (PL_TEST_REVERSE_SEQUENCE_GRAPH, 4, 3);
}

/* Gather (a load offset by the index), alone and beside fusions. */
static void
test_gather (void)
{
  check_unfused_and_fused (PL_TEST_GATHER_GRAPH, 6, 5);
}

/* The index checks compile (NVRTC: the status's atomicCAS); with a GPU (or
 * the emulator) an index out of range fails the run, read back from the
 * device's status words after it. */
static void
test_gather_out_of_range (void)
{
  if (skip_without_nvrtc ())
    return;
  g_autoptr (PlGraph) g = pl_test_parse ("graph ix opset 17 {\n"
                                         "  input d: f32[5, 4]\n  input i: i64[3]\n  input j: i32[5, 2]\n"
                                         "  y = Gather(d, i) {axis=0}\n  z = GatherElements(d, j) {axis=1}\n"
                                         "  output y, z\n}\n");
  g_autofree char *src = compile_check (g, 2);
  g_assert_nonnull (strstr (src, "pl_flag (pl_status, 1, "));
  if (!have_gpu)
    {
      g_test_skip ("no GPU: compiled only");
      return;
    }
  pl_test_index_out_of_range (PL_BACKEND_CUDA);
}

/* Library kernels: the epilogue of a GEMM and a direct convolution. */
static void
test_library (void)
{
  if (skip_without_nvrtc ())
    return;
  g_autoptr (PlGraph) g = pl_test_parse (
    "graph lib opset 17 {\n"
    "  input x: f32[2, 4, 9, 8]\n  input a: f32[5, 7]\n  input b: f32[7, 3]\n"
    "  const w: f32[6, 2, 3, 3] = random(seed=1, lo=-0.5, hi=0.5)\n  const cb: f32[6] = [1, 2, 3, 4, 5, 6]\n"
    "  const bias: f32[3] = [0.5, -0.5, 1.0]\n"
    "  y = Conv(x, w, cb) {group=2, strides=[2, 1], pads=[1, 1, 1, 1]}\n  r = Relu(y)\n"
    "  m = MatMul(a, b)\n  mb = Add(m, bias)\n  t = Tanh(mb)\n  output r, t\n}\n");
  g_autoptr (PlGraph) f = pl_test_passes (g, "fuse-library");
  g_autofree char *src = compile_check (f, 3);
  g_assert_nonnull (strstr (src, "_conv ("));
  run_on_gpu (f);
}

/* ConvTranspose: a cuBLAS GEMM and the generated col2im (a thread per
 * output gathers), unfused and as fuse-library's backward-input node with
 * a bias + Relu epilogue; 2-d with stride 2, pads, dilation 2,
 * output_padding 1 and group 2, f64, and 1-d. */
static void
test_conv_transpose (void)
{
  if (skip_without_nvrtc ())
    return;
  g_autoptr (PlGraph) g = pl_test_parse (
    "graph ct opset 17 {\n"
    "  input x: f32[2, 4, 5, 6]\n  input x1: f64[2, 3, 7]\n"
    "  const w: f32[4, 3, 3, 3] = random(seed=1, lo=-0.5, hi=0.5)\n  const b: f32[6] = [1, 2, 3, 4, 5, 6]\n"
    "  const w1: f64[3, 2, 3] = random(seed=2, lo=-0.5, hi=0.5)\n"
    "  y = ConvTranspose(x, w, b) {group=2, strides=[2, 2], dilations=[2, 1], pads=[1, 1, 2, 0], "
    "output_padding=[1, 1]}\n  r = Relu(y)\n"
    "  z = ConvTranspose(x1, w1) {strides=[2], pads=[1, 0]}\n  output r, z\n}\n");
  g_autofree char *src = compile_check (g, 4);   /* y's col2im and bias, r, z's col2im */
  g_assert_nonnull (strstr (src, "k0_y_col2im (const float *__restrict__ col, float *__restrict__ y, int64_t n)"));
  g_assert_nonnull (strstr (src, "_col2im (const double *__restrict__ col, double *__restrict__ y, int64_t n)"));
  g_assert_null (strstr (strstr (src, "k0_y_col2im"), "atomicAdd"));   /* the kernels (the prelude's grid barrier has some) */
  run_on_gpu (g);
  g_autoptr (PlGraph) f = pl_test_passes (g, "fuse-library");
  g_autofree char *fsrc = compile_check (f, 3);
  g_assert_nonnull (strstr (fsrc, "_col2im ("));
  run_on_gpu (f);
}

/* In-place sharing (runtime.c): c = Add(a, b) stores its output over a,
 * which it reads last; that pair of pointers is not __restrict__, b still
 * is, and the kernel compiles (and, with a GPU, agrees with the reference:
 * each thread reads the element it then writes). */
static void
test_in_place (void)
{
  if (skip_without_nvrtc ())
    return;
  g_autoptr (PlGraph) g = pl_test_parse (
    "graph ip opset 17 {\n  input x: f32[64, 1024]\n  const k: f32[] = 0.5\n"
    "  a = Exp(x)\n  b = Sin(a)\n  c = Add(a, b)\n  d = Mul(c, k)\n  e = Relu(d)\n  output e\n}\n");
  g_autofree char *src = compile_check (g, 5);
  g_assert_nonnull (strstr (src, "k1_b (const float *__restrict__ in0, float *__restrict__ out0, "));
  g_assert_nonnull (strstr (src, "k2_c (const float * in0, const float *__restrict__ in1, float * out0, "));
  g_assert_nonnull (strstr (src, "k4_e (const float * in0, float * out0, "));
  run_on_gpu (g);
}

/* Without a driver the backend says why, and nothing crashes. */
static void
test_unavailable (void)
{
  char *why = NULL;
  bool ok = pl_backend_available (PL_BACKEND_CUDA, &why);
  if (ok)
    {
      g_test_skip ("CUDA is available (a GPU, or the emulator)");
      return;
    }
  g_assert_nonnull (why);
  g_test_message ("cuda: %s", why);
  g_autoptr (PlGraph) g = pl_test_parse ("graph u opset 17 {\n  input x: f32[3]\n  y = Exp(x)\n  output y\n}\n");
  PlCompileOptions o;
  pl_compile_options_init (&o, PL_BACKEND_CUDA);
  g_autoptr (GError) error = NULL;
  g_assert_null (pl_executable_new (g, &o, &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED);
  g_assert_nonnull (strstr (error->message, why));
  g_free (why);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  pl_passes_init ();
  char *why = NULL;
  PlGraph *probe = pl_graph_new ("probe");
  g_autoptr (GError) error = NULL;
  /* an empty graph compiles to an empty module: a cheap probe for NVRTC */
  have_nvrtc = pl_cuda_compile_check (probe, NULL, NULL, NULL, &error);
  if (!have_nvrtc && !g_error_matches (error, PL_ERROR, PL_ERROR_UNSUPPORTED))
    g_error ("the CUDA prelude does not compile: %s", error->message);
  if (!have_nvrtc)
    g_test_message ("no NVRTC: %s", error->message);
  pl_graph_free (probe);
  have_gpu = pl_backend_available (PL_BACKEND_CUDA, &why);
  if (!have_gpu)
    g_test_message ("no GPU run: %s", why);
  g_free (why);
  static const char *const samples[] = { "layer_norm.graph", "softmax.graph", "group_norm.graph",
                                         "ghost_batch_norm.graph", "gelu_mlp.graph", "resnet_block.graph",
                                         "transformer_block.graph" };
  for (size_t i = 0; i < G_N_ELEMENTS (samples); i++)
    {
      g_autofree char *path = g_strdup_printf ("/Passlab/KernelsCuda/sample/%s", samples[i]);
      g_test_add_data_func (path, samples[i], test_samples);
    }
  g_test_add_func ("/Passlab/KernelsCuda/random", test_random);
  g_test_add_func ("/Passlab/KernelsCuda/mapping", test_mapping);
  g_test_add_func ("/Passlab/KernelsCuda/row-reuse", test_row_reuse);
  g_test_add_func ("/Passlab/KernelsCuda/split-rows", test_split_rows);
  g_test_add_func ("/Passlab/KernelsCuda/dtypes-and-reductions", test_dtypes_and_reductions);
  g_test_add_func ("/Passlab/KernelsCuda/slice-split", test_slice_split);
  g_test_add_func ("/Passlab/KernelsCuda/concat", test_concat);
  g_test_add_func ("/Passlab/KernelsCuda/pad-trilu", test_pad_trilu);
  g_test_add_func ("/Passlab/KernelsCuda/resize-nearest", test_resize_nearest);
  g_test_add_func ("/Passlab/KernelsCuda/resize-linear", test_resize_linear);
  g_test_add_func ("/Passlab/KernelsCuda/resize-cubic", test_resize_cubic);
  g_test_add_func ("/Passlab/KernelsCuda/grid-sample", test_grid_sample);
  g_test_add_func ("/Passlab/KernelsCuda/roi-align", test_roi_align);
  g_test_add_func ("/Passlab/KernelsCuda/reverse-sequence", test_reverse_sequence);
  g_test_add_func ("/Passlab/KernelsCuda/pad-modes", test_pad_modes);
  g_test_add_func ("/Passlab/KernelsCuda/space-depth-tile", test_space_depth_tile);
  g_test_add_func ("/Passlab/KernelsCuda/onehot", test_onehot);
  g_test_add_func ("/Passlab/KernelsCuda/cumsum", test_cumsum);
  g_test_add_func ("/Passlab/KernelsCuda/scatter", test_scatter);
  g_test_add_func ("/Passlab/KernelsCuda/topk", test_topk);
  g_test_add_func ("/Passlab/KernelsCuda/gather-nd", test_gather_nd);
  g_test_add_func ("/Passlab/KernelsCuda/div-mod", test_div_mod);
  g_test_add_func ("/Passlab/KernelsCuda/split-parts", test_split_parts);
  g_test_add_func ("/Passlab/KernelsCuda/gather", test_gather);
  g_test_add_func ("/Passlab/KernelsCuda/gather-out-of-range", test_gather_out_of_range);
  g_test_add_func ("/Passlab/KernelsCuda/library", test_library);
  g_test_add_func ("/Passlab/KernelsCuda/conv-transpose", test_conv_transpose);
  g_test_add_func ("/Passlab/KernelsCuda/in-place", test_in_place);
  g_test_add_func ("/Passlab/KernelsCuda/unavailable", test_unavailable);
  return g_test_run ();
}

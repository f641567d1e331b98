/* test-util.h — helpers for the GLib unit tests: build one-node graphs, run
 * them through shape inference and the reference interpreter, and compare. */
#pragma once

#include "graph.h"
#include "interp.h"
#include "tensor.h"
#include "pass-manager.h"
#include "runtime.h"

#define PL_DIMS(...) ((const int64_t[]) { __VA_ARGS__ })
#define PL_VALS(...) ((const double[]) { __VA_ARGS__ })

/* A strided Slice between two elementwise ops and an equal Split, for the
 * backends' tests: y = relu (exp (x[:, 1:9:3, 1::2])), p0, and p1 + p2. */
#define PL_TEST_SLICE_SPLIT_GRAPH \
  "graph sl opset 17 {\n" \
  "  input x: f32[3, 10, 12]\n" \
  "  const st: i64[2] = [1, -11]\n  const en: i64[2] = [9, 100]\n" \
  "  const ax: i64[2] = [1, 2]\n  const sp: i64[2] = [3, 2]\n" \
  "  e = Exp(x)\n  s = Slice(e, st, en, ax, sp)\n  y = Relu(s)\n" \
  "  p0, p1, p2 = Split(x) {axis=2}\n  q = Add(p1, p2)\n" \
  "  output y, p0, q\n}\n"

/* Slices with negative steps: x[i, 6 - 2 j], and both axes reversed
 * between an Exp and a Relu. */
#define PL_TEST_SLICE_NEG_GRAPH \
  "graph sn opset 17 {\n" \
  "  input x: f32[4, 7]\n" \
  "  const st: i64[1] = [-1]\n  const en: i64[1] = [-100]\n" \
  "  const ax: i64[1] = [1]\n  const sp: i64[1] = [-2]\n" \
  "  const st2: i64[2] = [-1, -1]\n  const en2: i64[2] = [-100, -100]\n" \
  "  const ax2: i64[2] = [0, 1]\n  const sp2: i64[2] = [-1, -1]\n" \
  "  s = Slice(x, st, en, ax, sp)\n" \
  "  e = Exp(x)\n  f = Slice(e, st2, en2, ax2, sp2)\n  y = Relu(f)\n" \
  "  output s, y\n}\n"

/* Index-function data movement: DepthToSpace (DCR) between an Exp and a
 * Relu, DepthToSpace (CRD) then SpaceToDepth, Tile, and GatherElements with
 * negative indices along the last axis. */
#define PL_TEST_SPACE_DEPTH_GRAPH \
  "graph sd opset 13 {\n" \
  "  input x: f32[2, 8, 3, 5]\n  input t: f32[2, 3, 4]\n  input d: f32[3, 4]\n" \
  "  const rep: i64[3] = [2, 1, 3]\n  const ix: i64[3, 2] = [0, -1, 3, 2, 1, -4]\n" \
  "  e = Exp(x)\n  s = DepthToSpace(e) {blocksize=2}\n  y = Relu(s)\n" \
  "  c = DepthToSpace(x) {blocksize=2, mode=\"CRD\"}\n  z = SpaceToDepth(c) {blocksize=2}\n" \
  "  tl = Tile(t, rep)\n  ge = GatherElements(d, ix) {axis=1}\n" \
  "  output y, z, tl, ge\n}\n"

/* OneHot along the last axis (negative and out-of-range indices) feeding a
 * Relu, and along the first with i32 indices computed by an Add. */
#define PL_TEST_ONEHOT_GRAPH \
  "graph oh opset 13 {\n" \
  "  input j: i32[4]\n" \
  "  const ids: i64[2, 3] = [0, 5, -1, 2, -6, 9]\n  const depth: i64[] = 5\n" \
  "  const vals: f32[2] = [-1, 3]\n  const one: i32[] = 1\n" \
  "  o1 = OneHot(ids, depth, vals)\n  r = Relu(o1)\n" \
  "  j1 = Add(j, one)\n  o2 = OneHot(j1, depth, vals) {axis=0}\n" \
  "  output r, o2\n}\n"

/* CumSum (generated, scan.c) of each dtype it generates, along a middle,
 * the first and the last axis, inclusive, exclusive and in reverse; n's
 * 1100 lines span three chunks of the C kernel. */
#define PL_TEST_CUMSUM_GRAPH \
  "graph cs opset 14 {\n" \
  "  input x: f32[3, 700, 5]\n  input n: i64[4, 1100]\n  input w: f64[2, 9]\n  input m: i32[6, 7]\n" \
  "  const a1: i64[] = 1\n  const a0: i32[] = 0\n  const am1: i64[] = -1\n" \
  "  e = Exp(x)\n  y = CumSum(e, a1)\n  r = Relu(y)\n" \
  "  z = CumSum(n, a0) {exclusive=1, reverse=1}\n  v = CumSum(w, am1) {reverse=1}\n" \
  "  t = CumSum(x, am1) {exclusive=1}\n  u = CumSum(m, a1)\n" \
  "  output r, z, v, t, u\n}\n"

/* ScatterND (slices, with a repeated index and add; single elements by
 * pairs of i32 indices) and ScatterElements / Scatter (negative indices,
 * max; updates smaller than the data), each generated (scatter.c). */
#define PL_TEST_SCATTER_GRAPH \
  "graph sc opset 16 {\n" \
  "  input x: f32[8, 4, 6]\n  input u: f32[3, 4, 6]\n  input m: i64[5, 6]\n  input v: i64[4]\n" \
  "  input e: f64[4, 5]\n  input w: f64[3, 3]\n" \
  "  const rows: i64[3, 1] = [2, -1, 2]\n  const cells: i32[4, 2] = [0, 1, 4, 5, -1, 0, 2, 2]\n" \
  "  const cols: i64[3, 3] = [0, 4, -1, 1, 1, 2, -5, 3, 0]\n  const tops: i64[3, 3] = [0, 3, -1, 1, 1, 2, -4, 3, 0]\n" \
  "  x1 = Exp(x)\n  a = ScatterND(x1, rows, u) {reduction=\"add\"}\n  r = Relu(a)\n" \
  "  b = ScatterND(m, cells, v)\n" \
  "  c = ScatterElements(e, cols, w) {axis=1, reduction=\"max\"}\n" \
  "  d = ScatterElements(e, tops, w)\n" \
  "  output r, b, c, d\n}\n"

/* TopK (generated, topk.c): largest along the last axis after an Exp;
 * smallest along a middle axis of small integers (many ties: index order);
 * K the whole axis; NaNs, best for largest and worst for smallest. */
#define PL_TEST_TOPK_GRAPH \
  "graph tk opset 11 {\n" \
  "  input x: f32[4, 100]\n  input y: i64[3, 50, 2]\n  input z: f64[6, 9]\n" \
  "  const k5: i64[1] = [5]\n  const k3: i64[1] = [3]\n  const k9: i64[1] = [9]\n  const k4: i64[1] = [4]\n" \
  "  const c: f32[2, 6] = [1, nan, 3, -inf, nan, 2, 0, 5, nan, 5, 1, -1]\n" \
  "  e = Exp(x)\n  v, i = TopK(e, k5)\n" \
  "  w, j = TopK(y, k3) {axis=1, largest=0}\n" \
  "  a, b = TopK(z, k9) {axis=1}\n" \
  "  cl, ci = TopK(c, k4)\n  cs, cj = TopK(c, k4) {largest=0}\n" \
  "  output v, i, w, j, a, b, cl, ci, cs, cj\n}\n"

/* GatherND: whole rows by single indices, elements by pairs with negative
 * i32 indices and batch_dims 1, fused with what computes its indices' use. */
#define PL_TEST_GATHERND_GRAPH \
  "graph gn opset 13 {\n" \
  "  input x: f32[6, 4, 5]\n  input y: f64[3, 4, 5]\n" \
  "  const rows: i64[2, 2, 1] = [5, 0, -1, 2]\n  const cells: i32[3, 2, 2] = [0, 1, 3, -1, -4, 4, 2, 2, 1, 0, 3, 3]\n" \
  "  e = Exp(x)\n  g = GatherND(e, rows)\n  r = Relu(g)\n" \
  "  n = GatherND(y, cells) {batch_dims=1}\n  s = Sigmoid(n)\n" \
  "  output r, s\n}\n"

/* Integer Div and Mod (floored and truncated) by divisors of both signs,
 * -1 included (INT32_MIN / -1 wraps), unsigned Mod, float Mod both ways;
 * generated with a check that a divisor is not zero. */
#define PL_TEST_DIVMOD_GRAPH \
  "graph dm opset 13 {\n" \
  "  input a: i32[4, 6]\n  input f: f32[4, 6]\n  input g: u16[4, 6]\n" \
  "  const c: i32[6] = [2, -3, 7, -2147483648, 1, -9]\n  const d: i32[6] = [3, -2, -1, -1, 7, -4]\n" \
  "  const fd: f32[6] = [1.5, -2.25, 0.75, -0.5, 3, -1]\n  const gd: u16[6] = [3, 2, 1, 5, 7, 4]\n" \
  "  s = Sub(a, c)\n  q = Div(s, d)\n  m = Mod(s, d)\n  t = Mod(s, d) {fmod=1}\n" \
  "  fm = Mod(f, fd) {fmod=1}\n  fl = Mod(f, fd)\n  gm = Mod(g, gd)\n  gq = Div(g, gd)\n" \
  "  output q, m, t, fm, fl, gm, gq\n}\n"

/* Split into parts of different sizes (a kernel per part), along the last
 * axis by a constant split and along the first in three. */
#define PL_TEST_SPLIT_PARTS_GRAPH \
  "graph sp opset 13 {\n" \
  "  input x: f32[6, 7]\n" \
  "  const s: i64[2] = [2, 5]\n  const s3: i64[3] = [1, 4, 1]\n" \
  "  a, b = Split(x, s) {axis=1}\n  c, d, f = Split(x, s3) {axis=0}\n" \
  "  output a, b, c, d, f\n}\n"

/* Concats along an outer, the middle and the last axis, one between an
 * Exp and a Relu. */
#define PL_TEST_CONCAT_GRAPH \
  "graph cc opset 17 {\n" \
  "  input a: f32[2, 3, 5]\n  input b: f32[2, 4, 5]\n  input d: f32[2, 1, 5]\n" \
  "  ea = Exp(a)\n  c = Concat(ea, b, d) {axis=1}\n  y = Relu(c)\n" \
  "  e = Concat(a, a) {axis=-1}\n  z = Neg(e)\n  f = Concat(b, b) {axis=0}\n" \
  "  output y, z, f\n}\n"

/* Pad in constant mode (padding, cropping, both on one axis, a pad value)
 * between an Exp and a Relu, and Trilu upper and lower. */
#define PL_TEST_PAD_TRILU_GRAPH \
  "graph pt opset 17 {\n" \
  "  input x: f32[2, 3, 6, 7]\n" \
  "  const pads: i64[8] = [0, 0, 1, 2, 0, 0, 2, 1]\n  const crop: i64[8] = [0, -1, 2, -3, 1, 1, -2, 3]\n" \
  "  const val: f32[] = 0.25\n  const k: i64[] = -1\n" \
  "  e = Exp(x)\n  p = Pad(e, pads)\n  y = Relu(p)\n  q = Pad(x, crop, val)\n" \
  "  u = Trilu(x, k)\n  l = Trilu(x) {upper=0}\n" \
  "  output y, q, u, l\n}\n"

/* Pad in edge, reflect and wrap modes: pads shorter than the axis between
 * an Exp and a Relu, pads longer than it (reflect and wrap repeat
 * periodically), pads that crop one side, and a reflect pad of 2 on an axis
 * of 2 that crops its end (mirrored twice, never past the start). */
#define PL_TEST_PAD_MODES_GRAPH \
  "graph pm opset 17 {\n" \
  "  input x: f32[2, 3, 5, 6]\n" \
  "  const p: i64[8] = [0, 0, 2, 3, 0, 0, 1, 4]\n  const long: i64[8] = [0, 0, 7, 13, 0, 0, 9, 11]\n" \
  "  const crop: i64[8] = [0, -1, -1, 2, 0, 0, 3, -2]\n" \
  "  e = Exp(x)\n  r = Pad(e, p) {mode=\"reflect\"}\n  y = Relu(r)\n" \
  "  d = Pad(x, p) {mode=\"edge\"}\n  w = Pad(x, p) {mode=\"wrap\"}\n" \
  "  rl = Pad(x, long) {mode=\"reflect\"}\n  wl = Pad(x, long) {mode=\"wrap\"}\n  dl = Pad(x, long) {mode=\"edge\"}\n" \
  "  rc = Pad(x, crop) {mode=\"reflect\"}\n  wc = Pad(x, crop) {mode=\"wrap\"}\n" \
  "  const over: i64[8] = [2, 0, 0, 0, -1, 0, 0, 0]\n  ro = Pad(x, over) {mode=\"reflect\"}\n" \
  "  output y, d, w, rl, wl, dl, rc, wc, ro\n}\n"

/* Nearest Resize: up by 2 (half_pixel) between an Exp and a Relu, up by 3
 * and down by 2 (asymmetric, floor: PyTorch's export), and by 1.5 (no
 * integer factor: the reference). */
#define PL_TEST_RESIZE_GRAPH \
  "graph rs opset 13 {\n" \
  "  input x: f32[2, 3, 5, 4]\n" \
  "  const s2: f32[4] = [1, 1, 2, 2]\n  const s3: f32[4] = [1, 1, 3, 0.5]\n  const s15: f32[4] = [1, 1, 1.5, 1]\n" \
  "  e = Exp(x)\n  u = Resize(e, _, s2) {mode=\"nearest\"}\n  y = Relu(u)\n" \
  "  a = Resize(x, _, s3) {mode=\"nearest\", coordinate_transformation_mode=\"asymmetric\", nearest_mode=\"floor\"}\n" \
  "  b = Resize(x, _, s15) {mode=\"nearest\"}\n" \
  "  output y, a, b\n}\n"

/* Linear Resize: up by 2 (half_pixel) on both spatial axes between an Exp
 * and a Relu, align_corners by sizes (5 -> 9, 4 -> 7), pytorch_half_pixel
 * up by 3 and down by 2, asymmetric down by 2 (one tap), and with
 * exclude_outside (the reference). */
#define PL_TEST_RESIZE_LINEAR_GRAPH \
  "graph rl opset 13 {\n" \
  "  input x: f32[2, 3, 5, 4]\n" \
  "  const s2: f32[4] = [1, 1, 2, 2]\n  const s3: f32[4] = [1, 1, 3, 0.5]\n  const sd: f32[4] = [1, 1, 1, 0.5]\n" \
  "  const sz: i64[4] = [2, 3, 9, 7]\n" \
  "  e = Exp(x)\n  u = Resize(e, _, s2) {mode=\"linear\"}\n  y = Relu(u)\n" \
  "  a = Resize(x, _, _, sz) {mode=\"linear\", coordinate_transformation_mode=\"align_corners\"}\n" \
  "  b = Resize(x, _, s3) {mode=\"linear\", coordinate_transformation_mode=\"pytorch_half_pixel\"}\n" \
  "  c = Resize(x, _, sd) {mode=\"linear\", coordinate_transformation_mode=\"asymmetric\"}\n" \
  "  d = Resize(x, _, s2) {mode=\"linear\", exclude_outside=1}\n" \
  "  output y, a, b, c, d\n}\n"

/* Cubic Resize with constant scales or sizes in each coordinate mode, up,
 * down and by a fraction, with another cubic coefficient and
 * exclude_outside (the taps outside weigh nothing), fused between an Exp
 * and a Relu; and, against it, a linear one with exclude_outside (the
 * reference). */
#define PL_TEST_RESIZE_CUBIC_GRAPH \
  "graph rc opset 13 {\n" \
  "  input x: f32[2, 3, 6, 5]\n" \
  "  const s2: f32[4] = [1, 1, 2, 2]\n  const s3: f32[4] = [1, 1, 3, 0.5]\n  const sd: f32[4] = [1, 1, 0.5, 0.8]\n" \
  "  const sz: i64[4] = [2, 3, 9, 7]\n" \
  "  e = Exp(x)\n  u = Resize(e, _, s2) {mode=\"cubic\"}\n  y = Relu(u)\n" \
  "  a = Resize(x, _, _, sz) {mode=\"cubic\", coordinate_transformation_mode=\"align_corners\"}\n" \
  "  b = Resize(x, _, s3) {mode=\"cubic\", coordinate_transformation_mode=\"pytorch_half_pixel\"}\n" \
  "  c = Resize(x, _, s3) {mode=\"cubic\", coordinate_transformation_mode=\"asymmetric\"}\n" \
  "  d = Resize(x, _, sd) {mode=\"cubic\", cubic_coeff_a=-0.5, exclude_outside=1}\n" \
  "  f = Resize(x, _, s2) {mode=\"cubic\", cubic_coeff_a=-0.5, exclude_outside=1}\n" \
  "  l = Resize(x, _, s2) {mode=\"linear\", exclude_outside=1}\n" \
  "  output y, a, b, c, d, f, l\n}\n"

/* GridSample in each mode with zeros, border and reflection padding, with
 * and without align_corners, on a grid stretched past [-1, 1] (by up to
 * 3.4 image widths: several reflections) so that taps fall outside. */
#define PL_TEST_GRID_SAMPLE_GRAPH \
  "graph gs opset 16 {\n" \
  "  input x: f32[2, 3, 5, 7]\n  input grid: f32[2, 4, 6, 2]\n" \
  "  const k: f32[] = 3.4\n" \
  "  g = Mul(grid, k)\n" \
  "  a = GridSample(x, g)\n" \
  "  b = GridSample(x, g) {padding_mode=\"border\", align_corners=1}\n" \
  "  c = GridSample(x, g) {mode=\"nearest\"}\n" \
  "  d = GridSample(x, g) {mode=\"nearest\", padding_mode=\"border\", align_corners=1}\n" \
  "  e = GridSample(x, g) {mode=\"bicubic\"}\n" \
  "  f = GridSample(x, g) {mode=\"bicubic\", padding_mode=\"border\"}\n" \
  "  r = GridSample(x, g) {padding_mode=\"reflection\"}\n" \
  "  s = GridSample(x, g) {mode=\"nearest\", padding_mode=\"reflection\", align_corners=1}\n" \
  "  t = GridSample(x, g) {mode=\"bicubic\", padding_mode=\"reflection\"}\n" \
  "  y = Relu(a)\n" \
  "  output y, b, c, d, e, f, r, s, t\n}\n"

/* RoiAlign with fixed sampling ratios, avg and max, half_pixel and (opset
 * 16's attribute) output_half_pixel, a spatial scale, on rois inside, across
 * and beyond the image's edges, a degenerate one and one with NaN
 * corners (the reference's MAX makes a NaN coordinate 0); and an adaptive
 * sampling ratio (the reference). */
#define PL_TEST_ROI_ALIGN_GRAPH \
  "graph ra opset 16 {\n" \
  "  input x: f32[2, 3, 6, 7]\n" \
  "  const rois: f32[5, 4] = [0, 0, 6, 5, 1.3, 0.7, 4.9, 3.1, -2, -1.5, 3, 2, 4, 3, 9.5, 8, 2, 2, 2, 2]\n" \
  "  const big: f32[5, 4] = [0, 0, 12, 10, 2.6, 1.4, 9.8, 6.2, -4, -3, 6, 4, 8, 6, 19, 16, nan, 4, 4, nan]\n" \
  "  const bi: i64[5] = [0, 1, 1, 0, 1]\n" \
  "  a = RoiAlign(x, rois, bi) {output_height=2, output_width=3, sampling_ratio=2}\n" \
  "  b = RoiAlign(x, rois, bi) {mode=\"max\", output_height=3, output_width=2, sampling_ratio=3}\n" \
  "  c = RoiAlign(x, big, bi) {coordinate_transformation_mode=\"output_half_pixel\", output_height=2, output_width=2, sampling_ratio=1, spatial_scale=0.5}\n" \
  "  d = RoiAlign(x, rois, bi) {output_height=2, output_width=2, sampling_ratio=0}\n" \
  "  y = Relu(a)\n" \
  "  output y, b, c, d\n}\n"

/* ReverseSequence with time on axis 0 and on axis 1, rank 3 and 4, lengths
 * from 0 to the whole time axis (constant and an input), next to an Exp
 * and a Relu. */
#define PL_TEST_REVERSE_SEQUENCE_GRAPH \
  "graph rs opset 13 {\n" \
  "  input x: f32[5, 4, 3]\n  input z: f32[4, 6, 2, 3]\n  input lz: i64[4]\n" \
  "  const lx: i64[4] = [5, 0, 1, 3]\n" \
  "  e = Exp(x)\n" \
  "  a = ReverseSequence(e, lx)\n  y = Relu(a)\n" \
  "  b = ReverseSequence(z, lz) {time_axis=1, batch_axis=0}\n" \
  "  output y, b\n}\n"

/* Gather: an embedding lookup (axis 0, 2-D indices, some negative) feeding
 * a Relu (they fuse), axis 1 with i32 indices, axis -1 with one scalar
 * index, and a gather from a computed Exp (which stays a kernel apart). */
#define PL_TEST_GATHER_GRAPH \
  "graph ga opset 13 {\n" \
  "  input emb: f32[10, 6]\n  input x: f32[3, 5, 4]\n" \
  "  const ids: i64[2, 3] = [0, 9, -1, 4, -10, 2]\n  const j: i32[2] = [4, -2]\n  const last: i64[] = -1\n" \
  "  e = Gather(emb, ids)\n  y = Relu(e)\n  g1 = Gather(x, j) {axis=1}\n  g2 = Gather(x, last) {axis=-1}\n" \
  "  ex = Exp(x)\n  g3 = Gather(ex, j) {axis=1}\n" \
  "  output y, g1, g2, g3\n}\n"

/* A new tensor filled from values (row-major; NULL for zeros). */
PlTensor  *pl_test_tensor        (PlDType dtype, int rank, const int64_t *dims, const double *values);
/* A tensor of random values in [lo, hi). */
PlTensor  *pl_test_random        (PlDType dtype, int rank, const int64_t *dims, guint32 seed, double lo, double hi);

/* A graph with one node. inputs[i] NULL: an omitted optional input. Bit i of
 * const_mask set: input i is a constant (else a graph input with exactly the
 * tensor's shape). The node has n_outputs outputs, all graph outputs.
 * Set attributes on *node, then call pl_test_run. */
PlGraph   *pl_test_node_graph    (const char *op_type, int n_inputs, PlTensor *const *inputs,
                                  guint32 const_mask, int n_outputs, PlNode **node);
/* Infers shapes (failing the test on error), runs the interpreter with the
 * non-constant inputs, and asserts that every inferred static output shape
 * and dtype equals the computed one. Returns node->n_outputs tensors;
 * free with pl_interp_free_outputs. */
PlTensor **pl_test_run           (PlGraph *g, PlTensor *const *inputs, guint32 const_mask);
/* Asserts that inference fails with a message containing substring. */
void       pl_test_expect_infer_error (PlGraph *g, const char *substring);
/* Asserts that running fails (inference may pass) with a message containing substring. */
void       pl_test_expect_run_error   (PlGraph *g, PlTensor *const *inputs, guint32 const_mask,
                                       const char *substring);
/* Asserts shapes/dtypes equal and values close (prints the first mismatch). */
void       pl_test_assert_close  (const PlTensor *got, const PlTensor *want, double rtol, double atol);
/* Asserts got equals the listed values (same count as got->numel), within 1e-5 relative. */
void       pl_test_assert_values (const PlTensor *got, const double *want);
/* Compiles g for backend (asserting that it compiles) and runs it once on
 * inputs; returns its outputs (free with pl_interp_free_outputs) and, when
 * report is not NULL, the run's report. */
PlTensor **pl_test_run_backend   (const PlGraph *g, PlBackend backend, PlTensor *const *inputs,
                                  PlRunReport **report);
/* Gather and GatherElements generated for backend: an index out of range
 * fails the run as the reference does (naming the kernel), and the same
 * executable then runs in-range indices right. */
void       pl_test_index_out_of_range (PlBackend backend);
/* Runs g on the reference, and its version after the pipeline `spec`
 * compiled for backend, on the same inputs; asserts that the outputs agree
 * within rtol, atol and returns how many of the backend's kernels ran the
 * reference fallback (*n_kernels, when not NULL: how many ran in all). */
int        pl_test_backend_fallbacks (const PlGraph *g, const char *spec, PlBackend backend,
                                      PlTensor *const *inputs, double rtol, double atol, int *n_kernels);
/* Runs the pipeline `spec` on g (params: "pass.key=value", NULL-terminated)
 * with the numerical check; asserts that every step verifies, was checked
 * exactly when it changed the graph, and stayed within tolerance. */
PlHistory *pl_test_run_checked  (const PlGraph *g, const char *spec, const char *const *params,
                                  double tolerance, guint32 seed);
/* Path of a file in the source tree (from PASSLAB_SOURCE_DIR); g_free it. */
char      *pl_test_source_path   (const char *relative);
/* Removes dir and everything below it (a test's temporary folder). */
void       pl_test_remove_tree   (const char *dir);
/* The graph of a text (asserts it parses) and of a bundled sample, data/graphs/NAME. */
PlGraph   *pl_test_parse         (const char *text);
PlGraph   *pl_test_load_sample   (const char *name);
/* A copy of g after the pipeline spec (asserts it runs). */
PlGraph   *pl_test_passes        (const PlGraph *g, const char *spec);
/* The fuzzer's random graph of this seed with n_nodes op nodes, its other options the defaults. */
PlGraph   *pl_test_random_graph  (guint32 seed, int n_nodes);

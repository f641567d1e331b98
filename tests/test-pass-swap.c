/* test-pass-swap.c — swap insertion by timing analysis (seed 004): the
 * memory ops' reference semantics, the timing analysis (exact TAT / TRT /
 * TTS on the seed's kind of graph, both models, control edges, linear time
 * on a large graph), the memory profile's host/device split, the pass's
 * exact structure (reduction, restorations, serialize and prefetch edges,
 * schedule), numerical equality through the pass manager's check, several
 * restorations, outputs delivered from host, the budget (restorations
 * split where the plan peaks, the floor, the fewest tensors), and bad
 * parameters. */
#include "pass-manager.h"
#include "random-graph.h"
#include "schedule.h"
#include "test-util.h"
#include "text-format.h"
#include "timing.h"

#include <math.h>
#include <string.h>
#include <time.h>

static guint32
node_id (const PlGraph *g, const char *name)
{
  PlNode *n = pl_graph_find_node (g, name);
  g_assert_nonnull (n);
  return n->id;
}

static guint32
value_id (const PlGraph *g, const char *name)
{
  PlValue *v = pl_graph_find_value (g, name);
  g_assert_nonnull (v);
  return v->id;
}

#define assert_ms(got, want) g_assert_cmpfloat_with_epsilon ((got), (want), 1e-9)

/* --- the memory ops ---------------------------------------------------------------- */

static void
test_ops (void)
{
  /* Swaps are exact copies of any dtype. */
  const char *swaps[] = { "SwapOut", "SwapIn" };
  for (int k = 0; k < 2; k++)
    {
      g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_I64, 2, PL_DIMS (2, 2), PL_VALS (1, -2, 3, 1 << 20));
      g_autoptr (PlGraph) g = pl_test_node_graph (swaps[k], 1, &x, 0, 1, NULL);
      PlTensor **out = pl_test_run (g, &x, 0);
      g_assert_cmpint (out[0]->dtype, ==, PL_DTYPE_I64);
      pl_test_assert_values (out[0], PL_VALS (1, -2, 3, 1 << 20));
      pl_interp_free_outputs (out, 1);
    }

  /* f32 -> f16 rounds to nearest even: 1 + 2^-11 is halfway between 1 and
   * 1 + 2^-10 (-> 1, even); 1 + 3·2^-11 between 1 + 2^-10 and 1 + 2^-9
   * (-> 1 + 2^-9, even); 65504 is the largest f16, 70000 overflows; 1e-8 is
   * below half the smallest subnormal (2^-24) and rounds to 0; 2^-24 stays. */
  double one_half_ulp = 1.0 + 1.0 / 2048, three_half_ulp = 1.0 + 3.0 / 2048;
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F32, 1, PL_DIMS (8),
                                           PL_VALS (1.0, one_half_ulp, three_half_ulp, -2.5, 65504, 70000,
                                                    1e-8, 5.9604644775390625e-08));
  g_autoptr (PlGraph) gc = pl_test_node_graph ("CompressFp16", 1, &x, 0, 1, NULL);
  PlTensor **h = pl_test_run (gc, &x, 0);
  g_assert_cmpint (h[0]->dtype, ==, PL_DTYPE_F16);
  const uint16_t *bits = h[0]->data;
  g_assert_cmphex (bits[0], ==, 0x3c00);
  g_assert_cmphex (bits[1], ==, 0x3c00);
  g_assert_cmphex (bits[2], ==, 0x3c02);
  g_assert_cmphex (bits[3], ==, 0xc100);
  g_assert_cmphex (bits[4], ==, 0x7bff);
  g_assert_cmphex (bits[5], ==, 0x7c00);
  g_assert_cmphex (bits[6], ==, 0x0000);
  g_assert_cmphex (bits[7], ==, 0x0001);

  /* f16 -> f32 is exact. */
  g_autoptr (PlGraph) gd = pl_test_node_graph ("DecompressFp16", 1, &h[0], 0, 1, NULL);
  PlTensor **back = pl_test_run (gd, &h[0], 0);
  g_assert_cmpint (back[0]->dtype, ==, PL_DTYPE_F32);
  const float *f = back[0]->data;
  g_assert_cmpfloat (f[0], ==, 1.0f);
  g_assert_cmpfloat (f[1], ==, 1.0f);
  g_assert_cmpfloat (f[2], ==, 1.0f + 1.0f / 512);
  g_assert_cmpfloat (f[3], ==, -2.5f);
  g_assert_cmpfloat (f[4], ==, 65504.0f);
  g_assert_true (isinf (f[5]) && f[5] > 0);
  g_assert_cmpfloat (f[6], ==, 0.0f);
  g_assert_cmpfloat (f[7], ==, 5.9604644775390625e-08f);
  pl_interp_free_outputs (h, 1);
  pl_interp_free_outputs (back, 1);

  /* Compression takes f32 only, decompression f16 only. */
  g_autoptr (PlTensor) i = pl_test_tensor (PL_DTYPE_I64, 1, PL_DIMS (2), NULL);
  g_autoptr (PlGraph) bad = pl_test_node_graph ("CompressFp16", 1, &i, 0, 1, NULL);
  pl_test_expect_infer_error (bad, "unsupported dtype i64");
  g_autoptr (PlGraph) bad2 = pl_test_node_graph ("DecompressFp16", 1, &x, 0, 1, NULL);
  pl_test_expect_infer_error (bad2, "unsupported dtype f32");
}

/* --- timing analysis ---------------------------------------------------------------- */

/* The seed's fig. 3 shape: a source feeding a chain and, much later, two
 * more consumers; plus a side branch (side) that runs in parallel with the
 * chain in the dataflow model and after it in the serial one. */
static const char *seed_graph =
  "graph seed opset 17 {\n"
  "  input in: f32[4]\n"
  "  src = Relu(in)\n"
  "  n302 = Relu(src)\n"
  "  n304 = Relu(n302)\n"
  "  n306 = Relu(n304)\n"
  "  side = Relu(src)\n"
  "  n308 = Sum(n306, src, side)\n"
  "  n310 = Add(n308, src)\n"
  "  output n310\n"
  "}\n";

static PlTimingAnalysis *
analyze_seed (const PlGraph *g, bool serial)
{
  /* measured latencies: src 1, n302 2, n304 3, n306 4, side 2, n308 5, n310 6 ms */
  const char *names[] = { "src", "n302", "n304", "n306", "side", "n308", "n310" };
  const double ms[] = { 1, 2, 3, 4, 2, 5, 6 };
  guint32 ids[G_N_ELEMENTS (names)];
  for (size_t k = 0; k < G_N_ELEMENTS (names); k++)
    ids[k] = node_id (g, names[k]);
  PlTimingOptions o;
  pl_timing_options_init (&o);
  o.serial = serial;
  o.measured_ids = ids;
  o.measured_ms = ms;
  o.n_measured = G_N_ELEMENTS (ids);
  g_autoptr (GError) error = NULL;
  PlTimingAnalysis *t = pl_timing_analyze (g, &o, &error);
  g_assert_no_error (error);
  g_assert_cmpint (t->n_measured, ==, 7);
  return t;
}

static void
test_timing_exact (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (seed_graph);

  /* Dataflow (the seed): TRT = max input TAT, TAT(out) = TRT + latency.
   *   src 0-1, n302 1-3, n304 3-6, n306 6-10, side 1-3,
   *   n308: max(10, 1, 3) = 10, -> 15; n310: max(15, 1) = 15, -> 21. */
  g_autoptr (PlTimingAnalysis) t = analyze_seed (g, false);
  assert_ms (pl_timing_trt (t, node_id (g, "src")), 0);
  assert_ms (pl_timing_trt (t, node_id (g, "side")), 1);
  assert_ms (pl_timing_trt (t, node_id (g, "n308")), 10);
  assert_ms (pl_timing_trt (t, node_id (g, "n310")), 15);
  assert_ms (pl_timing_finish (t, node_id (g, "n310")), 21);
  assert_ms (pl_timing_latency (t, node_id (g, "n306")), 4);
  assert_ms (t->makespan, 21);
  assert_ms (pl_timing_tat (t, value_id (g, "in")), 0);
  assert_ms (pl_timing_tat (t, value_id (g, "src")), 1);
  assert_ms (pl_timing_tat (t, value_id (g, "side")), 3);
  assert_ms (pl_timing_tat (t, value_id (g, "n308")), 15);
  /* slack of each input edge: TRT(consumer) - TAT(input) */
  guint32 n308 = node_id (g, "n308"), n310 = node_id (g, "n310");
  assert_ms (pl_timing_tts (t, n308, 0), 0);    /* n306: on the critical path */
  assert_ms (pl_timing_tts (t, n308, 1), 9);    /* src waits 10 - 1 */
  assert_ms (pl_timing_tts (t, n308, 2), 7);    /* side waits 10 - 3 */
  assert_ms (pl_timing_tts (t, n310, 1), 14);   /* src waits 15 - 1: the swap candidate */
  assert_ms (pl_timing_tts (t, node_id (g, "n302"), 0), 0);
  const PlTimingEdge *e = pl_timing_edge (t, n310, 1);
  g_assert_cmpstr (e->value->name, ==, "src");
  g_assert_cmpint (e->bytes, ==, 16);
  g_assert_null (pl_timing_edge (t, n310, 2));
  g_assert_null (pl_timing_edge (t, n310, -1));
  g_assert_true (isnan (pl_timing_tts (t, 9999, 0)));
  g_assert_true (isnan (pl_timing_tat (t, 9999)));
  /* the graph output is required at the end: slack 0 */
  g_assert_cmpint (t->n_output_edges, ==, 1);
  const PlTimingEdge *out = &t->edges[t->n_edges - 1];
  g_assert_null (out->consumer);
  assert_ms (out->tts, 0);

  /* The table lists the largest slack first. */
  g_autofree char *table = pl_timing_table (t, 3);
  g_assert_nonnull (strstr (table, "makespan 21.0000 ms (dataflow model"));
  g_auto (GStrv) lines = g_strsplit (table, "\n", -1);
  g_assert_nonnull (strstr (lines[1], "TTS ms"));
  g_assert_true (g_str_has_prefix (lines[2], "src "));
  g_assert_nonnull (strstr (lines[2], "n310"));
  g_assert_nonnull (strstr (lines[2], "14.0000"));
  g_assert_nonnull (strstr (lines[3], "9.0000"));
  g_assert_nonnull (strstr (lines[4], "7.0000"));
  g_assert_nonnull (strstr (lines[5], "more edges"));

  /* Serial (one GPU): side waits for the compute stream, after n306.
   *   src 0-1, n302 1-3, n304 3-6, n306 6-10, side 10-12, n308 12-17, n310 17-23. */
  g_autoptr (PlTimingAnalysis) s = analyze_seed (g, true);
  assert_ms (pl_timing_trt (s, node_id (g, "side")), 10);
  assert_ms (pl_timing_trt (s, n308), 12);
  assert_ms (pl_timing_tts (s, n308, 0), 2);
  assert_ms (pl_timing_tts (s, n308, 2), 0);
  assert_ms (pl_timing_tts (s, n310, 1), 16);
  assert_ms (s->makespan, 23);

  /* A control edge delays its node like an input: n302 after side. */
  pl_node_add_control (pl_graph_find_node (g, "n302"), pl_graph_find_node (g, "side"), PL_CONTROL_SERIALIZE);
  g_autoptr (PlTimingAnalysis) c = analyze_seed (g, false);
  assert_ms (pl_timing_trt (c, node_id (g, "n302")), 3);   /* side finishes at 3 */
  assert_ms (pl_timing_tts (c, node_id (g, "n302"), 0), 2);
  assert_ms (c->makespan, 23);
}

/* The cost model: bytes / bandwidth + flops / peak rate + launch. */
static void
test_timing_model (void)
{
  g_autoptr (PlGraph) g = pl_test_parse ("graph m opset 17 {\n"
                                 "  input a: f32[64, 128]\n"
                                 "  const w: f32[128, 256] = random(seed=1)\n"
                                 "  const shape: i64[1] = [16384]\n"
                                 "  y = MatMul(a, w)\n"
                                 "  r = Reshape(y, shape)\n"
                                 "  h = SwapOut(r)\n"
                                 "  output h\n"
                                 "}\n");
  PlTimingOptions o;
  pl_timing_options_init (&o);
  g_assert_cmpfloat (o.device_gbps, ==, 2000);
  g_assert_cmpfloat (o.link_gbps, ==, 25);
  /* MatMul: (64·128 + 128·256 + 64·256)·4 bytes, 2·64·256·128 flops */
  double bytes = (64.0 * 128 + 128 * 256 + 64 * 256) * 4, flops = 2.0 * 64 * 256 * 128;
  double want = 5e-3 + bytes / 2000e9 * 1e3 + flops / 50e12 * 1e3;
  g_assert_cmpfloat_with_epsilon (pl_timing_model_latency (pl_graph_find_node (g, "y"), &o, NULL), want, 1e-15);
  /* a view costs nothing; a swap is a copy over the link */
  g_assert_cmpfloat (pl_timing_model_latency (pl_graph_find_node (g, "r"), &o, NULL), ==, 0);
  g_assert_cmpfloat_with_epsilon (pl_timing_model_latency (pl_graph_find_node (g, "h"), &o, NULL),
                                  5e-3 + 65536.0 / 25e9 * 1e3, 1e-15);
  g_assert_cmpfloat_with_epsilon (pl_timing_copy_ms (65536, &o), 5e-3 + 65536.0 / 25e9 * 1e3, 1e-15);
}

/* This thread's CPU time in µs: what the analysis computes, not how long
 * it waited for a CPU that a build or the other test process held. */
static double
thread_cpu_us (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double) ts.tv_sec * 1e6 + (double) ts.tv_nsec / 1e3;
}

/* Linear time: four times the graph takes about four times as long (a
 * quadratic analysis would take sixteen). CPU time, the sizes alternating
 * over five rounds, the best of each. */
static double
time_once (const PlGraph *g, PlTimingAnalysis **keep)
{
  double t0 = thread_cpu_us ();
  g_autoptr (GError) error = NULL;
  PlTimingAnalysis *t = pl_timing_analyze (g, NULL, &error);
  g_assert_no_error (error);
  double us = thread_cpu_us () - t0;
  if (keep && !*keep)
    *keep = t;
  else
    pl_timing_analysis_free (t);
  return us;
}

static void
test_timing_linear (void)
{
  g_autoptr (PlGraph) small = pl_random_chain_graph (25000, 3);
  g_autoptr (PlGraph) big = pl_random_chain_graph (100000, 3);
  g_autoptr (PlTimingAnalysis) t = NULL;
  double ts = G_MAXDOUBLE, tb = G_MAXDOUBLE;
  for (int r = 0; r < 5; r++)
    {
      ts = MIN (ts, time_once (small, NULL));
      tb = MIN (tb, time_once (big, &t));
    }
  g_test_message ("timing analysis: %u nodes %.1f ms, %u nodes %.1f ms", small->nodes->len, ts / 1000,
                  big->nodes->len, tb / 1000);
  g_assert_cmpfloat (tb / ts, <, 10.0);
  g_assert_cmpfloat (tb, <, 2e6);   /* 100,000 nodes in well under two seconds */

  /* Every edge of the dataflow model has a non-negative slack, and every
   * node starts after its inputs arrived. */
  g_assert_cmpint (t->n_steps, ==, (int) big->nodes->len);
  for (int e = 0; e < t->n_edges; e++)
    if (t->edges[e].value)
      g_assert_cmpfloat (t->edges[e].tts, >=, 0);
  for (int s = 0; s < t->n_steps; s++)
    g_assert_cmpfloat (t->finish[t->order[s]->id], <=, t->makespan);
}

/* --- the memory profile: host values are not device memory ------------------------- */

/* x[256] (1 KiB) -> a = Relu(x) -> h = SwapOut(a) -> b = Relu(a) -> c = Relu(b)
 * -> r = SwapIn(h) -> y = Add(c, r). b, c and y are written in place over
 * the input they read last (schedule.h), never over the host value h.
 *   step 0 a:   x, a          device 2 KiB
 *   step 1 h:   a             1 KiB   host h
 *   step 2 b:   a (= b)       1 KiB   host h
 *   step 3 c:   b (= c)       1 KiB   host h
 *   step 4 r:   c, r          2 KiB   host h (read)
 *   step 5 y:   c (= y), r    2 KiB */
static void
test_memory_host (void)
{
  g_autoptr (PlGraph) g = pl_test_parse ("graph host opset 17 {\n"
                                 "  input x: f32[256]\n"
                                 "  a = Relu(x)\n"
                                 "  h = SwapOut(a)\n"
                                 "  b = Relu(a)\n"
                                 "  c = Relu(b)\n"
                                 "  r = SwapIn(h)\n"
                                 "  y = Add(c, r)\n"
                                 "  output y\n"
                                 "}\n");
  g_assert_true (pl_value_on_host (pl_graph_find_value (g, "h")));
  g_assert_false (pl_value_on_host (pl_graph_find_value (g, "r")));
  g_assert_false (pl_value_on_host (pl_graph_find_value (g, "x")));
  g_autoptr (GError) error = NULL;
  g_autoptr (PlMemoryProfile) p = pl_memory_profile (g, 1, &error);
  g_assert_no_error (error);
  const int64_t dev[] = { 2048, 1024, 1024, 1024, 2048, 2048 };
  const int64_t host[] = { 0, 1024, 1024, 1024, 1024, 0 };
  g_assert_cmpint (p->n_steps, ==, 6);
  for (int i = 0; i < 6; i++)
    {
      g_assert_cmpint (p->live_bytes[i], ==, dev[i]);
      g_assert_cmpint (p->host_live_bytes[i], ==, host[i]);
    }
  g_assert_cmpint (p->peak_bytes, ==, 2048);
  g_assert_cmpint (p->peak_step, ==, 0);
  g_assert_cmpint (p->host_peak_bytes, ==, 1024);
  g_assert_cmpint (p->n_in_place, ==, 3);
}

/* --- the pass ------------------------------------------------------------------------ */

/* A forward chain whose activations are read again, in reverse, by a
 * backward-like chain: a1 waits for g1, a2 for g2, a3 for g3. 256 KiB each. */
static const char *fwdbwd_graph =
  "graph fwdbwd opset 17 {\n"
  "  input x: f32[64, 1024]\n"
  "  a1 = Tanh(x)\n"
  "  a2 = Tanh(a1)\n"
  "  a3 = Tanh(a2)\n"
  "  a4 = Tanh(a3)\n"
  "  g3 = Mul(a4, a3)\n"
  "  g2 = Mul(g3, a2)\n"
  "  g1 = Mul(g2, a1)\n"
  "  output g1\n"
  "}\n";

/* Runs spec (with params) through the pass manager with the numerical check
 * at tolerance tol; asserts every step verifies and passes. */
static PlHistory *
run_checked (const PlGraph *g, const char *spec, const char *const *params, double tol)
{
  return pl_test_run_checked (g, spec, params, tol, 1);
}

static PlStep *
last_step (const PlHistory *h)
{
  return pl_history_step (h, pl_history_n_steps (h) - 1);
}

/* The pass leaves the node list in its planned order, and that is the
 * schedule every consumer (memory profile, timing, runtime) uses. */
static void
assert_schedule_is_node_order (const PlGraph *g)
{
  int n;
  g_autofree PlNode **order = pl_graph_topo_order (g, &n, NULL);
  g_assert_cmpint (n, ==, (int) g->nodes->len);
  for (int i = 0; i < n; i++)
    g_assert_true (order[i] == g->nodes->pdata[i]);
}

static void
assert_text (const PlGraph *g, const char *want)
{
  g_autofree char *got = pl_text_print (g);
  if (strcmp (got, want) != 0)
    g_error ("graph differs; got:\n%s\nwant:\n%s", got, want);
  /* and the text parses back to the same graph (control edges included) */
  g_autoptr (PlGraph) again = pl_test_parse (got);
  g_autofree char *got2 = pl_text_print (again);
  g_assert_cmpstr (got2, ==, got);
}

/* Every activation is moved (th_tts 1 µs, th_s 0). In the serial model
 * every Tanh takes 5.263 µs (launch 5 µs + 512 KiB at 2000 GB/s + 64 Ki
 * flops) and a 256 KiB copy 15.49 µs, so:
 *  - each SwapOut goes right after its producer and the next Tanh (the
 *    next allocation of >= 128 KiB) is serialized after it;
 *  - a1's consumer g1 starts at 6 x 5.263 = 31.6 µs: the latest node that
 *    finishes 15.49 µs before that is a3 (15.8 µs) -> prefetch from a3;
 *    g2 (26.3 µs) -> a3 too (a2 at 10.5 µs would also do; the latest wins);
 *    g3 (21.1 µs) -> only a4 (21.1) is after a3's swap-out: the copy is not
 *    hidden and the swap-in starts as early as the plan allows;
 *  - reductions come right after their producer, restorations after
 *    reductions at the same point. */
static void
test_structure (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (fwdbwd_graph);
  const char *params[] = { "swap.th_tts=0.001", "swap.th_s=0", NULL };
  g_autoptr (PlHistory) h = run_checked (g, "swap", params, 1e-4);
  PlStep *s = last_step (h);
  g_assert_true (s->changed);
  g_assert_cmpfloat (s->max_rel_error, ==, 0);   /* swapping is exact */
  assert_text (s->graph,
               "graph fwdbwd opset 17 {\n"
               "  input x: f32[64, 1024]\n"
               "  a1: f32[64, 1024] = Tanh(x)\n"
               "  a1_host: f32[64, 1024] = SwapOut(a1)\n"
               "  a2: f32[64, 1024] = Tanh(a1) after(serialize: a1_host)\n"
               "  a2_host: f32[64, 1024] = SwapOut(a2)\n"
               "  a3: f32[64, 1024] = Tanh(a2) after(serialize: a2_host)\n"
               "  a3_host: f32[64, 1024] = SwapOut(a3)\n"
               "  a1_in: f32[64, 1024] = SwapIn(a1_host) after(prefetch: a3)\n"
               "  a2_in: f32[64, 1024] = SwapIn(a2_host) after(prefetch: a3)\n"
               "  a4: f32[64, 1024] = Tanh(a3) after(serialize: a3_host)\n"
               "  a3_in: f32[64, 1024] = SwapIn(a3_host) after(prefetch: a4)\n"
               "  g3: f32[64, 1024] = Mul(a4, a3_in)\n"
               "  g2: f32[64, 1024] = Mul(g3, a2_in)\n"
               "  g1: f32[64, 1024] = Mul(g2, a1_in)\n"
               "  output g1\n"
               "}\n");
  assert_schedule_is_node_order (s->graph);
  PlPassReport *r = s->counters;
  g_assert_cmpint (pl_pass_report_get (r, "tensors moved"), ==, 3);
  g_assert_cmpint (pl_pass_report_get (r, "restorations"), ==, 3);
  g_assert_cmpint (pl_pass_report_get (r, "bytes swapped"), ==, 3 * 262144);
  g_assert_cmpint (pl_pass_report_get (r, "bytes compressed"), ==, 0);
  g_assert_cmpint (pl_pass_report_get (r, "serialize edges"), ==, 3);
  g_assert_cmpint (pl_pass_report_get (r, "prefetch edges"), ==, 3);
  g_assert_cmpint (pl_pass_report_get (r, "peak before"), ==, pl_history_step (h, 0)->stats.peak_bytes);
  g_assert_cmpint (pl_pass_report_get (r, "peak after"), ==, s->stats.peak_bytes);
  g_assert_cmpint (pl_pass_report_get (r, "host peak"), ==, 3 * 262144);
  /* the copies of a3 cannot hide behind one Tanh: a predicted overhead */
  g_assert_cmpint (pl_pass_report_get (r, "overhead ns"), >, 0);
  g_assert_nonnull (strstr (s->report, "a1 (256.0 KiB, slack 0.0266 ms, swap): reduced after 'a1', 'a2' "
                                       "serialized after it; restored after 'a3' for 'g1'"));
  g_assert_nonnull (strstr (s->report, "control edges added: 3 serialize, 3 prefetch"));

  /* n keeps the largest (then the longest-waiting): a1 only. */
  const char *one[] = { "swap.th_tts=0.001", "swap.th_s=0", "swap.n=1", NULL };
  g_autoptr (PlHistory) h1 = run_checked (g, "swap", one, 1e-4);
  g_assert_cmpint (pl_pass_report_get (last_step (h1)->counters, "tensors moved"), ==, 1);
  g_assert_nonnull (pl_graph_find_node (last_step (h1)->graph, "a1_host"));
  g_assert_null (pl_graph_find_node (last_step (h1)->graph, "a2_host"));

  /* The defaults (slack must hide the round trip, > 64 KiB): none waits
   * long enough here, and the graph is left as it was. */
  g_autoptr (PlHistory) h2 = run_checked (g, "swap", NULL, 1e-4);
  g_assert_false (last_step (h2)->changed);
  g_assert_cmpint (pl_pass_report_get (last_step (h2)->counters, "tensors moved"), ==, 0);

  /* An explicit prefetch distance: the swap-in waits for the node k steps
   * before the consumer (g1 is step 6; 2 before it, step 4, is g3). */
  const char *dist[] = { "swap.th_tts=0.001", "swap.th_s=0", "swap.n=1", "swap.prefetch_distance=2", NULL };
  g_autoptr (PlHistory) h3 = run_checked (g, "swap", dist, 1e-4);
  PlNode *in = pl_graph_find_node (last_step (h3)->graph, "a1_in");
  g_assert_cmpint (in->n_controls, ==, 1);
  g_assert_cmpint (in->controls[0].kind, ==, PL_CONTROL_PREFETCH);
  g_assert_cmpstr (in->controls[0].node->name, ==, "g3");
}

/* Compression: f32 -> f16 right after the producer, f16 -> f32 right before
 * the consumer (a conversion runs on the compute stream: nothing to hide
 * it behind), prefetched from the node before. Outputs stay within f16's
 * rounding (2^-11 relative), not exact. */
static void
test_compress (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (fwdbwd_graph);
  const char *params[] = { "swap.th_tts=0.001", "swap.th_s=0", "swap.mode=compress", NULL };
  g_autoptr (PlHistory) h = run_checked (g, "swap", params, 1e-3);
  PlStep *s = last_step (h);
  g_assert_cmpfloat (s->max_rel_error, >, 0);
  g_assert_cmpfloat (s->max_rel_error, <, 1e-3);
  assert_text (s->graph,
               "graph fwdbwd opset 17 {\n"
               "  input x: f32[64, 1024]\n"
               "  a1: f32[64, 1024] = Tanh(x)\n"
               "  a1_f16: f16[64, 1024] = CompressFp16(a1)\n"
               "  a2: f32[64, 1024] = Tanh(a1) after(serialize: a1_f16)\n"
               "  a2_f16: f16[64, 1024] = CompressFp16(a2)\n"
               "  a3: f32[64, 1024] = Tanh(a2) after(serialize: a2_f16)\n"
               "  a3_f16: f16[64, 1024] = CompressFp16(a3)\n"
               "  a4: f32[64, 1024] = Tanh(a3) after(serialize: a3_f16)\n"
               "  a3_restored: f32[64, 1024] = DecompressFp16(a3_f16) after(prefetch: a4)\n"
               "  g3: f32[64, 1024] = Mul(a4, a3_restored)\n"
               "  a2_restored: f32[64, 1024] = DecompressFp16(a2_f16) after(prefetch: g3)\n"
               "  g2: f32[64, 1024] = Mul(g3, a2_restored)\n"
               "  a1_restored: f32[64, 1024] = DecompressFp16(a1_f16) after(prefetch: g2)\n"
               "  g1: f32[64, 1024] = Mul(g2, a1_restored)\n"
               "  output g1\n"
               "}\n");
  g_assert_cmpint (pl_pass_report_get (s->counters, "bytes compressed"), ==, 3 * 262144);
  g_assert_cmpint (pl_pass_report_get (s->counters, "bytes swapped"), ==, 0);
  g_assert_cmpint (pl_pass_report_get (s->counters, "host peak"), ==, 0);

  /* Both: compress, then swap the f16 copy; restore by swap-in (prefetched)
   * and decompression right before the consumer. */
  const char *both[] = { "swap.th_tts=0.001", "swap.th_s=0", "swap.mode=both", "swap.n=1", NULL };
  g_autoptr (PlHistory) hb = run_checked (g, "swap", both, 1e-3);
  PlStep *b = last_step (hb);
  g_assert_cmpfloat (b->max_rel_error, >, 0);
  assert_text (b->graph,
               "graph fwdbwd opset 17 {\n"
               "  input x: f32[64, 1024]\n"
               "  a1: f32[64, 1024] = Tanh(x)\n"
               "  a1_f16: f16[64, 1024] = CompressFp16(a1)\n"
               "  a1_host: f16[64, 1024] = SwapOut(a1_f16)\n"
               "  a2: f32[64, 1024] = Tanh(a1) after(serialize: a1_host)\n"
               "  a3: f32[64, 1024] = Tanh(a2)\n"
               "  a4: f32[64, 1024] = Tanh(a3)\n"
               "  a1_in: f16[64, 1024] = SwapIn(a1_host) after(prefetch: a4)\n"
               "  g3: f32[64, 1024] = Mul(a4, a3)\n"
               "  g2: f32[64, 1024] = Mul(g3, a2)\n"
               "  a1_restored: f32[64, 1024] = DecompressFp16(a1_in)\n"
               "  g1: f32[64, 1024] = Mul(g2, a1_restored)\n"
               "  output g1\n"
               "}\n");
  g_assert_cmpint (pl_pass_report_get (b->counters, "bytes swapped"), ==, 131072);
  g_assert_cmpint (pl_pass_report_get (b->counters, "host peak"), ==, 131072);
}

/* Device bytes live while node `name` runs. */
static int64_t
live_at (const PlGraph *g, const char *name)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (PlMemoryProfile) p = pl_memory_profile (g, 1, &error);
  g_assert_no_error (error);
  for (int i = 0; i < p->n_steps; i++)
    if (strcmp (p->order[i]->name, name) == 0)
      return p->live_bytes[i];
  g_error ("no node %s", name);
  return -1;
}

/* One tensor, two consumers far apart: two restorations from the one copy
 * in host memory (seed fig. 9), each used only by its own consumer; the
 * second starts no earlier than the first consumer. */
static void
test_several_restorations (void)
{
  GString *text = g_string_new ("graph far opset 17 {\n  input x: f32[64, 1024]\n  a = Tanh(x)\n  b0 = Tanh(a)\n");
  for (int i = 1; i < 8; i++)
    g_string_append_printf (text, "  b%d = Tanh(b%d)\n", i, i - 1);
  g_string_append (text, "  u = Mul(b7, a)\n  c0 = Tanh(u)\n");
  for (int i = 1; i < 8; i++)
    g_string_append_printf (text, "  c%d = Tanh(c%d)\n", i, i - 1);
  g_string_append (text, "  w = Mul(c7, a)\n  output w\n}\n");
  g_autoptr (PlGraph) g = pl_test_parse (text->str);
  g_string_free (text, TRUE);

  const char *params[] = { "swap.th_s=0", NULL };
  g_autoptr (PlHistory) h = run_checked (g, "swap", params, 1e-4);
  PlStep *s = last_step (h);
  g_assert_cmpfloat (s->max_rel_error, ==, 0);
  g_assert_cmpint (pl_pass_report_get (s->counters, "tensors moved"), ==, 1);
  g_assert_cmpint (pl_pass_report_get (s->counters, "restorations"), ==, 2);
  PlGraph *out = s->graph;
  PlNode *u = pl_graph_find_node (out, "u"), *w = pl_graph_find_node (out, "w");
  PlNode *in1 = u->inputs[1]->producer, *in2 = w->inputs[1]->producer;
  g_assert_cmpint (in1->op, ==, PL_OP_SwapIn);
  g_assert_cmpint (in2->op, ==, PL_OP_SwapIn);
  g_assert_true (in1 != in2);
  g_assert_true (in1->inputs[0] == in2->inputs[0]);   /* the same host copy */
  g_assert_true (pl_value_on_host (in1->inputs[0]));
  g_assert_cmpint (in1->outputs[0]->n_uses, ==, 1);
  g_assert_cmpint (in2->outputs[0]->n_uses, ==, 1);
  /* the near consumer b0 keeps reading a itself */
  g_assert_cmpstr (pl_graph_find_node (out, "b0")->inputs[0]->name, ==, "a");
  /* each swap-in is prefetched from a node before its consumer: q of the
   * second lies after u */
  int n;
  g_autofree PlNode **order = pl_graph_topo_order (out, &n, NULL);
  int pos_u = -1, pos_q2 = -1, pos_w = -1, pos_in2 = -1;
  for (int i = 0; i < n; i++)
    {
      pos_u = order[i] == u ? i : pos_u;
      pos_w = order[i] == w ? i : pos_w;
      pos_in2 = order[i] == in2 ? i : pos_in2;
      pos_q2 = order[i] == in2->controls[0].node ? i : pos_q2;
    }
  g_assert_cmpint (in2->controls[0].kind, ==, PL_CONTROL_PREFETCH);
  g_assert_cmpint (pos_u, <=, pos_q2);
  g_assert_cmpint (pos_q2, <, pos_in2);
  g_assert_cmpint (pos_in2, <, pos_w);
  /* a is gone from the device between its uses: while b4 and c4 run, one
   * tensor is live instead of two (each Tanh writes over its input; the
   * peak stays: a restored copy sits beside the chain right before u and w) */
  g_assert_cmpint (live_at (pl_history_step (h, 0)->graph, "b4"), ==, 2 * 262144);
  g_assert_cmpint (live_at (out, "b4"), ==, 262144);
  g_assert_cmpint (live_at (pl_history_step (h, 0)->graph, "c4"), ==, 2 * 262144);
  g_assert_cmpint (live_at (out, "c4"), ==, 262144);
}

/* A graph output computed at the start: delivered from host memory under
 * its own name; the device copy is freed after its last device reader. */
static void
test_output_to_host (void)
{
  GString *text = g_string_new ("graph early opset 17 {\n  input x: f32[64, 1024]\n  e = Tanh(x)\n  y0 = Tanh(e)\n");
  for (int i = 1; i < 10; i++)
    g_string_append_printf (text, "  y%d = Tanh(y%d)\n", i, i - 1);
  g_string_append (text, "  output e, y9\n}\n");
  g_autoptr (PlGraph) g = pl_test_parse (text->str);
  g_string_free (text, TRUE);

  g_autoptr (PlHistory) h = run_checked (g, "swap", (const char *const[]) { "swap.th_s=0", NULL }, 1e-4);
  PlStep *s = last_step (h);
  g_assert_cmpfloat (s->max_rel_error, ==, 0);
  g_assert_cmpint (pl_pass_report_get (s->counters, "outputs to host"), ==, 1);
  g_assert_cmpint (pl_pass_report_get (s->counters, "restorations"), ==, 0);
  PlValue *e = s->graph->outputs->pdata[0];
  g_assert_cmpstr (e->name, ==, "e");
  g_assert_true (pl_value_on_host (e));
  g_assert_cmpstr (e->producer->inputs[0]->name, ==, "e_dev");
  g_assert_cmpstr (pl_graph_find_node (s->graph, "y0")->inputs[0]->name, ==, "e_dev");
  /* device: before, e lived to the end beside the chain (2 tensors: each
   * y writes over the one before); after, the chain's one (y0 writes over
   * e_dev). The peak is x beside e at the start, either way. */
  g_assert_cmpint (live_at (pl_history_step (h, 0)->graph, "y5"), ==, 2 * 262144);
  g_assert_cmpint (live_at (s->graph, "y5"), ==, 262144);
  g_assert_cmpint (live_at (s->graph, "y0"), ==, 262144);
  g_assert_cmpint (pl_history_step (h, 0)->stats.peak_bytes, ==, 2 * 262144);
  g_assert_cmpint (s->stats.peak_bytes, ==, 2 * 262144);
  g_assert_cmpint (pl_pass_report_get (s->counters, "host peak"), ==, 262144);

  /* outputs=false keeps it on the device */
  g_autoptr (PlHistory) h2 = run_checked (g, "swap", (const char *const[]) { "swap.th_s=0", "swap.outputs=false", NULL },
                                          1e-4);
  g_assert_false (last_step (h2)->changed);
}

/* The grad pass run on a sample: its last step is the training step
 * (test-pass-grad checks the pass itself). NULL, the test skipped, when
 * the sample is missing. */
static PlHistory *
training_step (const char *file)
{
  g_autofree char *path = pl_test_source_path (file);
  if (!g_file_test (path, G_FILE_TEST_EXISTS))
    {
      g_test_skip ("training sample missing");
      return NULL;
    }
  g_autoptr (GError) error = NULL;
  g_autoptr (PlGraph) g = pl_text_load (path, &error);
  g_assert_no_error (error);
  g_autoptr (PlPipeline) grad = pl_pipeline_parse ("grad", &error);
  g_assert_no_error (error);
  PlRunOptions options;
  pl_run_options_init (&options);
  PlHistory *h = pl_pipeline_run (g, grad, &options, &error);
  g_assert_no_error (error);
  return h;
}

/* budget=50% on a training step (the grad pass's output): the planned
 * device peak (host values excluded) fits, outputs stay exactly equal, and
 * the profile of the result agrees with the report. */
static void
check_budget_on (const char *file, const char *mode, double tol)
{
  g_autoptr (PlHistory) hg = training_step (file);
  if (!hg)
    return;
  g_autoptr (GError) error = NULL;
  const PlGraph *train = last_step (hg)->graph;

  g_autofree char *mode_param = g_strdup_printf ("swap.mode=%s", mode);
  const char *params[] = { "swap.budget=50%", mode_param, NULL };
  g_autoptr (PlHistory) h = run_checked (train, "swap", params, tol);
  PlStep *s = last_step (h);
  PlPassReport *r = s->counters;
  int64_t before = pl_history_step (h, 0)->stats.peak_bytes, budget = pl_pass_report_get (r, "budget");
  g_assert_cmpint (budget, ==, before / 2);
  g_assert_cmpint (pl_pass_report_get (r, "budget met"), ==, 1);
  g_assert_cmpint (pl_pass_report_get (r, "peak before"), ==, before);
  g_autoptr (PlMemoryProfile) mem = pl_memory_profile (s->graph, 1, &error);
  g_assert_no_error (error);
  g_assert_cmpint (mem->peak_bytes, ==, pl_pass_report_get (r, "peak after"));
  g_assert_cmpint (mem->peak_bytes, <=, budget);
  g_assert_cmpint (mem->host_peak_bytes, >, 0);
  if (strcmp (mode, "swap") == 0)
    g_assert_cmpfloat (s->max_rel_error, ==, 0);
  assert_schedule_is_node_order (s->graph);
  g_test_message ("%s (%s): peak %" G_GINT64_FORMAT " -> %" G_GINT64_FORMAT " bytes (budget %" G_GINT64_FORMAT
                  "), host %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT " tensors, overhead %.4f ms",
                  file, mode, before, mem->peak_bytes, budget, mem->host_peak_bytes,
                  pl_pass_report_get (r, "tensors moved"), pl_pass_report_get (r, "overhead ns") / 1e6);
}

static void
test_budget (void)
{
  check_budget_on ("data/graphs/transformer_train.graph", "swap", 1e-4);
  check_budget_on ("data/graphs/resnet_train.graph", "swap", 1e-4);
  /* (resnet's convolutions make its reference runs the slow part: one mode) */
  check_budget_on ("data/graphs/transformer_train.graph", "both", 2e-3);
}

/* A budget the graph cannot meet: the best plan is applied and the report
 * says by how much it misses. */
static void
test_budget_unreachable (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (fwdbwd_graph);
  g_autoptr (PlHistory) h = run_checked (g, "swap", (const char *const[]) { "swap.budget=1KiB", NULL }, 1e-4);
  PlStep *s = last_step (h);
  g_assert_true (s->changed);
  g_assert_cmpint (pl_pass_report_get (s->counters, "budget"), ==, 1024);
  g_assert_cmpint (pl_pass_report_get (s->counters, "budget met"), ==, 0);
  g_assert_nonnull (strstr (s->report, "budget 1.0 KiB: NOT met, the best plan is "));
  /* the floor: every step reads one tensor and writes another (g3 =
   * Mul(a4, a3) reads two and writes over one of them; a1 = Tanh(x) cannot
   * write over the graph input, so it is the first step there), and the
   * best plan reaches it */
  g_assert_cmpint (pl_pass_report_get (s->counters, "floor"), ==, 2 * 262144);
  g_assert_nonnull (strstr (s->report, "the floor is 512.0 KiB: what 'a1' alone reads and writes"));
  g_assert_cmpint (s->stats.peak_bytes, ==, 2 * 262144);
  g_assert_cmpint (s->stats.peak_bytes, <, pl_history_step (h, 0)->stats.peak_bytes);
  /* ... with the fewest tensors that reach it: a1 and a2 (a3 waits only
   * for g3, where it is read anyway) */
  g_assert_cmpint (pl_pass_report_get (s->counters, "tensors moved"), ==, 2);
  g_assert_null (pl_graph_find_node (s->graph, "a3_host"));
}

/* The floor of the ResNet training step. residual = Add(bn2, x) used to be
 * it: two activations read, a third written (3 x 784 KiB). Now residual
 * writes over bn2, which it reads last (x is a graph input, kept), so its
 * step holds no more than bn2's did; the floor is the weight gradient's
 * convolution conv2.bw_3, which reads two activations (transposed) and
 * writes a 144 KiB gradient. */
static void
test_floor_in_place (void)
{
  g_autoptr (PlHistory) hg = training_step ("data/graphs/resnet_train.graph");
  if (!hg)
    return;
  const PlGraph *train = last_step (hg)->graph;
  g_autoptr (PlHistory) h = run_checked (train, "swap", (const char *const[]) { "swap.budget=1KiB", NULL }, 1e-4);
  PlStep *s = last_step (h);
  const int64_t act = 64 * 56 * 56 * 4, wgrad = 64 * 64 * 3 * 3 * 4;
  g_assert_cmpint (pl_pass_report_get (s->counters, "budget met"), ==, 0);
  g_assert_cmpint (pl_pass_report_get (s->counters, "floor"), ==, 2 * act + wgrad);
  g_assert_cmpint (pl_pass_report_get (s->counters, "floor"), <, 3 * act);
  g_assert_nonnull (strstr (s->report, "the floor is 1.7 MiB: what 'conv2.bw_3' alone reads and writes"));
  /* in the unswapped step residual adds nothing to what bn2's step holds */
  g_assert_cmpint (live_at (train, "residual"), ==, live_at (train, "bn2"));
}

/* A restoration that waits across the step where the plan peaks is split
 * there (seed fig. 9: several restorations). a is read by u and, three
 * nodes later, by w; over a 5 GB/s link a copy takes 57 µs, longer than
 * u..w (17 µs), so one restoration would serve both, and its copy would
 * sit beside p = Concat(u, u) (u + p + a: 4 x 256 KiB). No threshold,
 * size or prefetch distance changes that: only splitting at p — a
 * second swap-in after p for w — brings the peak to 3 x 256 KiB + s. */
static void
test_tight_steps (void)
{
  GString *text = g_string_new ("graph tight opset 17 {\n  input x: f32[64, 1024]\n  a = Tanh(x)\n  c0 = Tanh(a)\n");
  for (int i = 1; i < 12; i++)
    g_string_append_printf (text, "  c%d = Tanh(c%d)\n", i, i - 1);
  g_string_append (text, "  u = Add(c11, a)\n  p = Concat(u, u) {axis=0}\n"
                         "  s = ReduceMax(p) {axes=[0], keepdims=1}\n  w = Add(s, a)\n  output w\n}\n");
  g_autoptr (PlGraph) g = pl_test_parse (text->str);
  g_string_free (text, TRUE);

  const char *params[] = { "swap.budget=800KiB", "swap.link_gbps=5", NULL };
  g_autoptr (PlHistory) h = run_checked (g, "swap", params, 1e-4);
  PlStep *s = last_step (h);
  PlPassReport *r = s->counters;
  g_assert_cmpfloat (s->max_rel_error, ==, 0);
  g_assert_cmpint (pl_pass_report_get (r, "peak before"), ==, 4 * 262144);
  g_assert_cmpint (pl_pass_report_get (r, "budget met"), ==, 1);
  g_assert_cmpint (pl_pass_report_get (r, "peak after"), ==, 3 * 262144 + 4096);
  g_assert_cmpint (pl_pass_report_get (r, "tight steps"), ==, 1);
  g_assert_cmpint (pl_pass_report_get (r, "tensors moved"), ==, 1);
  g_assert_cmpint (pl_pass_report_get (r, "restorations"), ==, 2);
  g_assert_nonnull (strstr (s->report, "restorations split at the 1 step where the plan peaked"));
  g_assert_nonnull (strstr (s->report, "restored after 'c0' for 'u'; restored after 'p' for 'w'"));

  /* the two swap-ins read one host copy; the second comes after p */
  PlGraph *out = s->graph;
  PlNode *in_u = pl_graph_find_node (out, "u")->inputs[1]->producer;
  PlNode *in_w = pl_graph_find_node (out, "w")->inputs[1]->producer;
  g_assert_cmpint (in_u->op, ==, PL_OP_SwapIn);
  g_assert_cmpint (in_w->op, ==, PL_OP_SwapIn);
  g_assert_true (in_u != in_w && in_u->inputs[0] == in_w->inputs[0]);
  g_assert_cmpstr (in_w->controls[0].node->name, ==, "p");
  assert_schedule_is_node_order (out);
  g_assert_cmpint (live_at (out, "p"), ==, 3 * 262144);
}

/* The runtime's convolution workspace (im2col, packed weights) counts in
 * the planned peak while a convolution runs, and in the floor. */
static void
test_workspace (void)
{
  g_autoptr (PlGraph) g = pl_test_parse ("graph c opset 17 {\n  input x: f32[1, 8, 32, 32]\n"
                                 "  const w: f32[8, 8, 3, 3] = random(seed=1, lo=-0.1, hi=0.1)\n"
                                 "  y = Conv(x, w) {kernel_shape=[3, 3], pads=[1, 1, 1, 1]}\n  z = Tanh(y)\n"
                                 "  output z\n}\n");
  const char *params[] = { "swap.budget=1KiB", "swap.workspace=100000", NULL };
  g_autoptr (PlHistory) h = run_checked (g, "swap", params, 1e-4);
  PlStep *s = last_step (h);
  /* the conv reads x and writes y (32 KiB each) beside its workspace */
  g_assert_cmpint (pl_pass_report_get (s->counters, "peak before"), ==, 2 * 32768 + 100000);
  g_assert_cmpint (pl_pass_report_get (s->counters, "floor"), ==, 2 * 32768 + 100000);
  g_assert_cmpint (pl_pass_report_get (s->counters, "budget met"), ==, 0);
  g_assert_nonnull (strstr (s->report, "what 'y' alone reads and writes with its workspace"));
  g_assert_nonnull (strstr (s->report, "a convolution's workspace of 97.7 KiB"));
  g_assert_false (s->changed);   /* nothing lowers it: nothing moves */
}

/* Budget syntax: sizes with units, plain bytes, a percentage; a budget the
 * graph already fits changes nothing. */
static void
test_budget_syntax (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (fwdbwd_graph);
  const struct { const char *text; int64_t bytes; } cases[] = {
    { "1.5GB", 1500000000 }, { "64MiB", 67108864 }, { "64 MiB", 67108864 }, { "1M", 1048576 },
    { "1000000", 1000000 }, { "2mb", 2000000 }, { "1T", 1099511627776 },
  };
  for (size_t i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *param = g_strdup_printf ("swap.budget=%s", cases[i].text);
      g_autoptr (PlHistory) h = run_checked (g, "swap", (const char *const[]) { param, NULL }, 1e-4);
      PlStep *s = last_step (h);
      g_assert_cmpint (pl_pass_report_get (s->counters, "budget"), ==, cases[i].bytes);
      /* all fit, without a change where the peak (1.0 MiB) fits already */
      g_assert_cmpint (pl_pass_report_get (s->counters, "budget met"), ==, 1);
      g_assert_cmpint (s->changed, ==, cases[i].bytes < pl_history_step (h, 0)->stats.peak_bytes);
    }
  /* 100% of the peak fits as it is */
  g_autoptr (PlHistory) h = run_checked (g, "swap", (const char *const[]) { "swap.budget=100%", NULL }, 1e-4);
  g_assert_false (last_step (h)->changed);
  g_assert_cmpint (pl_pass_report_get (last_step (h)->counters, "budget"), ==,
                   pl_history_step (h, 0)->stats.peak_bytes);
}

static void
expect_error (const char *param, const char *message)
{
  g_autoptr (PlGraph) g = pl_test_parse (fwdbwd_graph);
  g_autoptr (GError) error = NULL;
  g_autoptr (PlPipeline) p = pl_pipeline_parse ("swap", &error);
  g_assert_no_error (error);
  pl_pipeline_set_param (p, param, &error);
  g_assert_no_error (error);
  PlRunOptions options;
  pl_run_options_init (&options);
  g_autoptr (PlHistory) h = pl_pipeline_run (g, p, &options, &error);
  g_assert_nonnull (error);
  g_assert_nonnull (strstr (error->message, message));
  g_assert_nonnull (h->error);
}

static void
test_bad_params (void)
{
  expect_error ("swap.mode=fast", "swap.mode: 'fast' is not swap, compress or both");
  expect_error ("swap.budget=12XB", "swap.budget: '12XB' is not a size");
  expect_error ("swap.budget=-5%", "swap.budget: '-5%' is not a size");
  expect_error ("swap.budget=MiB", "is not a size");
  expect_error ("swap.n=-1", "swap.n: -1 is negative");
  expect_error ("swap.link_gbps=0", "must be positive");
}

/* The seed's model (unbounded parallelism) also drives the pass. */
static void
test_dataflow_model (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (fwdbwd_graph);
  const char *params[] = { "swap.th_tts=0.001", "swap.th_s=0", "swap.serial=false", NULL };
  g_autoptr (PlHistory) h = run_checked (g, "swap", params, 1e-4);
  PlStep *s = last_step (h);
  g_assert_true (s->changed);
  g_assert_nonnull (strstr (s->report, "mode swap, dataflow timing"));
  assert_schedule_is_node_order (s->graph);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  pl_passes_init ();
  g_test_add_func ("/Passlab/PassSwap/ops", test_ops);
  g_test_add_func ("/Passlab/PassSwap/timing-exact", test_timing_exact);
  g_test_add_func ("/Passlab/PassSwap/timing-model", test_timing_model);
  g_test_add_func ("/Passlab/PassSwap/timing-linear", test_timing_linear);
  g_test_add_func ("/Passlab/PassSwap/memory-host", test_memory_host);
  g_test_add_func ("/Passlab/PassSwap/structure", test_structure);
  g_test_add_func ("/Passlab/PassSwap/compress", test_compress);
  g_test_add_func ("/Passlab/PassSwap/several-restorations", test_several_restorations);
  g_test_add_func ("/Passlab/PassSwap/output-to-host", test_output_to_host);
  g_test_add_func ("/Passlab/PassSwap/budget", test_budget);
  g_test_add_func ("/Passlab/PassSwap/budget-unreachable", test_budget_unreachable);
  g_test_add_func ("/Passlab/PassSwap/floor-in-place", test_floor_in_place);
  g_test_add_func ("/Passlab/PassSwap/tight-steps", test_tight_steps);
  g_test_add_func ("/Passlab/PassSwap/workspace", test_workspace);
  g_test_add_func ("/Passlab/PassSwap/budget-syntax", test_budget_syntax);
  g_test_add_func ("/Passlab/PassSwap/bad-params", test_bad_params);
  g_test_add_func ("/Passlab/PassSwap/dataflow-model", test_dataflow_model);
  return g_test_run ();
}

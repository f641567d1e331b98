/* bench-memory-bound.c — memory-bound kernels on the cpu or cuda backend:
 * layer norm and softmax on [8192 x 4096] and [65536 x 256] f32, group norm
 * on [32, 64, 56, 56] (32 groups) and a bias + GELU chain on [8192 x 4096],
 * each written in the primitive ops an exporter emits, run unfused, loop-
 * fused and stitched (when the stitch pass is built in). Reports the median
 * time, the effective bandwidth (the graph's inputs, parameters and outputs
 * moved once — the convention of DESIGN.md §1.3) and that bandwidth as a
 * share of the machine's copy bandwidth: memcpy on as many threads as the
 * kernels use (cpu), a device-to-device copy (cuda).
 *
 *   bench-memory-bound [--backend cpu|cuda] [--repeat N] [--threads N] [--quick] [--only NAME] [--json OUT.json]
 *
 * --quick shrinks every shape 16x (a smoke test). The variants of a
 * workload run round-robin (one timed run each per round, after a warm-up
 * run), so load on a shared machine hits them alike; min ms is the best
 * round. The fused variants' outputs are compared with the unfused ones
 * (max |a - b| / max |b|). */
#define G_LOG_DOMAIN "passlab"
#include "backend.h"
#include "builtin-passes.h"
#include "interp.h"
#include "pass-manager.h"
#include "runtime.h"
#include "schedule.h"
#include "stats.h"
#include "text-format.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

typedef struct {
  const char *name;
  char       *text;
} Workload;

static double
now_s (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

typedef struct {
  char       *dst;
  const char *src;
  size_t      n;
} CopySlice;

static gpointer
copy_slice (gpointer data)
{
  CopySlice *c = data;
  memcpy (c->dst, c->src, c->n);
  return NULL;
}

/* memcpy of a 512 MiB buffer split over `threads` threads, best of 5,
 * counting the read and the write (glibc's memcpy streams copies this
 * large: no read for ownership, the least traffic a copy can make). */
static double
memcpy_gbps (int threads)
{
  size_t n = (size_t) 512 << 20, slice = n / (size_t) threads;
  char *a = g_malloc (n), *b = g_malloc (n);
  memset (a, 1, n);
  memset (b, 2, n);
  double best = 1e9;
  for (int i = 0; i < 5; i++)
    {
      CopySlice c[64];
      GThread *t[64];
      double t0 = now_s ();
      for (int k = 0; k < threads; k++)
        {
          c[k] = (CopySlice) { b + k * slice, a + k * slice, slice };
          t[k] = g_thread_new ("memcpy", copy_slice, &c[k]);
        }
      for (int k = 0; k < threads; k++)
        g_thread_join (t[k]);
      best = MIN (best, now_s () - t0);
    }
  volatile char sink = b[n / 2];
  (void) sink;
  g_free (a);
  g_free (b);
  return 2.0 * (double) (slice * (size_t) threads) / best / 1e9;
}

static char *
layer_norm (int64_t rows, int64_t cols)
{
  return g_strdup_printf (
    "graph layer_norm_%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT " opset 17 {\n"
    "  input x: f32[%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]\n"
    "  const two: f32[] = 2.0\n  const eps: f32[] = 1e-05\n"
    "  const weight: f32[%" G_GINT64_FORMAT "] = random(seed=1, lo=0.5, hi=1.5)\n"
    "  const bias: f32[%" G_GINT64_FORMAT "] = random(seed=2, lo=-0.5, hi=0.5)\n"
    "  mean = ReduceMean(x) {axes=[-1], keepdims=1}\n  d = Sub(x, mean)\n  d2 = Pow(d, two)\n"
    "  var = ReduceMean(d2) {axes=[-1], keepdims=1}\n  var_eps = Add(var, eps)\n  std = Sqrt(var_eps)\n"
    "  normalized = Div(d, std)\n  scaled = Mul(normalized, weight)\n  out = Add(scaled, bias)\n  output out\n}\n",
    rows, cols, rows, cols, cols, cols);
}

static char *
softmax (int64_t rows, int64_t cols)
{
  return g_strdup_printf (
    "graph softmax_%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT " opset 17 {\n"
    "  input logits: f32[%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]\n  const last: i64[1] = [-1]\n"
    "  row_max = ReduceMax(logits) {axes=[-1], keepdims=1}\n  shifted = Sub(logits, row_max)\n  e = Exp(shifted)\n"
    "  row_sum = ReduceSum(e, last) {keepdims=1}\n  probs = Div(e, row_sum)\n  output probs\n}\n",
    rows, cols, rows, cols);
}

/* NCHW group norm as exporters write it: reshape to [N, G, C/G*H*W], row statistics, reshape back. */
static char *
group_norm (int64_t n, int64_t c, int64_t h, int64_t w, int64_t groups)
{
  int64_t per = c / groups * h * w;
  return g_strdup_printf (
    "graph group_norm opset 17 {\n"
    "  input x: f32[%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]\n"
    "  const grouped_shape: i64[3] = [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]\n"
    "  const image_shape: i64[4] = [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]\n"
    "  const eps: f32[] = 1e-05\n"
    "  const gamma: f32[%" G_GINT64_FORMAT ", 1, 1] = random(seed=3, lo=0.5, hi=1.5)\n"
    "  const beta: f32[%" G_GINT64_FORMAT ", 1, 1] = random(seed=4, lo=-0.5, hi=0.5)\n"
    "  grouped = Reshape(x, grouped_shape)\n  mean = ReduceMean(grouped) {axes=[2], keepdims=1}\n"
    "  centered = Sub(grouped, mean)\n  squared = Mul(centered, centered)\n"
    "  var = ReduceMean(squared) {axes=[2], keepdims=1}\n  var_eps = Add(var, eps)\n  std = Sqrt(var_eps)\n"
    "  normalized = Div(centered, std)\n  image = Reshape(normalized, image_shape)\n"
    "  scaled = Mul(image, gamma)\n  out = Add(scaled, beta)\n  output out\n}\n",
    n, c, h, w, n, groups, per, n, c, h, w, c, c);
}

/* x + bias, then GELU in its tanh form written out (GPT-2, BERT exports). */
static char *
gelu_bias (int64_t rows, int64_t cols)
{
  return g_strdup_printf (
    "graph gelu_bias opset 17 {\n"
    "  input x: f32[%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]\n"
    "  const b: f32[%" G_GINT64_FORMAT "] = random(seed=5, lo=-0.1, hi=0.1)\n"
    "  const half: f32[] = 0.5\n  const one: f32[] = 1.0\n  const cubic: f32[] = 0.044715\n"
    "  const three: f32[] = 3.0\n  const k: f32[] = 0.7978846\n"
    "  h = Add(x, b)\n  h3 = Pow(h, three)\n  h3c = Mul(h3, cubic)\n  inner = Add(h, h3c)\n  scaled = Mul(inner, k)\n"
    "  t = Tanh(scaled)\n  one_plus_t = Add(t, one)\n  half_h = Mul(h, half)\n  y = Mul(half_h, one_plus_t)\n"
    "  output y\n}\n",
    rows, cols, cols);
}

static const struct {
  const char *name;
  const char *passes;
  const char *needs;
} variants[] = {
  { "none", NULL, NULL },
  { "loops", "simplify,decompose,reshape-sink,fuse-library,fuse-loops", "fuse-loops" },
  /* no reshape-sink: inside one stitched kernel a reshape is an index
   * function and costs nothing, while sinking splits group norm's row
   * statistics into per-channel and per-group reductions of different rows
   * (5 launches instead of 1) */
  { "stitch", "simplify,decompose,fuse-library,stitch", "stitch" },
};

static PlGraph *
apply (const PlGraph *g, const char *spec)
{
  if (!spec)
    return pl_graph_copy (g);
  g_autoptr (GError) error = NULL;
  g_autoptr (PlPipeline) p = pl_pipeline_parse (spec, &error);
  PlRunOptions o;
  pl_run_options_init (&o);
  g_autoptr (PlHistory) h = p ? pl_pipeline_run (g, p, &o, &error) : NULL;
  if (!h || h->error)
    g_error ("%s: %s", spec, error ? error->message : h->error);
  return pl_graph_copy (pl_history_step (h, pl_history_n_steps (h) - 1)->graph);
}

typedef struct {
  const char   *name;
  PlGraph      *graph;
  PlExecutable *exe;
  double       *ms;          /* per round */
  int           n_kernels, launches;
  double        err;         /* against the first variant */
} Variant;

static double
rel_error (PlTensor *a, PlTensor *b)
{
  double diff = 0, scale = 0;
  const float *x = a->data, *y = b->data;
  for (int64_t i = 0; i < a->numel; i++)
    {
      diff = MAX (diff, fabs ((double) x[i] - y[i]));
      scale = MAX (scale, fabs ((double) y[i]));
    }
  return diff / MAX (scale, 1e-30);
}

int
main (int argc, char **argv)
{
  int repeat = 10, threads = 0;
  gboolean quick = FALSE;
  g_autofree char *only = NULL, *json_path = NULL, *backend_name = NULL;
  const GOptionEntry entries[] = {
    { "backend", 'b', 0, G_OPTION_ARG_STRING, &backend_name, "cpu (default) or cuda", "B" },
    { "repeat", 'n', 0, G_OPTION_ARG_INT, &repeat, "Timed runs per variant (default 10)", "N" },
    { "threads", 't', 0, G_OPTION_ARG_INT, &threads, "OpenMP threads (default: all cores)", "N" },
    { "quick", 'q', 0, G_OPTION_ARG_NONE, &quick, "Shapes 16x smaller (a smoke test)", NULL },
    { "only", 0, 0, G_OPTION_ARG_STRING, &only, "Only workloads whose name contains this", "NAME" },
    { "json", 0, 0, G_OPTION_ARG_FILENAME, &json_path, "Write the results as JSON", "OUT.json" },
    { NULL },
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("- memory-bound kernels on the cpu or cuda backend");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (ctx, &argc, &argv, &error))
    {
      g_printerr ("%s\n", error->message);
      return 1;
    }
  pl_passes_init ();
  PlBackend backend = PL_BACKEND_CPU;
  if (backend_name && !pl_backend_from_name (backend_name, &backend))
    {
      g_printerr ("--backend: '%s' is neither cpu nor cuda\n", backend_name);
      return 1;
    }
  g_autofree char *why = NULL;
  if (!pl_backend_available (backend, &why))
    {
      g_printerr ("the %s backend is not available: %s\n", pl_backend_name (backend), why);
      return 1;
    }
  int64_t q = quick ? 16 : 1;
  Workload w[] = {
    { "layer_norm 8192x4096", layer_norm (8192 / q, 4096) },
    { "layer_norm 65536x256", layer_norm (65536 / q, 256) },
    { "softmax 8192x4096", softmax (8192 / q, 4096) },
    { "softmax 65536x256", softmax (65536 / q, 256) },
    { "group_norm 32x64x56x56 (G=32)", group_norm (32 / (quick ? 8 : 1), 64, 56, 56, 32) },
    { "bias+gelu 8192x4096", gelu_bias (8192 / q, 4096) },
  };
  const char *build = g_getenv ("PASSLAB_BUILD_DIR");
  g_autofree char *cache = g_build_filename (build ? build : g_get_tmp_dir (), "kernel-cache-bench", NULL);

  int n_threads = CLAMP (threads > 0 ? threads : (int) g_get_num_processors (), 1, 64);
  double bw1 = 0, bw = 0;
  bool emulated = false;
  if (backend == PL_BACKEND_CUDA)
    {
      PlCudaContext *cuda = pl_cuda_get (&error);
      emulated = cuda && pl_cuda_emulated (cuda);
      if (!cuda || !pl_cuda_copy_gbps (cuda, (size_t) 512 << 20, &bw, &error))
        g_error ("%s", error->message);
      bw1 = bw;
      printf ("%s, %d SMs%s; device-to-device copy bandwidth (read + write, 512 MiB, best of 5): %.2f GB/s; "
              "median of %d runs\n\n", pl_cuda_device_name (cuda), pl_cuda_sm_count (cuda),
              pl_cuda_emulated (cuda) ? " (the CUDA emulator: the errors are real, every time is the CPU's)" : "",
              bw, repeat);
    }
  else
    {
      bw1 = memcpy_gbps (1);
      bw = memcpy_gbps (n_threads);
      printf ("memcpy bandwidth (read + write, 512 MiB, best of 5): %.2f GB/s on %d threads (%.2f GB/s on 1); "
              "median of %d runs\n\n", bw, n_threads, bw1, repeat);
    }
  printf ("%-30s %-7s %8s %9s %11s %11s %9s %8s %9s %10s\n", "workload", "variant", "kernels", "launches",
          "median ms", "min ms", "GB/s", "% copy", "speed-up", "max error");
  GString *json = g_string_new (NULL);
  g_string_append_printf (json, "{\"backend\": \"%s\", \"emulated\": %s, \"copy_gbps\": %.3f, "
                          "\"copy_1thread_gbps\": %.3f, \"threads\": %d, \"results\": [", pl_backend_name (backend),
                          emulated ? "true" : "false", bw, bw1, n_threads);
  bool first_json = true;

  for (size_t k = 0; k < G_N_ELEMENTS (w); k++)
    {
      if (only && !strstr (w[k].name, only))
        continue;
      g_autoptr (PlGraph) g = pl_text_parse (w[k].text, -1, w[k].name, &error);
      if (!g)
        g_error ("%s", error->message);
      PlTensor **in = pl_random_inputs (g, 1, 1, &error);
      int64_t bytes = pl_graph_param_bytes (g);
      for (guint i = 0; i < g->inputs->len; i++)
        bytes += pl_value_bytes (g->inputs->pdata[i], 1, NULL);
      for (guint i = 0; i < g->outputs->len; i++)
        bytes += pl_value_bytes (g->outputs->pdata[i], 1, NULL);
      /* the variants run round-robin, one timed run each per round, so a
       * burst of load on a shared machine slows them all alike */
      Variant vs[G_N_ELEMENTS (variants)];
      int nv = 0;
      for (size_t v = 0; v < G_N_ELEMENTS (variants); v++)
        {
          if (variants[v].needs && !pl_pass_find (variants[v].needs))
            {
              printf ("%-30s %-7s skipped: no '%s' pass in this build\n", w[k].name, variants[v].name, variants[v].needs);
              continue;
            }
          vs[nv] = (Variant) { .name = variants[v].name, .ms = g_new0 (double, repeat) };
          vs[nv].graph = apply (g, variants[v].passes);
          PlCompileOptions o;
          pl_compile_options_init (&o, backend);
          o.cache_dir = cache;
          o.threads = backend == PL_BACKEND_CPU ? threads : 0;
          vs[nv].exe = pl_executable_new (vs[nv].graph, &o, &error);
          if (!vs[nv].exe)
            g_error ("%s", error->message);
          nv++;
        }
      PlTensor *base_out = NULL;
      for (int round = 0; round < repeat; round++)
        for (int v = 0; v < nv; v++)
          {
            g_autoptr (PlRunReport) r = NULL;
            PlTensor **out = pl_executable_run (vs[v].exe, in, 1, &r, &error);
            if (!out)
              g_error ("%s", error->message);
            vs[v].ms[round] = r->total_ms;
            vs[v].n_kernels = r->n_kernels;
            vs[v].launches = 0;
            for (int i = 0; i < r->n_kernels; i++)
              vs[v].launches += r->kernels[i].n_launches;
            if (round == 0)
              {
                if (!base_out)
                  base_out = pl_tensor_ref (out[0]);
                vs[v].err = rel_error (out[0], base_out);
              }
            pl_interp_free_outputs (out, (int) vs[v].graph->outputs->len);
          }
      double base_ms = nv ? pl_median_sort (vs[0].ms, repeat) : 0;
      for (int v = 0; v < nv; v++)
        {
          double med = pl_median_sort (vs[v].ms, repeat), min_ms = vs[v].ms[0];   /* sorted by pl_median_sort */
          double gbps = (double) bytes / (med * 1e6);
          printf ("%-30s %-7s %8d %9d %11.3f %11.3f %9.2f %7.1f%% %8.2fx %10.2g\n", w[k].name, vs[v].name,
                  vs[v].n_kernels, vs[v].launches, med, min_ms, gbps, 100 * gbps / bw, base_ms / med, vs[v].err);
          g_string_append_printf (json, "%s\n  {\"workload\": \"%s\", \"variant\": \"%s\", \"kernels\": %d, "
                                  "\"launches\": %d, \"median_ms\": %.4f, \"min_ms\": %.4f, \"gbps\": %.3f, "
                                  "\"speedup\": %.3f, \"max_error\": %.3g}",
                                  first_json ? "" : ",", w[k].name, vs[v].name, vs[v].n_kernels, vs[v].launches, med,
                                  min_ms, gbps, base_ms / med, vs[v].err);
          first_json = false;
          pl_executable_free (vs[v].exe);
          pl_graph_free (vs[v].graph);
          g_free (vs[v].ms);
        }
      if (base_out)
        pl_tensor_unref (base_out);
      pl_interp_free_outputs (in, (int) g->inputs->len);
      fflush (stdout);
    }
  g_string_append (json, "\n]}\n");
  if (json_path && !g_file_set_contents (json_path, json->str, -1, &error))
    g_printerr ("%s\n", error->message);
  g_string_free (json, TRUE);
  for (size_t k = 0; k < G_N_ELEMENTS (w); k++)
    g_free (w[k].text);
  return 0;
}

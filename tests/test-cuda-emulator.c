/* test-cuda-emulator.c — the CUDA emulator (PASSLAB_CUDA=emulator,
 * kernels/cuda-emulator.c) on hand-written kernels: what CUDA promises
 * holds (every thread of a 3-d grid of 3-d blocks runs once with its own
 * indices; __syncthreads orders shared-memory writes before reads; dynamic
 * shared memory; xor shuffles within a warp), a missing barrier shows in
 * wrong results (odd blocks run their threads in reverse), and what would be undefined
 * on a GPU is an error of the launch that says what happened (a barrier
 * some threads skipped, a shuffle part of a warp skipped). The generated
 * kernels of the samples, the layouts and random graphs run on it in
 * kernels-cuda-emulated and kernels-layout-emulated (meson.build). */
#include "codegen.h"
#include "runtime-private.h"
#include "test-util.h"

#include <math.h>
#include <string.h>

static PlCudaContext *
context (void)
{
  g_autoptr (GError) error = NULL;
  PlCudaContext *c = pl_cuda_get (&error);
  g_assert_no_error (error);
  g_assert_true (pl_cuda_emulated (c));
  return c;
}

/* Builds source, launches kernel `name` with (grid, block, shared) over
 * `ints` ints of device memory (filled with -1), and returns them (free);
 * NULL with *error set when the launch fails. */
static int *
launch (const char *source, const char *name, const unsigned grid[3], const unsigned block[3], int shared,
        int ints, GError **error)
{
  PlCudaContext *c = context ();
  const char *kernels[] = { name, NULL };
  gpointer m = pl_cuda_module_build (c, source, kernels, error);
  g_assert_no_error (*error);
  gpointer fn = pl_cuda_function (c, m, name, error);
  g_assert_no_error (*error);
  guint64 buf = pl_cuda_alloc (c, sizeof (int) * (size_t) ints, error);
  int *host = g_new (int, ints);
  memset (host, 0xff, sizeof (int) * (size_t) ints);
  g_assert_true (pl_cuda_upload (c, buf, host, sizeof (int) * (size_t) ints, error));
  PlCudaLaunch l = { .entry = (char *) name, .grid = grid[0], .grid_yz = { grid[1], grid[2] }, .block = (int) block[0],
                     .block_yz = { (int) block[1], (int) block[2] }, .shared_bytes = shared };
  void *params[] = { &buf };
  bool ok = pl_cuda_launch (c, fn, &l, params, error) && pl_cuda_download (c, host, buf, sizeof (int) * (size_t) ints, error);
  pl_cuda_free (c, buf);
  if (!ok)
    g_clear_pointer (&host, g_free);
  return host;
}

/* Each thread of a 2x3x2 grid of 8x4x2 blocks writes its flat block and
 * thread index; every slot is written exactly once. */
static void
test_indices (void)
{
  const char *src =
    "extern \"C\" __global__ void ids (int *out)\n{\n"
    "  int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);\n"
    "  int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);\n"
    "  int n = blockDim.x * blockDim.y * blockDim.z;\n"
    "  out[b * n + t] = out[b * n + t] == -1 ? b * 1000 + t : -2;\n}\n";
  g_autoptr (GError) error = NULL;
  const unsigned grid[3] = { 2, 3, 2 }, block[3] = { 8, 4, 2 };
  g_autofree int *out = launch (src, "ids", grid, block, 0, 12 * 64, &error);
  g_assert_no_error (error);
  for (int b = 0; b < 12; b++)
    for (int t = 0; t < 64; t++)
      g_assert_cmpint (out[b * 64 + t], ==, b * 1000 + t);
}

/* A block reverses its slice through static and dynamic shared memory:
 * each thread reads what another wrote before the barrier. Two rounds
 * reuse the buffers, so a barrier at the end of a round matters too. */
static void
test_barrier_and_shared (void)
{
  const char *src =
    "extern \"C\" __global__ void __launch_bounds__ (128) rev (int *out)\n{\n"
    "  __shared__ int s[128];\n  extern __shared__ int dyn[];\n"
    "  const int t = threadIdx.x, n = blockDim.x;\n"
    "  for (int round = 0; round < 2; round++)\n  {\n"
    "    s[t] = blockIdx.x * n + t + round;\n    __syncthreads ();\n"
    "    dyn[t] = s[n - 1 - t];\n    __syncthreads ();\n"
    "    out[(round * gridDim.x + blockIdx.x) * n + t] = dyn[(t + 1) % n];\n    __syncthreads ();\n  }\n}\n";
  g_autoptr (GError) error = NULL;
  const unsigned grid[3] = { 3, 1, 1 }, block[3] = { 128, 1, 1 };
  g_autofree int *out = launch (src, "rev", grid, block, 128 * 4, 2 * 3 * 128, &error);
  g_assert_no_error (error);
  for (int round = 0; round < 2; round++)
    for (int b = 0; b < 3; b++)
      for (int t = 0; t < 128; t++)
        g_assert_cmpint (out[(round * 3 + b) * 128 + t], ==, b * 128 + (127 - (t + 1) % 128) + round);
}

/* A missing barrier shows: each thread reads what the thread before it
 * wrote to shared memory, with no __syncthreads between. Block 0 runs its
 * threads in order and happens to read the right values; block 1 runs them
 * in reverse, and reads before the writes. */
static void
test_missing_barrier (void)
{
  const char *src =
    "extern \"C\" __global__ void racy (int *out)\n{\n"
    "  __shared__ int s[64];\n  const int t = threadIdx.x;\n"
    "  s[t] = blockIdx.x * 100 + t;\n"
    "  out[blockIdx.x * 64 + t] = t > 0 ? s[t - 1] : blockIdx.x * 100 - 1;\n}\n";
  g_autoptr (GError) error = NULL;
  const unsigned grid[3] = { 2, 1, 1 }, block[3] = { 64, 1, 1 };
  g_autofree int *out = launch (src, "racy", grid, block, 0, 2 * 64, &error);
  g_assert_no_error (error);
  int wrong[2] = { 0, 0 };
  for (int b = 0; b < 2; b++)
    for (int t = 0; t < 64; t++)
      wrong[b] += out[b * 64 + t] != b * 100 + t - 1;
  g_assert_cmpint (wrong[0], ==, 0);
  g_assert_cmpint (wrong[1], >=, 32);
}

/* The prelude's grid barrier in a cooperative launch: every block writes
 * its index, the grid synchronizes, and every block then reads all of them
 * (its first 16 bytes are the barrier's counters, zeroed by the launch).
 * Launched the ordinary way, the barrier is an error, not a deadlock. */
static void
test_grid_barrier (void)
{
  g_autofree char *prelude = pl_codegen_cuda_prelude ();
  g_autofree char *src = g_strconcat (prelude,
    "extern \"C\" __global__ void gsum (int *out)\n{\n"
    "  int *ids = out + 4, *sums = out + 4 + gridDim.x;\n"
    "  if (threadIdx.x == 0) ids[blockIdx.x] = blockIdx.x + 1;\n"
    "  pl_grid_sync ((unsigned int *) out);\n"
    "  int s = 0;\n  for (int b = 0; b < (int) gridDim.x; b++) s += ids[b];\n"
    "  if (threadIdx.x == 0) sums[blockIdx.x] = s;\n}\n", NULL);
  PlCudaContext *c = context ();
  g_autoptr (GError) error = NULL;
  const char *kernels[] = { "gsum", NULL };
  gpointer m = pl_cuda_module_build (c, src, kernels, &error);
  g_assert_no_error (error);
  gpointer fn = pl_cuda_function (c, m, "gsum", &error);
  g_assert_no_error (error);
  const int blocks = 5, n = 4 + 2 * blocks;
  guint64 buf = pl_cuda_alloc (c, sizeof (int) * n, &error);
  g_assert_no_error (error);
  for (int cooperative = 1; cooperative >= 0; cooperative--)
    {
      PlCudaLaunch l = { .entry = (char *) "gsum", .grid = blocks, .block = 64, .cooperative = cooperative,
                         .n_params = 1 };
      void *params[] = { &buf };
      bool ok = pl_cuda_launch (c, fn, &l, params, &error);
      if (!cooperative)
        {
          g_assert_false (ok);
          g_assert_error (error, PL_ERROR, PL_ERROR_EXEC);
          g_assert_nonnull (strstr (error->message, "grid barrier in a launch that is not cooperative"));
          g_clear_error (&error);
          continue;
        }
      g_assert_no_error (error);
      int host[4 + 2 * 5];
      g_assert_true (pl_cuda_download (c, host, buf, sizeof host, &error));
      for (int b = 0; b < blocks; b++)
        g_assert_cmpint (host[4 + blocks + b], ==, blocks * (blocks + 1) / 2);
      g_assert_cmpint (host[0], ==, 0);   /* the arrival counter is back at zero */
    }
  pl_cuda_free (c, buf);
}

/* A butterfly of xor shuffles: every lane ends with its warp's sum, in
 * ints, floats and doubles. */
static void
test_shuffle (void)
{
  const char *src =
    "extern \"C\" __global__ void sum (int *out)\n{\n"
    "  int v = threadIdx.x; float f = threadIdx.x; double d = threadIdx.x;\n"
    "  for (int o = 16; o > 0; o >>= 1) {\n"
    "    v += __shfl_xor_sync (0xffffffffu, v, o);\n    f += __shfl_xor_sync (0xffffffffu, f, o);\n"
    "    d += __shfl_xor_sync (0xffffffffu, d, o);\n  }\n"
    "  out[threadIdx.x] = v == (int) f && v == (int) d ? v : -3;\n}\n";
  g_autoptr (GError) error = NULL;
  const unsigned grid[3] = { 1, 1, 1 }, block[3] = { 64, 1, 1 };
  g_autofree int *out = launch (src, "sum", grid, block, 0, 64, &error);
  g_assert_no_error (error);
  for (int t = 0; t < 64; t++)
    g_assert_cmpint (out[t], ==, t < 32 ? 31 * 32 / 2 : (32 + 63) * 32 / 2);
}

/* Undefined on a GPU, an error here: the launch fails and says which
 * block and what went wrong. */
static void
test_divergence (void)
{
  const unsigned grid[3] = { 2, 1, 1 }, block[3] = { 64, 1, 1 };
  g_autoptr (GError) error = NULL;
  int *out = launch ("extern \"C\" __global__ void early (int *out)\n{\n"
                     "  if (blockIdx.x == 1 && threadIdx.x == 5) return;\n  __syncthreads ();\n"
                     "  out[threadIdx.x] = 1;\n}\n",
                     "early", grid, block, 0, 64, &error);
  g_assert_null (out);
  g_assert_error (error, PL_ERROR, PL_ERROR_EXEC);
  g_assert_nonnull (strstr (error->message, "cuLaunchKernel (early)"));
  g_assert_nonnull (strstr (error->message, "block (1, 0, 0)"));
  g_assert_nonnull (strstr (error->message, "__syncthreads"));
  g_clear_error (&error);

  out = launch ("extern \"C\" __global__ void half (int *out)\n{\n  int v = threadIdx.x;\n"
                "  if (threadIdx.x % 32 < 16) v = __shfl_xor_sync (0xffffffffu, v, 1);\n  out[threadIdx.x] = v;\n}\n",
                "half", grid, block, 0, 64, &error);
  g_assert_null (out);
  g_assert_error (error, PL_ERROR, PL_ERROR_EXEC);
  g_assert_nonnull (strstr (error->message, "block (0, 0, 0)"));
  g_assert_nonnull (strstr (error->message, "warp shuffle that some threads of the warp did not reach"));
}

/* Fresh device memory reads as NaN (every byte 0xff), so a kernel that
 * reads what nobody wrote shows it; a missing kernel is a clear error. */
static void
test_memory_and_lookup (void)
{
  PlCudaContext *c = context ();
  g_autoptr (GError) error = NULL;
  guint64 buf = pl_cuda_alloc (c, 64, &error);
  g_assert_no_error (error);
  float got[16];
  g_assert_true (pl_cuda_download (c, got, buf, sizeof got, &error));
  for (int i = 0; i < 16; i++)
    g_assert_true (isnan (got[i]));
  pl_cuda_free (c, buf);

  const char *kernels[] = { "k", NULL };
  gpointer m = pl_cuda_module_build (c, "extern \"C\" __global__ void k (int *out) { out[0] = 1; }\n", kernels, &error);
  g_assert_no_error (error);
  g_assert_null (pl_cuda_function (c, m, "nope", &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_EXEC);
  g_assert_nonnull (strstr (error->message, "no kernel nope"));
  g_clear_error (&error);
  /* code that does not compile: the compiler's message, naming the file */
  g_assert_null (pl_cuda_module_build (c, "extern \"C\" __global__ void k (int *out) { out[0] = undefined_name; }\n",
                                       kernels, &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_EXEC);
  g_assert_nonnull (strstr (error->message, "undefined_name"));
}

/* The emulator's device header is precompiled once in the module cache
 * (this test's own, set in main) and every module's source includes it;
 * a precompiled header the compiler cannot read (here: garbage) costs
 * time, never a result. */
static void
test_precompiled_header (void)
{
  PlCudaContext *c = context ();
  g_autoptr (GError) error = NULL;
  const char *kernels[] = { "k", NULL };
  gpointer m = pl_cuda_module_build (c, "extern \"C\" __global__ void k (int *out) { out[threadIdx.x] = 7; }\n",
                                     kernels, &error);
  g_assert_no_error (error);
  g_assert_nonnull (m);
  g_autofree char *dir = g_build_filename (g_get_user_cache_dir (), "passlab", "kernels", NULL);
  g_autoptr (GDir) d = g_dir_open (dir, 0, &error);
  g_assert_no_error (error);
  g_autofree char *gch = NULL, *module_source = NULL;
  int headers = 0;
  for (const char *name; (name = g_dir_read_name (d));)
    if (g_str_has_suffix (name, ".h.gch"))
      gch = g_build_filename (dir, name, NULL);
    else if (g_str_has_suffix (name, ".h"))
      headers++;
    else if (g_str_has_suffix (name, ".cc"))
      module_source = g_build_filename (dir, name, NULL);
  g_assert_cmpint (headers, ==, 1);
  g_assert_nonnull (gch);
  g_assert_nonnull (module_source);
  g_autofree char *text = NULL;
  g_assert_true (g_file_get_contents (module_source, &text, NULL, NULL));
  g_assert_true (g_str_has_prefix (text, "#include \"h"));
  g_assert_null (strstr (text, "namespace pl_emu"));   /* the header is not copied in */

  g_assert_true (g_file_set_contents (gch, "garbage", -1, NULL));
  const unsigned one[3] = { 1, 1, 1 }, block[3] = { 4, 1, 1 };
  g_autofree int *out = launch ("extern \"C\" __global__ void k2 (int *out) { out[threadIdx.x] = 5; }\n", "k2", one,
                                block, 0, 4, &error);
  g_assert_no_error (error);
  for (int i = 0; i < 4; i++)
    g_assert_cmpint (out[i], ==, 5);
}

/* Files in dir ending in suffix. */
static int
count_files (const char *dir, const char *suffix)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  int n = 0;
  for (const char *name; d && (name = g_dir_read_name (d));)
    n += g_str_has_suffix (name, suffix);
  return n;
}

/* NVRTC's PTX is kept in the kernel cache under the hash of its version,
 * options and source: the second compile of a source reads it back; another
 * arch is another file; a file that is not PTX (cut short, overwritten) is
 * compiled again; a source NVRTC refuses leaves nothing behind. Building a
 * module (here on the emulator, which has NVRTC check the code) fills the
 * same cache. */
static void
test_ptx_cache (void)
{
  g_autofree char *reason = NULL;
  if (!pl_nvrtc_available (&reason))
    {
      g_test_skip (reason);
      return;
    }
  g_autofree char *dir = g_dir_make_tmp ("passlab-ptx-XXXXXX", NULL);
  g_autoptr (GError) error = NULL;
  const char *src = "extern \"C\" __global__ void k (int *out) { out[threadIdx.x] = 3; }\n";
  bool hit = true;
  size_t size = 0;
  g_autofree char *first = pl_nvrtc_compile (src, "compute_90", dir, &hit, &size, &error);
  g_assert_no_error (error);
  g_assert_false (hit);
  g_assert_cmpuint (size, ==, strlen (first));
  g_assert_cmpint (count_files (dir, ".ptx"), ==, 1);
  g_autofree char *again = pl_nvrtc_compile (src, "compute_90", dir, &hit, &size, &error);
  g_assert_no_error (error);
  g_assert_true (hit);
  g_assert_cmpstr (again, ==, first);

  g_autofree char *other = pl_nvrtc_compile (src, "compute_80", dir, &hit, NULL, &error);
  g_assert_no_error (error);
  g_assert_false (hit);
  g_assert_cmpint (count_files (dir, ".ptx"), ==, 2);

  /* overwrite both files: each is compiled again, and rewritten */
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  for (const char *name; (name = g_dir_read_name (d));)
    {
      g_autofree char *path = g_build_filename (dir, name, NULL);
      g_assert_true (g_file_set_contents (path, "//\n// cut sh", -1, NULL));
    }
  g_autofree char *redone = pl_nvrtc_compile (src, "compute_90", dir, &hit, NULL, &error);
  g_assert_no_error (error);
  g_assert_false (hit);
  g_assert_cmpstr (redone, ==, first);
  g_free (pl_nvrtc_compile (src, "compute_90", dir, &hit, NULL, &error));
  g_assert_true (hit);

  g_assert_null (pl_nvrtc_compile ("__global__ void bad (int *o) { o[0] = nope; }\n", "compute_90", dir, &hit, NULL,
                                   &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_EXEC);
  g_clear_error (&error);
  g_assert_cmpint (count_files (dir, ".ptx"), ==, 2);
  pl_test_remove_tree (dir);

  /* the module builds of this test binary went through the user cache (main's) */
  g_autofree char *user = g_build_filename (g_get_user_cache_dir (), "passlab", "kernels", NULL);
  const int before = count_files (user, ".ptx");
  PlCudaContext *c = context ();
  const char *kernels[] = { "k_ptx_cache", NULL };
  g_assert_nonnull (pl_cuda_module_build (c, "extern \"C\" __global__ void k_ptx_cache (int *o) { o[0] = 1; }\n",
                                          kernels, &error));
  g_assert_no_error (error);
  g_assert_cmpint (count_files (user, ".ptx"), ==, before + 1);
}

int
main (int argc, char **argv)
{
  g_setenv ("PASSLAB_CUDA", "emulator", TRUE);
  /* a module cache of its own, so that precompiled-header sees what a fresh machine does */
  g_autofree char *cache = g_dir_make_tmp ("passlab-emulator-XXXXXX", NULL);
  g_setenv ("XDG_CACHE_HOME", cache, TRUE);
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/Passlab/CudaEmulator/indices", test_indices);
  g_test_add_func ("/Passlab/CudaEmulator/barrier-and-shared", test_barrier_and_shared);
  g_test_add_func ("/Passlab/CudaEmulator/missing-barrier", test_missing_barrier);
  g_test_add_func ("/Passlab/CudaEmulator/shuffle", test_shuffle);
  g_test_add_func ("/Passlab/CudaEmulator/grid-barrier", test_grid_barrier);
  g_test_add_func ("/Passlab/CudaEmulator/divergence", test_divergence);
  g_test_add_func ("/Passlab/CudaEmulator/memory-and-lookup", test_memory_and_lookup);
  g_test_add_func ("/Passlab/CudaEmulator/precompiled-header", test_precompiled_header);
  g_test_add_func ("/Passlab/CudaEmulator/ptx-cache", test_ptx_cache);
  int status = g_test_run ();
  pl_test_remove_tree (cache);
  return status;
}

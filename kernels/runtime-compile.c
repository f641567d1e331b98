/* runtime-compile.c — the code of an executable's steps: one translation
 * unit for all of them (C on the cpu, CUDA C on cuda), compiled (the C
 * compiler, its shared object cached by source; NVRTC to PTX, loaded into the
 * context) and each step's kernels looked up; on cuda, the constants
 * uploaded and the arena and host pool allocated. Generating alone
 * (generate_only) needs neither a compiler nor a GPU. CUDA generation adds
 * the global scratch buffers of rows kernels, so on cuda it runs before the
 * memory plan (pl_executable_new).
 */
#define G_LOG_DOMAIN "passlab"
#include "gemm-small.h"
#include "runtime-private.h"

/* --- code generation ------------------------------------------------------------------- */

/* C source for every step (one translation unit). */
void
pl_runtime_generate_cpu (PlExecutable *e)
{
  g_autofree char *prelude = pl_codegen_c_prelude ();
  GString *src = g_string_new (prelude);
  for (guint s = 0; s < e->steps->len; s++)
    {
      Step *st = pl_runtime_step (e, (int) s);
      GString *one = g_string_new (NULL);
      if (pl_codegen_c_kernel (one, st->plan))
        {
          g_string_append (src, one->str);
          st->source = g_string_free (one, FALSE);
        }
      else
        g_string_free (one, TRUE);
    }
  e->source = g_string_free (src, FALSE);
}

bool
pl_runtime_compile_cpu (PlExecutable *e, GError **error)
{
  pl_runtime_generate_cpu (e);
  e->cpu = pl_cpu_module_compile (e->source, e->cache_dir, &e->cache_hit, error);
  if (!e->cpu)
    return false;
  for (guint s = 0; s < e->steps->len; s++)
    {
      Step *st = pl_runtime_step (e, (int) s);
      PlKernelPlan *p = st->plan;
      if (p->loop || p->kind == PL_PLAN_POOL || p->kind == PL_PLAN_SCAN || p->kind == PL_PLAN_SCATTER || p->kind == PL_PLAN_TOPK)
        st->fn = (PlCpuKernelFn) pl_cpu_module_symbol (e->cpu, p->name);
      if (p->kind == PL_PLAN_GEMM && pl_gemm_small_applies (&p->gemm))
        {
          g_autofree char *sym = g_strdup_printf ("%s_smallm", p->name);
          st->gemm_small = (PlCpuGemmFn) pl_cpu_module_symbol (e->cpu, sym);
          if (!st->gemm_small)
            {
              g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "%s: kernel %s missing", pl_cpu_module_path (e->cpu), sym);
              return false;
            }
        }
      bool direct = p->kind == PL_PLAN_CONV && p->conv.impl == PL_CONV_IMPL_DIRECT;
      if (p->kind == PL_PLAN_CONV)
        {
          g_autofree char *sym = g_strdup_printf ("%s_%s", p->name, direct ? "direct" : p->conv.transpose ? "col2im" : "im2col");
          if (direct)
            st->direct = (PlCpuConvDirectFn) pl_cpu_module_symbol (e->cpu, sym);
          else
            st->im2col = (PlCpuIm2colFn) pl_cpu_module_symbol (e->cpu, sym);
        }
      if (((p->loop || p->kind == PL_PLAN_POOL || p->kind == PL_PLAN_SCAN || p->kind == PL_PLAN_SCATTER || p->kind == PL_PLAN_TOPK) && !st->fn) || (p->kind == PL_PLAN_CONV && !st->im2col && !st->direct))
        {
          g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "%s: kernel %s missing", pl_cpu_module_path (e->cpu), p->name);
          return false;
        }
    }
  void (*set_threads) (int) = (void (*) (int)) pl_cpu_module_symbol (e->cpu, "pl_set_threads");
  if (set_threads && e->threads > 0)
    set_threads (e->threads);
  return true;
}

/* CUDA source for every step; fills the launches and the scratch buffers. */
void
pl_runtime_generate_cuda (PlExecutable *e, int n_sms)
{
  g_autofree char *prelude = pl_codegen_cuda_prelude ();
  GString *src = g_string_new (prelude);
  for (guint s = 0; s < e->steps->len; s++)
    {
      Step *st = pl_runtime_step (e, (int) s);
      GString *one = g_string_new (NULL);
      int n = pl_codegen_cuda_kernel (one, st->plan, n_sms, st->launch);
      if (n > 0)
        {
          g_string_append (src, one->str);
          st->source = g_string_free (one, FALSE);
          if (st->launch[0].scratch_bytes > 0)
            st->scratch_buf = pl_runtime_scratch_buffer (e, st->launch[0].scratch_bytes, "scratch");
        }
      else
        g_string_free (one, TRUE);
    }
  e->source = g_string_free (src, FALSE);
}

bool
pl_runtime_compile_cuda (PlExecutable *e, GError **error)
{
  e->cuda = pl_cuda_get (error);
  if (!e->cuda)
    return false;
  pl_runtime_generate_cuda (e, pl_cuda_sm_count (e->cuda));
  g_autoptr (GPtrArray) entries = g_ptr_array_new ();
  for (guint s = 0; s < e->steps->len; s++)
    for (int k = 0; k < 2; k++)
      if (pl_runtime_step (e, (int) s)->launch[k].entry)
        g_ptr_array_add (entries, pl_runtime_step (e, (int) s)->launch[k].entry);
  g_ptr_array_add (entries, NULL);
  if (!(e->cu_module = pl_cuda_module_build (e->cuda, e->source, (const char *const *) entries->pdata, error)))
    return false;
  for (guint s = 0; s < e->steps->len; s++)
    {
      Step *st = pl_runtime_step (e, (int) s);
      for (int k = 0; k < 2; k++)
        if (st->launch[k].entry && !(st->cu_fn[k] = pl_cuda_function (e->cuda, e->cu_module, st->launch[k].entry, error)))
          return false;
    }
  return true;
}

/* Constants to the device, and the arena. */
bool
pl_runtime_upload_cuda (PlExecutable *e, GError **error)
{
  for (guint i = 0; i < e->bufs->len; i++)
    {
      Buffer *b = pl_runtime_buf (e, (int) i);
      if (b->kind != BUF_CONST || b->last < 0)
        continue;   /* not a constant, or one no kernel reads (weights read only packed) */
      if (!(b->device = pl_cuda_alloc (e->cuda, MAX (b->bytes, 1), error)) ||
          !pl_cuda_upload (e->cuda, b->device, b->constant->data, (size_t) b->bytes, error))
        return false;
    }
  e->cu_arena = pl_cuda_alloc (e->cuda, (size_t) MAX (e->arena_bytes, 64), error);
  if (!e->cu_arena)
    return false;
  /* the host pool: pinned, so the copy stream's copies are truly asynchronous */
  if (e->host_bytes > 0 && !(e->host_pool = pl_cuda_host_alloc (e->cuda, (size_t) e->host_bytes, error)))
    return false;
  return true;
}

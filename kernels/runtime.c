/* runtime.c — an executable's life: building it (one kernel plan per
 * top-level node — a fusion body, or a single op —, buffers for every value,
 * the memory plan and the compiled code, in the order each backend needs),
 * running it, freeing it; the backends' names and availability, and the CUDA
 * compile check that needs no GPU. The work itself lives in:
 *   runtime-build.c    steps and buffers from the nodes' kernel plans
 *   runtime-memory.c   lifetimes, in-place sharing, the arena and the host pool
 *   runtime-compile.c  generating and compiling the code; on cuda, the uploads
 *   runtime-query.c    what callers read of a built executable
 *   runtime-run.c      running it (runtime-report.c: its report as JSON)
 */
#define G_LOG_DOMAIN "passlab"
#include "runtime-private.h"

#include <string.h>
#include <unistd.h>

/* --- backends ---------------------------------------------------------------------- */

const char *
pl_backend_name (PlBackend b)
{
  switch (b)
    {
    case PL_BACKEND_CPU: return "cpu";
    case PL_BACKEND_CUDA: return "cuda";
    default: return "reference";
    }
}

bool
pl_backend_from_name (const char *name, PlBackend *b)
{
  static const PlBackend all[] = { PL_BACKEND_REFERENCE, PL_BACKEND_CPU, PL_BACKEND_CUDA };
  for (size_t i = 0; i < G_N_ELEMENTS (all); i++)
    if (name && g_ascii_strcasecmp (name, pl_backend_name (all[i])) == 0)
      {
        *b = all[i];
        return true;
      }
  return false;
}

bool
pl_backend_available (PlBackend b, char **reason)
{
  if (reason)
    *reason = NULL;
  if (b == PL_BACKEND_CUDA)
    return pl_cuda_available (reason);
  if (b == PL_BACKEND_CPU)
    {
      const char *cc = g_getenv ("PASSLAB_CC");
      g_autofree char *path = g_find_program_in_path (cc && *cc ? cc : "cc");
      if (!path)
        {
          if (reason)
            *reason = g_strdup_printf ("no C compiler '%s' in PATH", cc && *cc ? cc : "cc");
          return false;
        }
    }
  return true;
}

void
pl_compile_options_init (PlCompileOptions *o, PlBackend backend)
{
  memset (o, 0, sizeof *o);
  o->backend = backend;
}

/* --- the executable ------------------------------------------------------------------- */

static PlExecutable *
executable_new (const PlGraph *g, const PlCompileOptions *o)
{
  PlExecutable *e = g_new0 (PlExecutable, 1);
  e->g = g;
  e->backend = o->backend;
  e->cache_dir = g_strdup (o->cache_dir);
  e->threads = o->threads;
  e->generate_only = o->generate_only;
  e->device_budget = o->device_budget;
  e->plans = g_ptr_array_new_with_free_func ((GDestroyNotify) pl_kernel_plan_free);
  e->bufs = g_array_new (FALSE, TRUE, sizeof (Buffer));
  e->steps = g_array_new (FALSE, TRUE, sizeof (Step));
  e->entries = g_array_new (FALSE, TRUE, sizeof (Entry));
  e->buf_of = g_hash_table_new (NULL, NULL);
  return e;
}

PlExecutable *
pl_executable_new (const PlGraph *g, const PlCompileOptions *o, GError **error)
{
  g_return_val_if_fail (g && o, NULL);
  pl_ops_init ();
  PlExecutable *e = executable_new (g, o);
  if (o->backend == PL_BACKEND_REFERENCE)
    return e;
  if (o->generate_only)
    {
      if (!pl_runtime_build (e, error))
        {
          pl_executable_free (e);
          return NULL;
        }
      if (o->backend == PL_BACKEND_CPU)
        pl_runtime_generate_cpu (e);
      else
        pl_runtime_generate_cuda (e, 132);
      pl_runtime_plan_memory (e);
      if (!pl_runtime_check_budget (e, error))
        {
          pl_executable_free (e);
          return NULL;
        }
      return e;
    }
  char *why = NULL;
  if (!pl_backend_available (o->backend, &why))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "the %s backend is not available: %s",
                   pl_backend_name (o->backend), why);
      g_free (why);
      pl_executable_free (e);
      return NULL;
    }
  bool ok = pl_runtime_build (e, error);
  if (ok && o->backend == PL_BACKEND_CPU)
    {
      pl_runtime_plan_memory (e);
      ok = pl_runtime_check_budget (e, error) && pl_runtime_compile_cpu (e, error);
    }
  else if (ok)
    {
      ok = pl_runtime_compile_cuda (e, error);
      if (ok)
        {
          pl_runtime_plan_memory (e);
          ok = pl_runtime_check_budget (e, error) && pl_runtime_upload_cuda (e, error);
        }
    }
  if (!ok)
    {
      pl_executable_free (e);
      return NULL;
    }
  return e;
}

void
pl_executable_free (PlExecutable *e)
{
  if (!e)
    return;
  for (guint s = 0; s < e->steps->len; s++)
    {
      Step *st = pl_runtime_step (e, (int) s);
      g_free (st->in_bufs);
      g_free (st->out_bufs);
      g_free (st->source);
      pl_cuda_launch_clear (&st->launch[0]);
      pl_cuda_launch_clear (&st->launch[1]);
    }
  for (guint i = 0; i < e->entries->len; i++)
    {
      Entry *en = &g_array_index (e->entries, Entry, i);
      g_free (en->name);
      g_free (en->ops);
      g_free (en->kind);
      g_free (en->note);
    }
  for (guint i = 0; i < e->bufs->len; i++)
    if (pl_runtime_buf (e, (int) i)->owned)
      pl_tensor_unref (pl_runtime_buf (e, (int) i)->constant);
  if (e->cuda)
    {
      for (guint i = 0; i < e->bufs->len; i++)
        if (pl_runtime_buf (e, (int) i)->device)
          pl_cuda_free (e->cuda, pl_runtime_buf (e, (int) i)->device);
      if (e->cu_arena)
        pl_cuda_free (e->cuda, e->cu_arena);
      if (e->cu_status)
        pl_cuda_free (e->cuda, e->cu_status);
      pl_cuda_host_free (e->cuda, e->host_pool);
    }
  else
    g_free (e->host_pool);
  g_array_unref (e->steps);
  g_array_unref (e->entries);
  g_array_unref (e->bufs);
  g_ptr_array_unref (e->plans);
  g_hash_table_unref (e->buf_of);
  pl_cpu_module_free (e->cpu);
  g_free (e->output_bufs);
  g_aligned_free (e->arena);
  g_free (e->status);
  g_free (e->cache_dir);
  g_free (e->source);
  g_free (e);
}

PlTensor **
pl_executable_run (PlExecutable *e, PlTensor *const *inputs, int repeat, PlRunReport **report, GError **error)
{
  g_return_val_if_fail (e, NULL);
  repeat = MAX (repeat, 1);
  if (e->generate_only)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "this executable was only generated, not compiled");
      return NULL;
    }
  if (e->backend == PL_BACKEND_REFERENCE)
    return pl_runtime_run_reference (e, inputs, repeat, report, error);
  return pl_runtime_run_compiled (e, inputs, repeat, report, error);
}

/* --- the CUDA check without a GPU --------------------------------------------------------- */

bool
pl_cuda_compile_check (const PlGraph *g, const char *arch, char **source, int *n_kernels, GError **error)
{
  char *why = NULL;
  if (!pl_nvrtc_available (&why))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "%s", why);
      g_free (why);
      return false;
    }
  PlCompileOptions o;
  pl_compile_options_init (&o, PL_BACKEND_CUDA);
  o.generate_only = true;
  PlExecutable *e = pl_executable_new (g, &o, error);
  bool ok = e != NULL;
  if (ok)
    {
      size_t size;
      g_autofree char *ptx = pl_nvrtc_compile (e->source, arch ? arch : "compute_90", NULL, NULL, &size, error);
      ok = ptx != NULL;
      if (n_kernels)
        {
          *n_kernels = 0;
          for (const char *p = e->source; (p = strstr (p, "__global__")); p++)
            (*n_kernels)++;
        }
      if (source)
        *source = g_strdup (e->source);
    }
  pl_executable_free (e);
  return ok;
}

void
pl_runtime_init_process (char **argv)
{
  if (g_getenv ("OPENBLAS_THREAD_TIMEOUT") || !argv || !argv[0])
    return;
  g_setenv ("OPENBLAS_THREAD_TIMEOUT", "4", TRUE);   /* 2^4 cycles: sleep at once */
  execv ("/proc/self/exe", argv);
  /* no /proc: run on with spinning threads */
}

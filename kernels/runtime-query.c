/* runtime-query.c — what callers read of a built executable: a kernel's
 * generated source and plan, the whole source, whether the compiled module
 * came from the cache, the kernel and launch counts, and the memory plan's
 * sizes. */
#define G_LOG_DOMAIN "passlab"
#include "runtime-private.h"

/* --- queries ------------------------------------------------------------------------- */

const char *
pl_executable_source (PlExecutable *e, guint32 node_id)
{
  for (guint i = 0; i < e->entries->len; i++)
    {
      Entry *en = &g_array_index (e->entries, Entry, i);
      if (en->node_id != node_id)
        continue;
      /* one step: its source; split fusions: all their steps' sources, kept on the first */
      Step *first = pl_runtime_step (e, en->first_step);
      if (en->n_steps > 1 && first->source && !g_str_has_prefix (first->source, "/* split"))
        {
          GString *all = g_string_new ("/* split fusion: its body as several kernels */\n");
          for (int s = en->first_step; s < en->first_step + en->n_steps; s++)
            if (pl_runtime_step (e, s)->source)
              g_string_append (all, pl_runtime_step (e, s)->source);
          g_free (first->source);
          first->source = g_string_free (all, FALSE);
        }
      return first->source;
    }
  return NULL;
}

char *
pl_executable_plan_dump (PlExecutable *e, guint32 node_id)
{
  for (guint i = 0; i < e->entries->len; i++)
    {
      Entry *en = &g_array_index (e->entries, Entry, i);
      if (en->node_id != node_id)
        continue;
      GString *s = g_string_new (NULL);
      for (int k = en->first_step; k < en->first_step + en->n_steps; k++)
        {
          g_autofree char *d = pl_kernel_plan_dump (pl_runtime_step (e, k)->plan);
          g_string_append (s, d);
        }
      return g_string_free (s, FALSE);
    }
  return NULL;
}

const char *
pl_executable_full_source (PlExecutable *e)
{
  return e->source;
}

bool
pl_executable_cache_hit (PlExecutable *e)
{
  return e->cache_hit;
}

int
pl_executable_n_kernels (PlExecutable *e)
{
  return e->backend == PL_BACKEND_REFERENCE ? (int) e->g->nodes->len : (int) e->entries->len;
}

int
pl_executable_n_launches (PlExecutable *e)
{
  int n = 0;
  for (guint s = 0; s < e->steps->len; s++)
    n += pl_runtime_step (e, (int) s)->plan->kind != PL_PLAN_ALIAS;
  return e->backend == PL_BACKEND_REFERENCE ? (int) e->g->nodes->len : n;
}

void
pl_executable_memory (PlExecutable *e, int64_t *arena, int64_t *peak, int64_t *workspace, int64_t *host_pool)
{
  g_return_if_fail (e != NULL);
  if (arena)
    *arena = e->arena_bytes;
  if (peak)
    *peak = e->peak_bytes;
  if (workspace)
    *workspace = e->workspace_bytes;
  if (host_pool)
    *host_pool = e->host_bytes;
}

/* bench-lua.c — what a pass written in Lua costs next to the same pass in C.
 *
 * Builds pl_random_chain_graph() (default 100,000 nodes) and runs trivial
 * passes the way the pass manager does (pass->run on a fresh copy of the
 * graph), timing only the run, in CPU time of this process so that other
 * work on a busy machine does not count:
 *   c-visit       C: visit every node in topological order, count op == "Add"
 *   c-topo        C: only the topological order (what every visit starts with)
 *   lua-empty     Lua: return at once (the fixed cost of calling into Lua)
 *   lua-visit     Lua: the same as c-visit, with g:nodes() and n.op
 *   lua-inputs    Lua: also read n.name and every input value's name
 * Each figure is the best of --repeat runs.
 *
 *   bench-lua [--nodes N] [--repeat R] [--seed S]
 */
#define G_LOG_DOMAIN "passlab"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "pass-manager.h"
#include "pl-lua.h"
#include "random-graph.h"

static bool
c_visit_run (PlGraph *g, const PlPassArgs *args, PlPassReport *report, gpointer user_data, GError **error)
{
  int n = 0;
  PlNode **order = pl_graph_topo_order (g, &n, error);
  if (!order)
    return false;
  int64_t adds = 0;
  for (int i = 0; i < n; i++)
    if (strcmp (order[i]->op_type, "Add") == 0)
      adds++;
  g_free (order);
  pl_pass_report_count (report, "adds", adds);
  return true;
}

static bool
c_topo_run (PlGraph *g, const PlPassArgs *args, PlPassReport *report, gpointer user_data, GError **error)
{
  int n = 0;
  g_free (pl_graph_topo_order (g, &n, error));
  return n == (int) g->nodes->len;
}

static const char lua_passes[] =
  "local passlab = require 'passlab'\n"
  "passlab.register_pass { name = 'lua-empty', run = function (g) return false end }\n"
  "passlab.register_pass { name = 'lua-visit', run = function (g)\n"
  "  local adds = 0\n"
  "  for n in g:nodes () do if n.op == 'Add' then adds = adds + 1 end end\n"
  "  return false, nil, { adds = adds }\n"
  "end }\n"
  "passlab.register_pass { name = 'lua-inputs', run = function (g)\n"
  "  local adds, chars = 0, 0\n"
  "  for n in g:nodes () do\n"
  "    if n.op == 'Add' then adds = adds + 1 end\n"
  "    chars = chars + #n.name\n"
  "    for _, v in ipairs (n.inputs) do if v then chars = chars + #v.name end end\n"
  "  end\n"
  "  return false, nil, { adds = adds }\n"
  "end }\n";

/* CPU time of this process in ms: other work on a busy machine does not count. */
static double
cpu_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The best CPU time (ms) of repeat runs of pass, each on a fresh copy of g
 * (the copy is not timed); *adds gets the pass's count. */
static double
time_pass (const PlGraph *g, const char *name, int repeat, int64_t *adds)
{
  const PlPass *pass = pl_pass_find (name);
  g_autoptr (PlPassArgs) args = pl_pass_args_new (pass);
  double best = G_MAXDOUBLE;
  for (int r = 0; r < repeat; r++)
    {
      g_autoptr (PlGraph) copy = pl_graph_copy (g);
      g_autoptr (PlPassReport) report = pl_pass_report_new ();
      g_autoptr (GError) error = NULL;
      double t0 = cpu_ms ();
      if (!pass->run (copy, args, report, pass->user_data, &error))
        g_error ("%s: %s", name, error->message);
      best = MIN (best, cpu_ms () - t0);
      *adds = pl_pass_report_get (report, "adds");
    }
  return best;
}

int
main (int argc, char **argv)
{
  int n_nodes = 100000, repeat = 5, seed = 1;
  const GOptionEntry entries[] = {
    { "nodes", 'n', 0, G_OPTION_ARG_INT, &n_nodes, "Graph size (default 100000)", "N" },
    { "repeat", 'r', 0, G_OPTION_ARG_INT, &repeat, "Runs per pass; the best counts (default 5)", "R" },
    { "seed", 0, 0, G_OPTION_ARG_INT, &seed, "Seed of the random graph (default 1)", "S" },
    { NULL },
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("— Lua passes against C passes");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (ctx, &argc, &argv, &error) || n_nodes < 1 || repeat < 1)
    {
      fprintf (stderr, "bench-lua: %s\n", error ? error->message : "bad arguments");
      return 1;
    }

  pl_passes_init ();
  pl_pass_register (pl_pass_new ("c-topo", "topological order (benchmark)", NULL, 0, c_topo_run, NULL, NULL), NULL);
  pl_pass_register (pl_pass_new ("c-visit", "visits every node (benchmark)", NULL, 0, c_visit_run, NULL, NULL),
                    NULL);
  g_autoptr (PlLua) lua = pl_lua_new (NULL);
  if (!pl_lua_run_string (lua, lua_passes, "bench-lua", &error))
    g_error ("%s", error->message);

  double t0 = g_get_monotonic_time ();
  g_autoptr (PlGraph) g = pl_random_chain_graph (n_nodes, (guint32) seed);
  printf ("graph: %u nodes, %u values (built in %.0f ms); best of %d runs\n\n", g->nodes->len, g->values->len,
          (g_get_monotonic_time () - t0) / 1000, repeat);

  const char *passes[] = { "c-visit", "c-topo", "lua-empty", "lua-visit", "lua-inputs" };
  double c_ms = 0;
  printf ("%-12s %10s %10s %10s %8s\n", "pass", "cpu ms", "ns/node", "vs c-visit", "adds");
  for (size_t i = 0; i < G_N_ELEMENTS (passes); i++)
    {
      int64_t adds = 0;
      double ms = time_pass (g, passes[i], repeat, &adds);
      if (i == 0)
        c_ms = ms;
      printf ("%-12s %10.2f %10.1f %9.1fx %8" G_GINT64_FORMAT "\n", passes[i], ms, ms * 1e6 / g->nodes->len,
              c_ms > 0 ? ms / c_ms : 0, adds);
    }
  printf ("\nLua heap after the runs: %.1f MiB\n", pl_lua_memory_used (lua) / 1048576.0);
  pl_pass_unregister ("c-topo");
  pl_pass_unregister ("c-visit");
  return 0;
}

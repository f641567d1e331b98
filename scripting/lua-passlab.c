/* lua-passlab.c — the `passlab` module (local passlab = require "passlab"):
 * loading graphs, listing and running passes, pass histories, Lua passes,
 * and running graphs with the reference interpreter.
 *
 *   passlab.load(path), passlab.parse(text [, name])          -> graph (owned)
 *   passlab.passes()   -> { {name=, description=, builtin=, params={ {name=, type=, default=, description=} }} }
 *   passlab.run(g, pipeline [, {check=, seed=, tolerance=, sym_size=, stop_on_check_failure=}]) -> history
 *       pipeline: { "simplify", {"fuse-loops", max_ops=16}, ... }
 *       history[0] is the input, history[1..#history] one step per pass:
 *         { index=, pass=, params= (text), changed=, report=, counters={}, diff={added=, removed=, changed=},
 *           stats={nodes=, kernels=, reshape_bytes=, bytes_moved=, flops=, peak_bytes=, time_ms=},
 *           checked=, max_rel_error=, output_errors=, check_failed=, check_message=, graph= }
 *       history.error: why the pipeline stopped early (a pass failed or did not verify)
 *   passlab.register_pass{name=, description=, params={...}, run=function(g, params) return changed [, report [, counters]] end}
 *   passlab.exec(g [, {inputs={x={shape=, data=} or data}, random_seed=, sym_size=, backend="reference"|"cpu"|"cuda",
 *                 runs=N}]) -> {out={shape=, dtype=, data=}}, {backend=, ms=, kernels=}
 *     (cpu/cuda: the generated kernels, ms the median of `runs` timed runs after a warm-up)
 *   passlab.check(a, b [, {seed=, sym_size=}]) -> worst relative error per output
 *   passlab.diff(a, b) -> {added={ids}, removed={ids}, changed={ids}}
 *
 * A step's graph is a read-only handle into the history; the handles keep
 * the history alive. A Lua pass gets a borrowed handle to the copy the pass
 * manager made; after it returns the verifier runs, so a script cannot hand
 * on a broken graph.
 *
 * This file holds loading, comparing and the module table; passlab.passes
 * and passlab.run (pipelines and histories) are in lua-passlab-run.c,
 * passlab.register_pass (Lua passes) in lua-passlab-register.c, and
 * passlab.exec with the tensor conversions in lua-passlab-exec.c.
 */
#define G_LOG_DOMAIN "passlab"

#include "lua-private.h"

#include "onnx-io.h"
#include "text-format.h"

/* --- loading ------------------------------------------------------------------------ */

static int
l_load (lua_State *L)
{
  const char *path = luaL_checkstring (L, 1);
  PlLuaGraph *lg = pl_lua_push_graph (L, PL_LUA_GRAPH_OWNED, NULL);
  GError *error = NULL;
  if (!g_file_test (path, G_FILE_TEST_IS_REGULAR))
    return luaL_error (L, "load: %s: no such file", path);
  lg->graph = pl_graph_load (path, &error);
  if (!lg->graph)
    pl_lua_raise_gerror (L, error);
  return 1;
}

static int
l_parse (lua_State *L)
{
  size_t len;
  const char *text = luaL_checklstring (L, 1, &len);
  const char *name = luaL_optstring (L, 2, "<string>");
  PlLuaGraph *lg = pl_lua_push_graph (L, PL_LUA_GRAPH_OWNED, NULL);
  GError *error = NULL;
  lg->graph = pl_text_parse (text, (gssize) len, name, &error);
  if (!lg->graph)
    pl_lua_raise_gerror (L, error);
  return 1;
}

/* --- comparing ------------------------------------------------------------------------------ */

static int
l_check (lua_State *L)
{
  PlGraph *a = pl_lua_check_graph (L, 1);
  PlGraph *b = pl_lua_check_graph (L, 2);
  lua_Integer seed = 1, sym_size = 1;
  if (!lua_isnoneornil (L, 3))
    {
      luaL_checktype (L, 3, LUA_TTABLE);
      lua_getfield (L, 3, "seed");
      seed = luaL_optinteger (L, -1, 1);
      lua_getfield (L, 3, "sym_size");
      sym_size = luaL_optinteger (L, -1, 1);
    }
  if (a->inputs->len != b->inputs->len || a->outputs->len != b->outputs->len)
    return luaL_error (L, "check: the graphs differ in their inputs or outputs");
  double *errors = lua_newuserdatauv (L, sizeof (double) * MAX (a->outputs->len, 1), 0);
  GError *error = NULL;
  if (!pl_check_graphs (a, b, (guint32) seed, sym_size, errors, &error))
    pl_lua_raise_gerror (L, error);
  lua_createtable (L, a->outputs->len, 0);
  for (guint i = 0; i < a->outputs->len; i++)
    lua_pushnumber (L, errors[i]), lua_rawseti (L, -2, i + 1);
  return 1;
}

static int
l_diff (lua_State *L)
{
  PlGraph *a = pl_lua_check_graph (L, 1);
  PlGraph *b = pl_lua_check_graph (L, 2);
  gpointer *slot = pl_lua_box (L, (GDestroyNotify) pl_graph_diff_free);
  *slot = pl_graph_diff (a, b);
  pl_lua_push_graph_diff (L, *slot);
  return 1;
}

/* --- the module ------------------------------------------------------------------------------ */

int
pl_lua_open_passlab (lua_State *L)
{
  static const luaL_Reg functions[] = {
    { "load", l_load },
    { "parse", l_parse },
    { "passes", pl_lua_passlab_passes },
    { "run", pl_lua_passlab_run },
    { "register_pass", pl_lua_passlab_register_pass },
    { "exec", pl_lua_passlab_exec },
    { "check", l_check },
    { "diff", l_diff },
    { NULL, NULL },
  };
  luaL_newlib (L, functions);
  return 1;
}

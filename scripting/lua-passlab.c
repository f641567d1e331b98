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
 */
#define G_LOG_DOMAIN "passlab"

#include "lua-private.h"

#include <string.h>

#include "interp.h"
#include "onnx-io.h"
#include "runtime.h"
#include "text-format.h"

#define HISTORIES_KEY "passlab.histories"  /* registry: history table -> its box (weak keys) */

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

/* --- passes ------------------------------------------------------------------------------ */

/* Pushes a parameter's value (given as text) as its Lua type. */
static void
push_param_value (lua_State *L, PlParamType type, const char *text)
{
  switch (type)
    {
    case PL_PARAM_INT:    lua_pushinteger (L, g_ascii_strtoll (text, NULL, 0)); break;
    case PL_PARAM_FLOAT:  lua_pushnumber (L, g_ascii_strtod (text, NULL)); break;
    case PL_PARAM_BOOL:   lua_pushboolean (L, !g_ascii_strcasecmp (text, "true") || !strcmp (text, "1")
                                              || !g_ascii_strcasecmp (text, "yes")); break;
    case PL_PARAM_STRING: lua_pushstring (L, text); break;
    }
}

static int
l_passes (lua_State *L)
{
  gpointer *slot = pl_lua_box (L, (GDestroyNotify) g_ptr_array_unref);
  GPtrArray *all = *slot = pl_pass_list ();
  lua_createtable (L, all->len, 0);
  for (guint i = 0; i < all->len; i++)
    {
      const PlPass *p = all->pdata[i];
      lua_createtable (L, 0, 4);
      lua_pushstring (L, p->name);
      lua_setfield (L, -2, "name");
      lua_pushstring (L, p->description);
      lua_setfield (L, -2, "description");
      lua_pushboolean (L, p->builtin);
      lua_setfield (L, -2, "builtin");
      lua_createtable (L, p->n_params, 0);
      for (int k = 0; k < p->n_params; k++)
        {
          const PlPassParam *pp = &p->params[k];
          lua_createtable (L, 0, 4);
          lua_pushstring (L, pp->name);
          lua_setfield (L, -2, "name");
          lua_pushstring (L, pl_param_type_name (pp->type));
          lua_setfield (L, -2, "type");
          push_param_value (L, pp->type, pp->default_value);
          lua_setfield (L, -2, "default");
          lua_pushstring (L, pp->description ? pp->description : "");
          lua_setfield (L, -2, "description");
          lua_rawseti (L, -2, k + 1);
        }
      lua_setfield (L, -2, "params");
      lua_rawseti (L, -2, i + 1);
    }
  return 1;
}

/* A parameter value given in Lua as text (g_free), or NULL if it has no text form. */
static char *
param_text (lua_State *L, int idx)
{
  switch (lua_type (L, idx))
    {
    case LUA_TBOOLEAN: return g_strdup (lua_toboolean (L, idx) ? "true" : "false");
    case LUA_TSTRING:  return g_strdup (lua_tostring (L, idx));
    case LUA_TNUMBER:
      if (lua_isinteger (L, idx))
        return g_strdup_printf ("%lld", (long long) lua_tointeger (L, idx));
      char buf[G_ASCII_DTOSTR_BUF_SIZE];
      return g_strdup (g_ascii_dtostr (buf, sizeof buf, lua_tonumber (L, idx)));
    default:
      return NULL;
    }
}

static const PlPass *
check_pass (lua_State *L, int idx, int entry)
{
  if (lua_type (L, idx) != LUA_TSTRING)
    luaL_error (L, "pipeline entry %d: the pass name must be a string, not a %s", entry, luaL_typename (L, idx));
  const PlPass *pass = pl_pass_find (lua_tostring (L, idx));
  if (!pass)
    luaL_error (L, "pipeline entry %d: unknown pass '%s' (see passlab.passes())", entry, lua_tostring (L, idx));
  return pass;
}

/* Sets the parameters of the table entry at tidx (string keys) on args. */
static void
set_entry_params (lua_State *L, int tidx, int entry, PlPassArgs *args)
{
  for (lua_pushnil (L); lua_next (L, tidx); lua_pop (L, 1))
    {
      if (lua_type (L, -2) == LUA_TNUMBER && lua_tointeger (L, -2) == 1)
        continue;
      if (lua_type (L, -2) != LUA_TSTRING)
        luaL_error (L, "pipeline entry %d: parameters are name=value pairs after the pass name", entry);
      char *text = param_text (L, -1);
      if (!text)
        luaL_error (L, "pipeline entry %d: parameter '%s' is a %s (a number, string or boolean expected)", entry,
                    lua_tostring (L, -2), luaL_typename (L, -1));
      GError *error = NULL;
      bool ok = pl_pass_args_set (args, lua_tostring (L, -2), text, &error);
      g_free (text);
      if (!ok)
        {
          g_prefix_error (&error, "pipeline entry %d: ", entry);
          pl_lua_raise_gerror (L, error);
        }
    }
}

PlPipeline *
pl_lua_check_pipeline (lua_State *L, int arg)
{
  arg = lua_absindex (L, arg);
  luaL_checktype (L, arg, LUA_TTABLE);
  gpointer *slot = pl_lua_box (L, (GDestroyNotify) pl_pipeline_free);
  PlPipeline *p = *slot = pl_pipeline_new ();
  int n = (int) lua_rawlen (L, arg);
  for (int i = 1; i <= n; i++)
    {
      int type = lua_rawgeti (L, arg, i);
      if (type == LUA_TSTRING)
        pl_pipeline_append (p, pl_pass_args_new (check_pass (L, -1, i)));
      else if (type == LUA_TTABLE)
        {
          lua_rawgeti (L, -1, 1);
          PlPassArgs *args = pl_pass_args_new (check_pass (L, -1, i));
          lua_pop (L, 1);
          pl_pipeline_append (p, args);  /* owned by the boxed pipeline from here */
          set_entry_params (L, lua_gettop (L), i, args);
        }
      else
        luaL_error (L, "pipeline entry %d must be a pass name or a table {name, key=value, ...}, not a %s", i,
                    luaL_typename (L, -1));
      lua_pop (L, 1);
    }
  return p;
}

/* --- histories ------------------------------------------------------------------------------ */

static int
history_gc (lua_State *L)
{
  PlLuaHistory *hb = lua_touserdata (L, 1);
  g_clear_pointer (&hb->history, pl_history_free);
  return 0;
}

static void
set_int (lua_State *L, const char *key, int64_t v)
{
  lua_pushinteger (L, v);
  lua_setfield (L, -2, key);
}

static void
push_ids (lua_State *L, const GArray *ids)
{
  lua_createtable (L, ids->len, 0);
  for (guint i = 0; i < ids->len; i++)
    lua_pushinteger (L, g_array_index (ids, guint32, i)), lua_rawseti (L, -2, i + 1);
}

static void
push_diff (lua_State *L, const PlGraphDiff *d)
{
  lua_createtable (L, 0, 3);
  push_ids (L, d->added);
  lua_setfield (L, -2, "added");
  push_ids (L, d->removed);
  lua_setfield (L, -2, "removed");
  push_ids (L, d->changed);
  lua_setfield (L, -2, "changed");
}

/* Pushes the table of step k of the history box at hidx. */
static void
push_step (lua_State *L, int hidx, int k)
{
  PlLuaHistory *hb = lua_touserdata (L, hidx);
  const PlStep *s = pl_history_step (hb->history, k);
  lua_createtable (L, 0, 16);
  set_int (L, "index", k);
  if (s->pass_name)
    {
      lua_pushstring (L, s->pass_name);
      lua_setfield (L, -2, "pass");
    }
  lua_pushstring (L, s->args_text ? s->args_text : "");
  lua_setfield (L, -2, "params");
  lua_pushboolean (L, s->changed);
  lua_setfield (L, -2, "changed");
  lua_pushstring (L, s->report ? s->report : "");
  lua_setfield (L, -2, "report");

  lua_createtable (L, 0, 7);
  set_int (L, "nodes", s->stats.nodes);
  set_int (L, "kernels", s->stats.kernels);
  set_int (L, "reshape_bytes", s->stats.reshape_bytes);
  set_int (L, "bytes_moved", s->stats.bytes_moved);
  set_int (L, "flops", s->stats.flops);
  set_int (L, "peak_bytes", s->stats.peak_bytes);
  lua_pushnumber (L, s->time_ms);
  lua_setfield (L, -2, "time_ms");
  lua_setfield (L, -2, "stats");

  lua_newtable (L);
  for (guint i = 0; s->counters && i < s->counters->counter_order->len; i++)
    {
      const char *name = s->counters->counter_order->pdata[i];
      set_int (L, name, pl_pass_report_get (s->counters, name));
    }
  lua_setfield (L, -2, "counters");
  if (s->diff)
    {
      push_diff (L, s->diff);
      lua_setfield (L, -2, "diff");
    }

  lua_pushboolean (L, s->checked);
  lua_setfield (L, -2, "checked");
  if (s->checked)
    {
      lua_pushnumber (L, s->max_rel_error);
      lua_setfield (L, -2, "max_rel_error");
      lua_createtable (L, s->n_outputs, 0);
      for (int i = 0; i < s->n_outputs && s->output_errors; i++)
        lua_pushnumber (L, s->output_errors[i]), lua_rawseti (L, -2, i + 1);
      lua_setfield (L, -2, "output_errors");
    }
  lua_pushboolean (L, s->check_failed);
  lua_setfield (L, -2, "check_failed");
  if (s->check_message)
    {
      lua_pushstring (L, s->check_message);
      lua_setfield (L, -2, "check_message");
    }
  pl_lua_push_step_graph (L, hidx, k);
  lua_setfield (L, -2, "graph");
}

/* Pushes the Lua table of the history box at hidx. */
static void
push_history (lua_State *L, int hidx)
{
  hidx = lua_absindex (L, hidx);
  PlLuaHistory *hb = lua_touserdata (L, hidx);
  int n = pl_history_n_steps (hb->history);
  lua_createtable (L, n - 1, 2);
  for (int k = 0; k < n; k++)
    {
      push_step (L, hidx, k);
      lua_rawseti (L, -2, k);
    }
  if (hb->history->error)
    {
      lua_pushstring (L, hb->history->error);
      lua_setfield (L, -2, "error");
    }
  lua_getfield (L, LUA_REGISTRYINDEX, HISTORIES_KEY);
  lua_pushvalue (L, -2);
  lua_pushvalue (L, hidx);
  lua_rawset (L, -3);
  lua_pop (L, 1);
}

PlHistory *
pl_lua_steal_history (lua_State *L, int idx)
{
  idx = lua_absindex (L, idx);
  if (!lua_istable (L, idx))
    return NULL;
  lua_getfield (L, LUA_REGISTRYINDEX, HISTORIES_KEY);
  lua_pushvalue (L, idx);
  lua_rawget (L, -2);
  PlLuaHistory *hb = luaL_testudata (L, -1, PL_LUA_HISTORY_MT);
  PlHistory *h = hb ? hb->history : NULL;
  if (hb)
    hb->history = NULL;
  lua_pop (L, 2);
  return h;
}

/* Reads passlab.run's options table at idx. */
static void
check_run_options (lua_State *L, int idx, PlRunOptions *o)
{
  pl_run_options_init (o);
  if (lua_isnoneornil (L, idx))
    return;
  luaL_checktype (L, idx, LUA_TTABLE);
  for (lua_pushnil (L); lua_next (L, idx); lua_pop (L, 1))
    {
      const char *key = lua_type (L, -2) == LUA_TSTRING ? lua_tostring (L, -2) : "";
      int ok = 1;
      if (strcmp (key, "check") == 0)
        o->check = lua_toboolean (L, -1);
      else if (strcmp (key, "stop_on_check_failure") == 0)
        o->stop_on_check_failure = lua_toboolean (L, -1);
      else if (strcmp (key, "seed") == 0)
        o->seed = (guint32) lua_tointegerx (L, -1, &ok);
      else if (strcmp (key, "sym_size") == 0)
        o->sym_size = lua_tointegerx (L, -1, &ok), ok = ok && o->sym_size >= 1;
      else if (strcmp (key, "tolerance") == 0)
        o->tolerance = lua_tonumberx (L, -1, &ok);
      else
        luaL_error (L, "run: unknown option '%s' (check, seed, tolerance, sym_size, stop_on_check_failure)",
                    *key ? key : "?");
      if (!ok)
        luaL_error (L, "run: option '%s' has a wrong value", key);
    }
}

static int
l_run (lua_State *L)
{
  PlLua *pl = pl_lua_get (L);
  PlGraph *g = pl_lua_check_graph (L, 1);
  luaL_checktype (L, 2, LUA_TTABLE);
  PlRunOptions options;
  check_run_options (L, 3, &options);
  lua_settop (L, 3);
  PlPipeline *p = pl_lua_check_pipeline (L, 2);                     /* 4: box */
  PlLuaHistory *hb = lua_newuserdatauv (L, sizeof *hb, 0);          /* 5 */
  hb->history = NULL;
  luaL_setmetatable (L, PL_LUA_HISTORY_MT);

  /* Lua passes in the pipeline call back into this state; nothing here raises. */
  pl->busy_pipelines++;
  GError *error = NULL;
  hb->history = pl_pipeline_run (g, p, &options, &error);
  pl->busy_pipelines--;
  /* Freed now, not by the collector: its arguments point at their passes,
   * which a later register_pass may replace. */
  pl_pipeline_free (pl_lua_box_steal (L, 4));
  g_clear_error (&error);  /* history->error holds the message */
  if (pl->interrupt >= 0)
    return luaL_error (L, "interrupted");

  luaL_unref (L, LUA_REGISTRYINDEX, pl->last_history_ref);
  lua_pushvalue (L, 5);
  pl->last_history_ref = luaL_ref (L, LUA_REGISTRYINDEX);
  push_history (L, 5);
  return 1;
}

/* --- Lua passes ---------------------------------------------------------------------------- */

typedef struct {
  PlLuaPass          *lp;
  PlGraph            *graph;
  const PlPassArgs   *args;
  PlPassReport       *report;
} PassCall;

static void
push_params (lua_State *L, const PlPassArgs *args)
{
  const PlPass *pass = pl_pass_args_pass (args);
  lua_createtable (L, 0, pass->n_params);
  for (int i = 0; i < pass->n_params; i++)
    {
      const PlPassParam *pp = &pass->params[i];
      switch (pp->type)
        {
        case PL_PARAM_INT:    lua_pushinteger (L, pl_pass_args_int (args, pp->name)); break;
        case PL_PARAM_FLOAT:  lua_pushnumber (L, pl_pass_args_float (args, pp->name)); break;
        case PL_PARAM_BOOL:   lua_pushboolean (L, pl_pass_args_bool (args, pp->name)); break;
        case PL_PARAM_STRING: lua_pushstring (L, pl_pass_args_string (args, pp->name)); break;
        }
      lua_setfield (L, -2, pp->name);
    }
}

/* The pass's results: changed [, report (a string or array of lines) [, counters {name = n}]]. */
static void
read_pass_results (lua_State *L, int first, PlPassReport *report)
{
  report->changed = lua_toboolean (L, first);
  int r = first + 1;
  if (lua_type (L, r) == LUA_TSTRING)
    pl_pass_report_printf (report, "%s", lua_tostring (L, r));
  else if (lua_istable (L, r))
    for (int i = 1; i <= (int) lua_rawlen (L, r); i++)
      {
        lua_rawgeti (L, r, i);
        if (lua_type (L, -1) == LUA_TSTRING || lua_type (L, -1) == LUA_TNUMBER)
          pl_pass_report_printf (report, "%s", lua_tostring (L, -1));
        lua_pop (L, 1);
      }
  int c = first + 2;
  if (lua_istable (L, c))
    for (lua_pushnil (L); lua_next (L, c); lua_pop (L, 1))
      if (lua_type (L, -2) == LUA_TSTRING && lua_isinteger (L, -1))
        pl_pass_report_count (report, lua_tostring (L, -2), lua_tointeger (L, -1));
}

static int
pass_call (lua_State *L)
{
  PassCall *c = lua_touserdata (L, 1);
  pl_lua_push_graph (L, PL_LUA_GRAPH_BORROWED, c->graph);  /* 2: closed (invalidated) on return or error */
  lua_toclose (L, 2);
  lua_rawgeti (L, LUA_REGISTRYINDEX, c->lp->func_ref);
  lua_pushvalue (L, 2);
  push_params (L, c->args);
  lua_call (L, 2, 3);
  read_pass_results (L, 3, c->report);
  return 0;
}

static bool
lua_pass_run (PlGraph *g, const PlPassArgs *args, PlPassReport *report, gpointer user_data, GError **error)
{
  PlLuaPass *lp = user_data;
  PlLua *pl = lp->owner;
  PassCall c = { lp, g, args, report };
  if (pl->closing)
    {
      g_set_error (error, PL_LUA_ERROR, PL_LUA_ERROR_RUNTIME, "the Lua state of pass %s is closing", lp->name);
      return false;
    }
  g_rec_mutex_lock (&pl->lock);
  pl->busy_pipelines++;
  bool ok = pl_lua_pcall (pl, pass_call, &c, lp->source, error);
  pl->busy_pipelines--;
  g_rec_mutex_unlock (&pl->lock);
  return ok;
}

/* The registry dropped the PlPass (replaced or unregistered). */
static void
lua_pass_dropped (gpointer user_data)
{
  PlLuaPass *lp = user_data;
  g_atomic_int_set (&lp->registered, 0);
}

static void
lua_pass_free (PlLuaPass *lp)
{
  g_free (lp->name);
  g_free (lp->source);
  g_free (lp);
}

/* Frees the passes of pl whose PlPass is gone (their functions go too). */
static void
sweep_passes (lua_State *L, PlLua *pl)
{
  for (guint i = 0; i < pl->passes->len;)
    {
      PlLuaPass *lp = pl->passes->pdata[i];
      if (g_atomic_int_get (&lp->registered))
        {
          i++;
          continue;
        }
      luaL_unref (L, LUA_REGISTRYINDEX, lp->func_ref);
      lua_pass_free (g_ptr_array_steal_index (pl->passes, i));
    }
}

void
pl_lua_passes_free (PlLua *pl)
{
  for (guint i = 0; i < pl->passes->len; i++)
    {
      PlLuaPass *lp = pl->passes->pdata[i];
      const PlPass *p = g_atomic_int_get (&lp->registered) ? pl_pass_find (lp->name) : NULL;
      if (p && p->user_data == lp)
        pl_pass_unregister (lp->name);
      lua_pass_free (lp);
    }
  g_ptr_array_free (pl->passes, TRUE);
  pl->passes = NULL;
}

static PlParamType
check_param_type (lua_State *L, const char *pass, const char *param)
{
  const char *t = lua_type (L, -1) == LUA_TSTRING ? lua_tostring (L, -1) : "";
  for (PlParamType type = PL_PARAM_INT; type <= PL_PARAM_STRING; type++)
    if (strcmp (t, pl_param_type_name (type)) == 0)
      return type;
  luaL_error (L, "register_pass %s: parameter '%s' needs a type: \"int\", \"float\", \"bool\" or \"string\"", pass,
              param);
  return PL_PARAM_STRING;
}

static void
free_params (gpointer p)
{
  GArray *a = p;
  for (guint i = 0; i < a->len; i++)
    {
      PlPassParam *pp = &g_array_index (a, PlPassParam, i);
      g_free (pp->name), g_free (pp->default_value), g_free (pp->description);
    }
  g_array_free (a, TRUE);
}

/* Reads register_pass's params array at idx into a boxed GArray of PlPassParam. */
static GArray *
check_params (lua_State *L, int idx, const char *pass)
{
  gpointer *slot = pl_lua_box (L, free_params);
  GArray *params = *slot = g_array_new (FALSE, TRUE, sizeof (PlPassParam));
  if (lua_isnil (L, idx))
    return params;
  if (!lua_istable (L, idx))
    luaL_error (L, "register_pass %s: 'params' must be an array of {name=, type=, default=, description=}", pass);
  for (int i = 1; i <= (int) lua_rawlen (L, idx); i++)
    {
      if (lua_rawgeti (L, idx, i) != LUA_TTABLE)
        luaL_error (L, "register_pass %s: parameter %d must be a table {name=, type=, default=, description=}",
                    pass, i);
      int t = lua_gettop (L);
      if (lua_getfield (L, t, "name") != LUA_TSTRING)
        luaL_error (L, "register_pass %s: parameter %d needs a name", pass, i);
      const char *name = lua_tostring (L, -1);
      for (guint k = 0; k < params->len; k++)
        if (strcmp (g_array_index (params, PlPassParam, k).name, name) == 0)
          luaL_error (L, "register_pass %s: parameter '%s' is declared twice", pass, name);
      lua_getfield (L, t, "type");
      PlParamType type = check_param_type (L, pass, name);
      lua_getfield (L, t, "default");
      char *def = lua_isnil (L, -1) ? g_strdup (type == PL_PARAM_BOOL ? "false"
                                                : type == PL_PARAM_STRING ? "" : "0")
                                    : param_text (L, -1);
      if (!def)
        luaL_error (L, "register_pass %s: the default of '%s' must be a number, string or boolean", pass, name);
      lua_getfield (L, t, "description");
      PlPassParam pp = { g_strdup (name), type, def, g_strdup (luaL_optstring (L, -1, "")) };
      g_array_append_val (params, pp);
      lua_settop (L, t - 1);
    }
  return params;
}

/* Checks the defaults parse as their types (with the pass manager's own parser). */
static void
check_defaults (lua_State *L, const PlPass *pass)
{
  gpointer *slot = pl_lua_box (L, (GDestroyNotify) pl_pass_args_free);
  PlPassArgs *args = *slot = pl_pass_args_new (pass);
  for (int i = 0; i < pass->n_params; i++)
    {
      GError *error = NULL;
      if (!pl_pass_args_set (args, pass->params[i].name, pass->params[i].default_value, &error))
        {
          g_prefix_error (&error, "register_pass: the default of ");
          pl_lua_raise_gerror (L, error);
        }
    }
  pl_pass_args_free (pl_lua_box_steal (L, -1));
  lua_pop (L, 1);
}

static int
l_register_pass (lua_State *L)
{
  PlLua *pl = pl_lua_get (L);
  luaL_checktype (L, 1, LUA_TTABLE);
  lua_settop (L, 1);
  if (lua_getfield (L, 1, "name") != LUA_TSTRING || !*lua_tostring (L, 2))
    return luaL_error (L, "register_pass: 'name' (a string) is required");
  const char *name = lua_tostring (L, 2);
  int dtype = lua_getfield (L, 1, "description");
  if (dtype != LUA_TNIL && dtype != LUA_TSTRING)
    return luaL_error (L, "register_pass %s: 'description' must be a string", name);
  const char *description = dtype == LUA_TSTRING ? lua_tostring (L, 3) : "";
  if (lua_getfield (L, 1, "run") != LUA_TFUNCTION)                  /* 4 */
    return luaL_error (L, "register_pass %s: 'run' must be a function (g, params)", name);
  const PlPass *existing = pl_pass_find (name);
  if (existing && existing->builtin)
    return luaL_error (L, "register_pass: '%s' is a built-in pass and cannot be replaced", name);
  if (pl->busy_pipelines > 0)
    return luaL_error (L, "register_pass: passes cannot be registered while a pipeline runs");
  /* Pipelines and arguments left to the collector by errors point at
   * their passes: free them before a pass may be replaced. */
  lua_gc (L, LUA_GCCOLLECT);
  sweep_passes (L, pl);
  lua_getfield (L, 1, "params");
  GArray *params = check_params (L, 5, name);                       /* 6: box */

  gpointer *slot = pl_lua_box (L, (GDestroyNotify) pl_pass_free);   /* 7 */
  PlPass *pass = *slot = pl_pass_new (name, description, (PlPassParam *) params->data, (int) params->len,
                                      lua_pass_run, NULL, NULL);
  check_defaults (L, pass);
  lua_Debug ar;
  lua_pushvalue (L, 4);
  lua_getinfo (L, ">S", &ar);
  lua_pushvalue (L, 4);
  int ref = luaL_ref (L, LUA_REGISTRYINDEX);

  /* Nothing below raises. */
  PlLuaPass *lp = g_new0 (PlLuaPass, 1);
  lp->owner = pl;
  lp->name = g_strdup (name);
  lp->source = g_strdup (ar.source);
  lp->func_ref = ref;
  lp->registered = 1;
  g_ptr_array_add (pl->passes, lp);
  pass->user_data = lp;
  pass->destroy = lua_pass_dropped;
  pl_lua_box_steal (L, 7);
  GError *error = NULL;
  if (!pl_pass_register (pass, &error))
    pl_lua_raise_gerror (L, error);
  return 0;
}

/* --- tensors and running graphs ------------------------------------------------------------ */

void
pl_lua_push_tensor_data (lua_State *L, const PlTensor *t)
{
  lua_createtable (L, (int) MIN (t->numel, INT_MAX), 0);
  for (int64_t i = 0; i < t->numel; i++)
    {
      if (t->dtype == PL_DTYPE_BOOL)
        lua_pushboolean (L, pl_tensor_get_i64 (t, i) != 0);
      else if (pl_dtype_is_float (t->dtype))
        lua_pushnumber (L, pl_tensor_get_f64 (t, i));
      else
        lua_pushinteger (L, pl_tensor_get_i64 (t, i));
      lua_rawseti (L, -2, i + 1);
    }
}

void
pl_lua_push_tensor (lua_State *L, const PlTensor *t)
{
  lua_createtable (L, 0, 3);
  lua_pushstring (L, pl_dtype_name (t->dtype));
  lua_setfield (L, -2, "dtype");
  PlShape s = pl_tensor_shape (t);
  pl_lua_push_shape (L, &s);
  lua_setfield (L, -2, "shape");
  pl_lua_push_tensor_data (L, t);
  lua_setfield (L, -2, "data");
}

int
pl_lua_check_dims (lua_State *L, int idx, int64_t *dims, const char *what)
{
  idx = lua_absindex (L, idx);
  if (!lua_istable (L, idx))
    luaL_error (L, "%s: the shape must be an array of sizes, not a %s", what, luaL_typename (L, idx));
  lua_Unsigned rank = lua_rawlen (L, idx);
  if (rank > PL_MAX_RANK)
    luaL_error (L, "%s: rank %d is more than %d", what, (int) rank, PL_MAX_RANK);
  for (int i = 0; i < (int) rank; i++)
    {
      lua_rawgeti (L, idx, i + 1);
      int ok;
      lua_Integer d = lua_tointegerx (L, -1, &ok);
      lua_pop (L, 1);
      if (!ok || d < 0)
        luaL_error (L, "%s: dim %d of the shape is not a size (a non-negative integer)", what, i + 1);
      dims[i] = d;
    }
  return (int) rank;
}

void
pl_lua_fill_tensor (lua_State *L, int idx, PlTensor *t, const char *what)
{
  idx = lua_absindex (L, idx);
  if (lua_type (L, idx) == LUA_TNUMBER)
    {
      for (int64_t i = 0; i < t->numel; i++)
        pl_tensor_set_f64 (t, i, lua_tonumber (L, idx));
      return;
    }
  if (!lua_istable (L, idx))
    luaL_error (L, "%s: data must be a flat array of numbers, not a %s", what, luaL_typename (L, idx));
  if ((int64_t) lua_rawlen (L, idx) != t->numel)
    luaL_error (L, "%s: data has %d elements but the shape holds %d", what, (int) lua_rawlen (L, idx),
                (int) t->numel);
  bool is_float = pl_dtype_is_float (t->dtype);
  for (int64_t i = 0; i < t->numel; i++)
    {
      int type = lua_rawgeti (L, idx, i + 1);
      int ok = 0;
      if (type == LUA_TBOOLEAN)
        pl_tensor_set_i64 (t, i, lua_toboolean (L, -1)), ok = 1;
      else if (is_float)
        {
          lua_Number x = lua_tonumberx (L, -1, &ok);
          if (ok)
            pl_tensor_set_f64 (t, i, x);
        }
      else
        {
          lua_Integer x = lua_tointegerx (L, -1, &ok);
          if (ok)
            pl_tensor_set_i64 (t, i, x);
        }
      lua_pop (L, 1);
      if (!ok)
        luaL_error (L, "%s: element %d is not a%s", what, (int) i + 1, is_float ? " number" : "n integer");
    }
}


typedef struct {
  PlTensor **t;
  int        n;
} TensorArray;

static void
tensor_array_free (gpointer p)
{
  TensorArray *a = p;
  for (int i = 0; i < a->n; i++)
    if (a->t[i])
      pl_tensor_unref (a->t[i]);
  g_free (a->t);
  g_free (a);
}

static TensorArray *
boxed_tensors (lua_State *L, int n)
{
  gpointer *slot = pl_lua_box (L, tensor_array_free);
  TensorArray *a = g_new0 (TensorArray, 1);
  a->t = n > 0 ? g_new0 (PlTensor *, n) : NULL;
  a->n = n;
  *slot = a;
  return a;
}

/* The tensor for graph input v from the Lua spec at idx: {shape=, data=} or a data array. */
static PlTensor *
input_tensor (lua_State *L, int idx, const PlValue *v, TensorArray *inputs, int slot)
{
  idx = lua_absindex (L, idx);
  int data = idx;
  int64_t dims[PL_MAX_RANK];
  int rank;
  const char *what = lua_pushfstring (L, "exec: input '%s'", v->name);
  if (lua_istable (L, idx) && lua_getfield (L, idx, "data") != LUA_TNIL)
    {
      data = lua_gettop (L);
      if (lua_getfield (L, idx, "shape") != LUA_TNIL)
        rank = pl_lua_check_dims (L, -1, dims, what);
      else if (pl_shape_get_dims (&v->shape, dims))
        rank = v->shape.rank;
      else
        return luaL_error (L, "%s has a symbolic shape: give its shape", what), NULL;
    }
  else if (pl_shape_get_dims (&v->shape, dims))
    rank = v->shape.rank;
  else
    return luaL_error (L, "%s has a symbolic shape: give {shape=, data=}", what), NULL;
  GError *error = NULL;
  PlTensor *t = inputs->t[slot] = pl_tensor_new (v->dtype, rank, dims, &error);
  if (!t)
    pl_lua_raise_gerror (L, error);
  pl_lua_fill_tensor (L, data, t, what);
  return t;
}

static int
l_exec (lua_State *L)
{
  PlGraph *g = pl_lua_check_graph (L, 1);
  lua_settop (L, 2);
  int seed = 1;
  lua_Integer sym_size = 1, repeat = 1;
  PlBackend backend = PL_BACKEND_REFERENCE;
  bool has_inputs = false;
  if (!lua_isnil (L, 2))
    {
      luaL_checktype (L, 2, LUA_TTABLE);
      lua_getfield (L, 2, "backend");
      const char *name = luaL_optstring (L, -1, "reference");
      if (!pl_backend_from_name (name, &backend))
        return luaL_error (L, "exec: unknown backend '%s' (reference, cpu or cuda)", name);
      lua_getfield (L, 2, "runs");
      repeat = luaL_optinteger (L, -1, 1);
      if (repeat < 1 || repeat > 100000)
        return luaL_error (L, "exec: 'runs' takes 1 to 100000");
      lua_getfield (L, 2, "random_seed");
      seed = (int) luaL_optinteger (L, -1, 1);
      lua_getfield (L, 2, "sym_size");
      sym_size = luaL_optinteger (L, -1, 1);
      has_inputs = lua_getfield (L, 2, "inputs") != LUA_TNIL;
      if (has_inputs && !lua_istable (L, -1))
        return luaL_error (L, "exec: 'inputs' must be a table {name = {shape=, data=}}");
      lua_replace (L, 3);
      lua_settop (L, 3);
    }
  if (has_inputs)
    for (lua_pushnil (L); lua_next (L, 3); lua_pop (L, 1))
      {
        PlValue *v = lua_type (L, -2) == LUA_TSTRING ? pl_graph_find_value (g, lua_tostring (L, -2)) : NULL;
        if (!v || !v->is_input)
          return luaL_error (L, "exec: the graph has no input '%s'", luaL_tolstring (L, -2, NULL));
      }

  int n = (int) g->inputs->len;
  TensorArray *inputs = boxed_tensors (L, n);
  TensorArray *random = boxed_tensors (L, 0);  /* filled when an input is not given */
  int top = lua_gettop (L);
  GError *error = NULL;
  for (int i = 0; i < n; i++, lua_settop (L, top))
    {
      const PlValue *v = g->inputs->pdata[i];
      if (has_inputs && lua_getfield (L, 3, v->name) != LUA_TNIL)
        {
          input_tensor (L, -1, v, inputs, i);
          continue;
        }
      if (!random->t)
        {
          random->t = pl_random_inputs (g, (guint32) seed, sym_size, &error);
          if (!random->t)
            pl_lua_raise_gerror (L, error);
          random->n = n;
        }
      inputs->t[i] = pl_tensor_ref (random->t[i]);
    }

  TensorArray *outputs = boxed_tensors (L, 0);
  double ms = 0;
  int kernels = 0;
  if (backend == PL_BACKEND_REFERENCE)
    {
      gint64 t0 = g_get_monotonic_time ();
      outputs->t = pl_interp_run (g, inputs->t, NULL, &error);
      ms = (double) (g_get_monotonic_time () - t0) / 1000.0;
    }
  else
    {
      /* generated kernels: compiled once, run `repeat` times after a warm-up */
      PlCompileOptions copt;
      pl_compile_options_init (&copt, backend);
      PlExecutable *e = pl_executable_new (g, &copt, &error);
      PlRunReport *rep = NULL;
      if (e)
        outputs->t = pl_executable_run (e, inputs->t, (int) repeat, &rep, &error);
      if (rep)
        {
          ms = rep->total_ms;
          kernels = rep->n_kernels;
          pl_run_report_free (rep);
        }
      if (e)
        pl_executable_free (e);
    }
  if (!outputs->t)
    pl_lua_raise_gerror (L, error);
  outputs->n = (int) g->outputs->len;
  lua_createtable (L, 0, outputs->n);
  for (int i = 0; i < outputs->n; i++)
    {
      pl_lua_push_tensor (L, outputs->t[i]);
      lua_setfield (L, -2, ((PlValue *) g->outputs->pdata[i])->name);
    }
  /* what ran: {backend=, ms= (median over the repeats), kernels=} */
  lua_createtable (L, 0, 3);
  lua_pushstring (L, pl_backend_name (backend));
  lua_setfield (L, -2, "backend");
  lua_pushnumber (L, ms);
  lua_setfield (L, -2, "ms");
  lua_pushinteger (L, kernels);
  lua_setfield (L, -2, "kernels");
  return 2;
}

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
  push_diff (L, *slot);
  return 1;
}

/* --- the module ------------------------------------------------------------------------------ */

void
pl_lua_passlab_init (lua_State *L)
{
  luaL_newmetatable (L, PL_LUA_HISTORY_MT);
  lua_pushcfunction (L, history_gc);
  lua_setfield (L, -2, "__gc");
  lua_pushstring (L, PL_LUA_HISTORY_MT);
  lua_setfield (L, -2, "__metatable");
  lua_pop (L, 1);
  lua_newtable (L);
  lua_createtable (L, 0, 1);
  lua_pushstring (L, "k");
  lua_setfield (L, -2, "__mode");
  lua_setmetatable (L, -2);
  lua_setfield (L, LUA_REGISTRYINDEX, HISTORIES_KEY);
}

int
pl_lua_open_passlab (lua_State *L)
{
  static const luaL_Reg functions[] = {
    { "load", l_load },
    { "parse", l_parse },
    { "passes", l_passes },
    { "run", l_run },
    { "register_pass", l_register_pass },
    { "exec", l_exec },
    { "check", l_check },
    { "diff", l_diff },
    { NULL, NULL },
  };
  luaL_newlib (L, functions);
  return 1;
}

/* lua-passlab-run.c — passlab.passes() and passlab.run(): the passes as
 * Lua tables, pipelines read from Lua ({ "simplify", {"fuse-loops",
 * max_ops=16} }), and the history a run returns as a Lua table whose step
 * graphs are read-only handles into the PlHistory (see lua-passlab.c for
 * the shape of the tables).
 */
#define G_LOG_DOMAIN "passlab"

#include "lua-private.h"

#include <string.h>

#define HISTORIES_KEY "passlab.histories"  /* registry: history table -> its box (weak keys) */

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

int
pl_lua_passlab_passes (lua_State *L)
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
char *
pl_lua_param_text (lua_State *L, int idx)
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
      char *text = pl_lua_param_text (L, -1);
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

void
pl_lua_push_graph_diff (lua_State *L, const PlGraphDiff *d)
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
      pl_lua_push_graph_diff (L, s->diff);
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

int
pl_lua_passlab_run (lua_State *L)
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

/* The history metatable, and the registry table from history tables to their boxes. */
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

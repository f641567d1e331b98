/* pass.h — what a pass is: a name, a one-line description, typed parameters
 * with defaults, and a run function that rewrites a graph in place and says
 * what it did in a report. Built-in passes (one file each in passes/) and
 * Lua passes register the same way. */
#pragma once

#include "graph.h"

G_BEGIN_DECLS

typedef enum {
  PL_PARAM_INT,
  PL_PARAM_FLOAT,
  PL_PARAM_BOOL,
  PL_PARAM_STRING,
} PlParamType;

typedef struct {
  char        *name;
  PlParamType  type;
  char        *default_value;  /* as text: "16", "0.5", "true", "nchw" */
  char        *description;
} PlPassParam;

typedef struct _PlPass PlPass;
typedef struct _PlPassArgs PlPassArgs;

/* What one run of a pass did, for people: `text` holds one line per action;
 * `counters` counts actions by kind ("rewrites", "nodes removed", ...). */
typedef struct {
  bool        changed;
  GString    *text;
  GHashTable *counters;       /* char* -> int64 (boxed in a gint64*) */
  GPtrArray  *counter_order;  /* counter names in the order first counted */
} PlPassReport;

typedef bool (*PlPassRunFunc) (PlGraph *g, const PlPassArgs *args, PlPassReport *report,
                               gpointer user_data, GError **error);

struct _PlPass {
  char           *name;
  char           *description;
  PlPassParam    *params;
  int             n_params;
  PlPassRunFunc   run;
  gpointer        user_data;
  GDestroyNotify  destroy;     /* frees user_data when the pass is unregistered */
  bool            builtin;
};

/* --- registry ----------------------------------------------------------------- */

/* Registers the built-in passes once. */
void          pl_passes_init      (void);
/* Adds a pass (taking ownership). A pass of the same name that is not
 * built-in is replaced; replacing a built-in pass fails. */
bool          pl_pass_register    (PlPass *pass, GError **error);
bool          pl_pass_unregister  (const char *name);
const PlPass *pl_pass_find        (const char *name);
/* All passes, built-in first, in registration order. g_ptr_array_unref it. */
GPtrArray    *pl_pass_list        (void);
/* A new pass record; params are copied from a static table. */
PlPass       *pl_pass_new         (const char *name, const char *description,
                                   const PlPassParam *params, int n_params,
                                   PlPassRunFunc run, gpointer user_data, GDestroyNotify destroy);
void          pl_pass_free        (PlPass *pass);
const char   *pl_param_type_name  (PlParamType type);

/* --- arguments ---------------------------------------------------------------- */

/* The defaults of pass's parameters. */
PlPassArgs   *pl_pass_args_new    (const PlPass *pass);
PlPassArgs   *pl_pass_args_copy   (const PlPassArgs *args);
void          pl_pass_args_free   (PlPassArgs *args);
/* Sets a parameter from text; fails on an unknown name or a value that does
 * not parse as the parameter's type ("fuse-loops.max_ops: 'x' is not an integer"). */
bool          pl_pass_args_set    (PlPassArgs *args, const char *name, const char *value, GError **error);
int64_t       pl_pass_args_int    (const PlPassArgs *args, const char *name);
double        pl_pass_args_float  (const PlPassArgs *args, const char *name);
bool          pl_pass_args_bool   (const PlPassArgs *args, const char *name);
const char   *pl_pass_args_string (const PlPassArgs *args, const char *name);
/* "max_ops=16, min_bytes=0", only the parameters that differ from defaults. */
char         *pl_pass_args_describe (const PlPassArgs *args);
const PlPass *pl_pass_args_pass   (const PlPassArgs *args);

/* --- reports ------------------------------------------------------------------ */

PlPassReport *pl_pass_report_new    (void);
void          pl_pass_report_free   (PlPassReport *r);
void          pl_pass_report_printf (PlPassReport *r, const char *fmt, ...) G_GNUC_PRINTF (2, 3);
void          pl_pass_report_count  (PlPassReport *r, const char *counter, int64_t delta);
int64_t       pl_pass_report_get    (const PlPassReport *r, const char *counter);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PlPassArgs, pl_pass_args_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (PlPassReport, pl_pass_report_free)

G_END_DECLS

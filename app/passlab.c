/* passlab.c — the workbench's entry point: everything else lives in
 * ui/pl-application.c (options, windows, screenshots). */
#define G_LOG_DOMAIN "passlab"

#include "pl-application.h"
#include "runtime.h"

int
main (int argc, char **argv)
{
  pl_runtime_init_process (argv);
  g_autoptr (PlApplication) app = pl_application_new (PASSLAB_VERSION, G_APPLICATION_DEFAULT_FLAGS);
  int status = g_application_run (G_APPLICATION (app), argc, argv);
  return status ? status : pl_application_get_exit_status (app);
}

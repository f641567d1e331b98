/* layout-pass.c — the `layout` pass (seed 003). */
#define G_LOG_DOMAIN "passlab"
#include "pass.h"

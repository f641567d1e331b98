/* tune.c — see tune.h. */
#define G_LOG_DOMAIN "passlab"
#include "tune.h"

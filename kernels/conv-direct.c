/* conv-direct.c — see conv-direct.h. */
#define G_LOG_DOMAIN "passlab"
#include "conv-direct.h"

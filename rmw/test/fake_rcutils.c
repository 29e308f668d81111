/*
 * A stand-in for librcutils.so with the one function librmw_rgaps calls:
 * it records the last error the rmw set, for rmw_local_load.c.
 */
#include <stddef.h>
#include <stdio.h>

static char last[1024];

void rcutils_set_error_state(const char *error_string, const char *file, size_t line_number)
{
	(void)file;
	(void)line_number;
	snprintf(last, sizeof last, "%s", error_string ? error_string : "");
}

const char *fake_rcutils_last_error(void) { return last; }

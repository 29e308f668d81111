/*
 * Loads rcutils and the rmw library the way rclpy does: Python loads the
 * rclpy extension RTLD_LOCAL, which brings rcl and rcutils along, and
 * rmw_implementation dlopens librmw_rgaps.so RTLD_LOCAL too, so none of
 * them is in the global scope. An rmw error must still reach rcutils' error
 * state (rclpy reported "error not set" for rmw errors).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "include/rgaps_rmw_abi.h"

int main(void)
{
	void *rcutils = dlopen("librcutils.so", RTLD_NOW | RTLD_LOCAL);
	if (rcutils == NULL) {
		fprintf(stderr, "dlopen librcutils.so: %s\n", dlerror());
		return 1;
	}
	const char *(*last)(void) = (const char *(*)(void))dlsym(rcutils, "fake_rcutils_last_error");
	void *rmw = dlopen("librmw_rgaps.so", RTLD_NOW | RTLD_LOCAL);
	if (rmw == NULL || last == NULL) {
		fprintf(stderr, "dlopen librmw_rgaps.so: %s\n", dlerror());
		return 1;
	}
	rmw_ret_t (*init_options_init)(rmw_init_options_t *, rcutils_allocator_t) =
		(rmw_ret_t (*)(rmw_init_options_t *, rcutils_allocator_t))dlsym(rmw, "rmw_init_options_init");
	if (init_options_init == NULL) {
		fprintf(stderr, "dlsym rmw_init_options_init: %s\n", dlerror());
		return 1;
	}
	rcutils_allocator_t none;
	memset(&none, 0, sizeof none);
	rmw_ret_t rc = init_options_init(NULL, none);
	printf("ret %d, rcutils error state: \"%s\"\n", (int)rc, last());
	if (rc == RMW_RET_OK || strstr(last(), "rmw_rgaps") == NULL) {
		printf("FAIL: the rmw error did not reach rcutils\n");
		return 1;
	}
	printf("ALL PASS\n");
	return 0;
}

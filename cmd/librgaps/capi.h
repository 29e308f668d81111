/*
 * Private declarations of librgaps shared by the C half (capi.c) and the Go
 * half (the cgo preamble of the Go files). Only declarations and type
 * definitions: cgo includes this in more than one translation unit.
 */
#ifndef RGAPS_CAPI_H
#define RGAPS_CAPI_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "rgaps.h"

/* A publisher or subscriber handle as C sees it: allocated and freed by
 * capi.c, filled by Go. It holds no Go pointer: Go files the handle's state
 * under the struct's address (cabi.Handles), so the address is the handle.
 * The rgaps_publisher_t and rgaps_subscriber_t of rgaps.h point at one of
 * these (their structs stay incomplete: capi.c converts). */
struct rgaps_handle {
	uint32_t magic; /* RGAPS_PUB_MAGIC or RGAPS_SUB_MAGIC while live (debugging aid only) */
	int32_t memory; /* RGAPS_MEMORY_HOST or RGAPS_MEMORY_GPU */
};

#define RGAPS_PUB_MAGIC 0x52475042u /* "RGPB" */
#define RGAPS_SUB_MAGIC 0x52475342u /* "RGSB" */

/* Thread-local error state (capi.c). Go calls this during a call from C, on
 * the calling C thread, to attach a detailed message to the failure. */
__attribute__((visibility("hidden"))) void rgaps__set_message(const char *msg);

/* The Go half (exported from Go; see the Go files). */
#endif

/*
 * librmw_rgaps: nodes and their graph guard conditions (rmw_c.h lists the
 * files).
 */
#include "rmw_c.h"

/* ---- nodes ----------------------------------------------------------------------------------- */

rmw_node_t *rmw_create_node(rmw_context_t *context, const char *name, const char *namespace_)
{
	RGAPS_GO_CALLS;
	ARG(name, NULL);
	ARG(namespace_, NULL);
	if (!live_context(context))
		return NULL;
	const rcutils_allocator_t *a = ctx_alloc(context);
	rmw_node_t *n = rgaps_alloc(a, sizeof *n);
	rgaps_node *d = rgaps_alloc(a, sizeof *d);
	char *nm = rgaps_strdup(a, name), *ns = rgaps_strdup(a, namespace_);
	if (n == NULL || d == NULL || nm == NULL || ns == NULL) {
		rgaps_set_error("rmw_rgaps: allocating the node failed");
		goto fail;
	}
	if (rgapsgo_node_create(context->impl->go, nm, ns, &d->go, &d->graph.go) != RMW_RET_OK)
		goto fail;
	d->magic = RGAPS_MAGIC_NODE;
	d->graph.magic = RGAPS_MAGIC_GC;
	d->graph.kind = RGAPS_GC_GRAPH;
	d->graph_gc.implementation_identifier = rgaps_identifier;
	d->graph_gc.data = &d->graph;
	d->graph_gc.context = context;
	n->implementation_identifier = rgaps_identifier;
	n->data = d;
	n->name = nm;
	n->namespace_ = ns;
	n->context = context;
	return n;
fail:
	rgaps_free(a, nm);
	rgaps_free(a, ns);
	rgaps_free(a, d);
	rgaps_free(a, n);
	return NULL;
}

rmw_ret_t rmw_destroy_node(rmw_node_t *node)
{
	RGAPS_GO_CALLS;
	NODE(node, d);
	const rcutils_allocator_t a = *ctx_alloc(node->context);
	rmw_ret_t rc = rgapsgo_node_destroy(d->go, d->graph.go);
	d->magic = RGAPS_MAGIC_DEAD;
	d->graph.magic = RGAPS_MAGIC_DEAD;
	rgaps_free(&a, (void *)node->name);
	rgaps_free(&a, (void *)node->namespace_);
	rgaps_free(&a, d);
	rgaps_free(&a, node);
	return rc;
}

rmw_ret_t rmw_node_assert_liveliness(const rmw_node_t *node)
{
	NODE(node, d);
	(void)d;
	return RMW_RET_OK; /* liveliness is automatic: the process's endpoints live with it */
}

const rmw_guard_condition_t *rmw_node_get_graph_guard_condition(const rmw_node_t *node)
{
	rgaps_node *d = node_data(node);
	return d == NULL ? NULL : &d->graph_gc;
}

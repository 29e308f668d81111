// Domains, participants, QoS, endpoints, wait sets and the built-in
// discovery readers, each one rgd_* call for Go. Included by cdds.go only
// (after rgdds_load.h).
#ifndef RGAPS_DDS_ENTITIES_H
#define RGAPS_DDS_ENTITIES_H

int32_t rgd_create_domain(uint32_t domain, const char *xml) { return rgd.dds_create_domain(domain, xml); }

int32_t rgd_create_participant(uint32_t domain, const void *ud, size_t udlen) {
	dds_qos_t *q = rgd.dds_create_qos();
	if (udlen)
		rgd.dds_qset_userdata(q, ud, udlen);
	int32_t pp = rgd.dds_create_participant(domain, q, NULL);
	rgd.dds_delete_qos(q);
	return pp;
}

int32_t rgd_delete(int32_t e) { return rgd.dds_delete(e); }

int32_t rgd_get_guid(int32_t e, uint8_t *out) {
	dds_guid_t g;
	int32_t rc = rgd.dds_get_guid(e, &g);
	if (rc == 0)
		memcpy(out, g.v, 16);
	return rc;
}

// rgd_qos_new makes the QoS of spec s with user data ud (udlen 0: none).
// Every endpoint is XCDR1, the representation of ROS's payloads.
dds_qos_t *rgd_qos_new(const struct rgd_qos_spec *s, const void *ud, size_t udlen) {
	dds_qos_t *q = rgd.dds_create_qos();
	rgd.dds_qset_history(q, s->history, s->depth);
	rgd.dds_qset_reliability(q, s->reliability, s->max_blocking);
	rgd.dds_qset_durability(q, s->durability);
	if (s->writer) {
		rgd.dds_qset_writer_data_lifecycle(q, false);
		if (s->durability == DDS_DURABILITY_TRANSIENT_LOCAL && s->history == DDS_HISTORY_KEEP_ALL && s->tl_depth > 0)
			rgd.dds_qset_durability_service(q, 0, DDS_HISTORY_KEEP_LAST, s->tl_depth, DDS_LENGTH_UNLIMITED,
							DDS_LENGTH_UNLIMITED, DDS_LENGTH_UNLIMITED);
		else if (s->durability == DDS_DURABILITY_TRANSIENT_LOCAL)
			rgd.dds_qset_durability_service(q, 0, s->history, s->depth, DDS_LENGTH_UNLIMITED,
							DDS_LENGTH_UNLIMITED, DDS_LENGTH_UNLIMITED);
	}
	rgd.dds_qset_liveliness(q, s->liveliness, s->lease);
	if (s->deadline != DDS_INFINITY)
		rgd.dds_qset_deadline(q, s->deadline);
	if (s->lifespan != DDS_INFINITY)
		rgd.dds_qset_lifespan(q, s->lifespan);
	dds_data_representation_id_t xcdr1 = DDS_DATA_REPRESENTATION_XCDR1;
	rgd.dds_qset_data_representation(q, 1, &xcdr1);
	if (s->ignore_local)
		rgd.dds_qset_ignorelocal(q, DDS_IGNORELOCAL_PARTICIPANT);
	if (udlen)
		rgd.dds_qset_userdata(q, ud, udlen);
	return q;
}

void rgd_qos_free(dds_qos_t *q) { rgd.dds_delete_qos(q); }

// rgd_qos_spec_of reads q into s; absent policies read as DDS's defaults
// (KEEP_LAST 1, best effort, volatile, automatic, no deadline or lifespan).
static void rgd_qos_spec_of(const dds_qos_t *q, struct rgd_qos_spec *s, void **ud, size_t *udlen) {
	*s = (struct rgd_qos_spec){.history = DDS_HISTORY_KEEP_LAST, .depth = 1,
		.reliability = DDS_RELIABILITY_BEST_EFFORT, .durability = DDS_DURABILITY_VOLATILE,
		.liveliness = DDS_LIVELINESS_AUTOMATIC, .lease = DDS_INFINITY,
		.deadline = DDS_INFINITY, .lifespan = DDS_INFINITY, .max_blocking = 0};
	*ud = NULL;
	*udlen = 0;
	if (!q)
		return;
	dds_history_kind_t hk;
	dds_reliability_kind_t rk;
	dds_durability_kind_t dk;
	dds_liveliness_kind_t lk;
	if (rgd.dds_qget_history(q, &hk, &s->depth))
		s->history = hk;
	if (rgd.dds_qget_reliability(q, &rk, &s->max_blocking))
		s->reliability = rk;
	if (rgd.dds_qget_durability(q, &dk))
		s->durability = dk;
	if (rgd.dds_qget_liveliness(q, &lk, &s->lease))
		s->liveliness = lk;
	rgd.dds_qget_deadline(q, &s->deadline);
	rgd.dds_qget_lifespan(q, &s->lifespan);
	if (!rgd.dds_qget_userdata(q, ud, udlen) || *udlen == 0) {
		if (*ud)
			rgd.dds_free(*ud);
		*ud = NULL;
		*udlen = 0;
	}
}

// rgd_qos_get reads the QoS entity e has (its actual QoS).
int32_t rgd_qos_get(int32_t e, struct rgd_qos_spec *s, void **ud, size_t *udlen) {
	dds_qos_t *q = rgd.dds_create_qos();
	int32_t rc = rgd.dds_get_qos(e, q);
	if (rc == 0)
		rgd_qos_spec_of(q, s, ud, udlen);
	rgd.dds_delete_qos(q);
	return rc;
}

int32_t rgd_create_writer(int32_t pp, int32_t topic, const dds_qos_t *q) { return rgd.dds_create_writer(pp, topic, q, NULL); }
int32_t rgd_create_reader(int32_t pp, int32_t topic, const dds_qos_t *q) { return rgd.dds_create_reader(pp, topic, q, NULL); }

// rgd_matched reports how many readers (writer != 0) or writers match e.
int32_t rgd_matched(int32_t e, int32_t writer, uint32_t *count) {
	int32_t rc;
	if (writer) {
		dds_publication_matched_status_t st;
		if ((rc = rgd.dds_get_publication_matched_status(e, &st)) == 0)
			*count = st.current_count;
	} else {
		dds_subscription_matched_status_t st;
		if ((rc = rgd.dds_get_subscription_matched_status(e, &st)) == 0)
			*count = st.current_count;
	}
	return rc;
}

// rgd_incompatible reports how many endpoints of the other kind e did not
// match for incompatible QoS (offered, writer != 0; requested otherwise),
// and the DDS policy id of the last one.
int32_t rgd_incompatible(int32_t e, int32_t writer, uint32_t *total, int32_t *policy) {
	int32_t rc;
	if (writer) {
		dds_offered_incompatible_qos_status_t st;
		if ((rc = rgd.dds_get_offered_incompatible_qos_status(e, &st)) == 0)
			*total = st.total_count, *policy = (int32_t)st.last_policy_id;
	} else {
		dds_requested_incompatible_qos_status_t st;
		if ((rc = rgd.dds_get_requested_incompatible_qos_status(e, &st)) == 0)
			*total = st.total_count, *policy = (int32_t)st.last_policy_id;
	}
	return rc;
}

// rgd_wait_for_acks waits up to timeout_ns until every matched reliable
// reader acknowledged what w wrote: 0, DDS_RETCODE_TIMEOUT, or an error.
int32_t rgd_wait_for_acks(int32_t w, int64_t timeout_ns) { return rgd.dds_wait_for_acks(w, timeout_ns); }

int32_t rgd_publication_guid(int32_t r, uint64_t ih, uint8_t *out) {
	dds_builtintopic_endpoint_t *ep = rgd.dds_get_matched_publication_data(r, ih);
	if (!ep)
		return DDS_RETCODE_PRECONDITION_NOT_MET;
	memcpy(out, ep->key.v, 16);
	rgd.dds_builtintopic_free_endpoint(ep);
	return 0;
}

// rgd_waitset_new makes a wait set, attached to a read condition of
// reader for any sample (deleting the reader deletes the condition) and
// to itself, so that its trigger (rgd_waitset_trigger) wakes a wait.
int32_t rgd_waitset_new(int32_t pp, int32_t reader) {
	int32_t ws = rgd.dds_create_waitset(pp);
	if (ws < 0)
		return ws;
	int32_t rc = rgd.dds_create_readcondition(reader, DDS_ANY_STATE);
	if (rc >= 0)
		rc = rgd.dds_waitset_attach(ws, rc, 0);
	if (rc >= 0)
		rc = rgd.dds_waitset_attach(ws, ws, 0);
	if (rc < 0) {
		rgd.dds_delete(ws);
		return rc;
	}
	return ws;
}

// rgd_waitset_wait returns how many attached entities triggered (0 on
// timeout), or a negative return code.
int32_t rgd_waitset_wait(int32_t ws, int64_t timeout_ns) { return rgd.dds_waitset_wait(ws, NULL, 0, timeout_ns); }
int32_t rgd_waitset_trigger(int32_t ws) { return rgd.dds_waitset_set_trigger(ws, true); }

// rgd_builtin_reader reads DCPSPublication (publications != 0) or
// DCPSSubscription.
int32_t rgd_builtin_reader(int32_t pp, int32_t publications) {
	return rgd.dds_create_reader(pp, publications ? DDS_BUILTIN_TOPIC_DCPSPUBLICATION : DDS_BUILTIN_TOPIC_DCPSSUBSCRIPTION, NULL, NULL);
}

enum { RGD_BATCH_MAX = 4096 };

struct rgd_batch {
	int32_t reader, n;
	void *buf[RGD_BATCH_MAX];
	dds_sample_info_t si[RGD_BATCH_MAX];
};

// rgd_batch_read reads (without taking) the alive instances of a built-in
// reader, up to RGD_BATCH_MAX, on loan. NULL with *n the return code on
// failure.
struct rgd_batch *rgd_batch_read(int32_t r, int32_t *n) {
	struct rgd_batch *b = calloc(1, sizeof *b);
	if (!b) {
		*n = DDS_RETCODE_OUT_OF_RESOURCES;
		return NULL;
	}
	b->reader = r;
	*n = rgd.dds_read_mask(r, b->buf, b->si, RGD_BATCH_MAX, RGD_BATCH_MAX,
			       DDS_ANY_SAMPLE_STATE | DDS_ANY_VIEW_STATE | DDS_ALIVE_INSTANCE_STATE);
	if (*n < 0) {
		free(b);
		return NULL;
	}
	b->n = *n;
	return b;
}

void rgd_batch_at(struct rgd_batch *b, int32_t i, struct rgd_ep *out) {
	const dds_builtintopic_endpoint_t *ep = b->buf[i];
	memset(out, 0, sizeof *out);
	out->valid = b->si[i].valid_data;
	if (!out->valid)
		return;
	memcpy(out->guid, ep->key.v, 16);
	memcpy(out->ppguid, ep->participant_key.v, 16);
	out->topic = ep->topic_name;
	out->type = ep->type_name;
	rgd_qos_spec_of(ep->qos, &out->qos, &out->ud, &out->udlen);
}

void rgd_batch_free(struct rgd_batch *b) {
	if (b->n > 0)
		rgd.dds_return_loan(b->reader, b->buf, b->n);
	free(b);
}
#endif

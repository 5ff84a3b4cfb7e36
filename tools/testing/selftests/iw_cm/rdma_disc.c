// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * rdma_disc: rdma_cm connection teardown tester for the iw_cm selftests.
 *
 * One binary, run once as server (-s) and once as client (-c) with the same
 * mode and count.  Every step checks its return code and every event is
 * checked against the one expected; anything else ends the process with
 * exit status 1 and a "FAIL:" line.  A missing event is a failure after
 * -t milliseconds (so a peer never hangs forever).
 *
 * Modes:
 *   both            each connection: both peers call rdma_disconnect() at the
 *                   same instant (the server passes a CLOCK_MONOTONIC deadline
 *                   in its accept private data); both calls must return 0 and
 *                   each side must then see exactly one DISCONNECTED.
 *   after           each connection: one peer disconnects, the other waits for
 *                   its DISCONNECTED event and only then calls
 *                   rdma_disconnect(), which must return 0 (not an error).
 *                   Even connections: client first; odd: server first.
 *   reject          the server rdma_reject()s every request; the client must
 *                   see REJECTED for each.
 *   destroy-req     the server destroys every request id without accepting or
 *                   rejecting it; the client must see REJECTED for each.
 *   destroy-listen  the server destroys request ids like destroy-req and, at
 *                   the K-th request (-k), destroys its listen id while the
 *                   client keeps connecting (-P ids in flight at once); the
 *                   client must see REJECTED, UNREACHABLE or CONNECT_ERROR for
 *                   every attempt (or rdma_connect() itself failing with
 *                   ECONNREFUSED: siw connects TCP synchronously), never
 *                   ESTABLISHED and never silence.
 *   flood           (server only) listens with backlog -b and handles requests
 *                   until none came for -t milliseconds: every -k-th request
 *                   accepted (a QP, rdma_accept; ESTABLISHED, then the peer's
 *                   close: DISCONNECTED, destroyed), the others rejected
 *                   (the first request may take 10 times -t to come);
 *                   prints the counts.  For connect_flood.sh, against raw TCP
 *                   MPA peers (mpa_peer.py flood).
 *   hold            -n connections set up (the client with -P in flight at
 *                   once; the server listens with backlog -b) and kept; each
 *                   side prints "held N connection(s)" once all are
 *                   ESTABLISHED, then keeps them until it is killed,
 *                   logging any event that comes meanwhile.  A connect
 *                   refused with EADDRINUSE (the port rdma_cm chose is
 *                   held by another TCP socket) is retried with a new id.  The QPs
 *                   share one CQ per process, so a process holds no file
 *                   per id.  For hold_scale.sh.
 *   read-close      (client only) one connection to a peer that never answers
 *                   an RDMA READ (mpa_peer.py server reply_hold): an RDMA
 *                   READ posted (siw puts it on its ORQ and sends it within
 *                   the post), -l ms in which no response may come,
 *                   rdma_disconnect() (graceful: the QP to CLOSING),
 *                   DISCONNECTED, the QP moved to ERROR as a ULP's drain
 *                   does; the READ must then complete with a flush error
 *                   within 5 s.  Upstream siw leaves it
 *                   on the ORQ for good (tools/testing/siw/0009: what
 *                   svcrdma's destroy of a QP with the READ's MR counted
 *                   and ksmbd's wait for the READ met).  For hostile_peer.sh.
 *
 * Usage:
 *   rdma_disc -s -a ADDR [-p PORT] -m MODE [-n COUNT] [-k K] [-t MS] [-b BACKLOG]
 *   rdma_disc -c -a ADDR [-p PORT] -m MODE [-n COUNT] [-P PARALLEL] [-t MS]
 *   rdma_disc -c -a ADDR -p PORT -m read-close [-l MS] [-t MS]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

enum mode { M_BOTH, M_AFTER, M_REJECT, M_DESTROY_REQ, M_DESTROY_LISTEN, M_FLOOD,
	    M_HOLD, M_READ_CLOSE };

static const char *const mode_names[] = {
	[M_BOTH] = "both",
	[M_AFTER] = "after",
	[M_REJECT] = "reject",
	[M_DESTROY_REQ] = "destroy-req",
	[M_DESTROY_LISTEN] = "destroy-listen",
	[M_FLOOD] = "flood",
	[M_HOLD] = "hold",
	[M_READ_CLOSE] = "read-close",
};

static const char *role = "?";
static int is_server = -1;
static enum mode mode = M_BOTH;
static const char *addr;
static const char *port = "7999";
static int count = 10;
static int parallel = 4;
static int kth = 3;
static int timeout_ms = 15000;
static int lead_ms = 200;
static int linger_ms = 500;
static int backlog = 64;

static struct rdma_event_channel *chan;
static struct rdma_addrinfo *rai;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "rdma_disc %s: FAIL: ", role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	va_list ap;

	printf("rdma_disc %s: ", role);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
	struct timespec ts = { .tv_sec = t / 1000000000ull,
			       .tv_nsec = t % 1000000000ull };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* Next event, or NULL after tmo milliseconds without one. */
static struct rdma_cm_event *get_event(int tmo)
{
	struct pollfd p = { .fd = chan->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int r;

	do {
		r = poll(&p, 1, tmo);
	} while (r < 0 && errno == EINTR);
	if (r < 0)
		fail("poll: %s", strerror(errno));
	if (r == 0)
		return NULL;
	if (rdma_get_cm_event(chan, &ev))
		fail("rdma_get_cm_event: %s", strerror(errno));
	return ev;
}

/* The next event must be @want on @id (any id when @id is NULL). */
static struct rdma_cm_event *expect(struct rdma_cm_id *id,
				    enum rdma_cm_event_type want,
				    const char *what)
{
	struct rdma_cm_event *ev = get_event(timeout_ms);

	if (!ev)
		fail("%s: no %s event within %d ms", what, rdma_event_str(want),
		     timeout_ms);
	if (ev->event != want || (id && ev->id != id))
		fail("%s: expected %s, got %s (status %d)%s", what,
		     rdma_event_str(want), rdma_event_str(ev->event),
		     ev->status, id && ev->id != id ? " on another id" : "");
	if (ev->status)
		fail("%s: %s with status %d", what, rdma_event_str(want),
		     ev->status);
	return ev;
}

static void ack(struct rdma_cm_event *ev)
{
	if (rdma_ack_cm_event(ev))
		fail("rdma_ack_cm_event: %s", strerror(errno));
}

/* No event at all may arrive within @ms (catches duplicate events). */
static void expect_silence(int ms, const char *what)
{
	struct rdma_cm_event *ev = get_event(ms);

	if (ev)
		fail("%s: unexpected %s (status %d)", what,
		     rdma_event_str(ev->event), ev->status);
}

static void create_qp(struct rdma_cm_id *id)
{
	/* Fresh attributes for every QP: rdma_create_qp() writes the CQs it
	 * created back into them (see cmtime.sh). */
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 2, .max_recv_wr = 2,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	if (rdma_create_qp(id, NULL, &attr))
		fail("rdma_create_qp: %s", strerror(errno));
}

static void destroy(struct rdma_cm_id *id)
{
	if (id->qp)
		rdma_destroy_qp(id);
	if (rdma_destroy_id(id))
		fail("rdma_destroy_id: %s", strerror(errno));
}

static void disconnect(struct rdma_cm_id *id, const char *what)
{
	if (rdma_disconnect(id))
		fail("%s: rdma_disconnect returned %s", what, strerror(errno));
}

/* ------------------------------------------------------------------ hold */

/* Mode hold: one CQ for every QP of the process (created on the device of
 * the first id that needs a QP). */
static struct ibv_cq *hold_cq;

static void hold_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	if (!hold_cq) {
		hold_cq = ibv_create_cq(id->verbs, 2 * count + 16, NULL, NULL, 0);
		if (!hold_cq)
			fail("ibv_create_cq(%d): %s", 2 * count + 16,
			     strerror(errno));
	}
	attr.send_cq = hold_cq;
	attr.recv_cq = hold_cq;
	if (rdma_create_qp(id, NULL, &attr))
		fail("rdma_create_qp: %s", strerror(errno));
}

/* Mode hold, setting up: @ev must be an ESTABLISHED, one more held. */
static void hold_established(struct rdma_cm_event *ev, int *held)
{
	if (ev->event != RDMA_CM_EVENT_ESTABLISHED)
		fail("hold: unexpected %s (status %d) with %d held",
		     rdma_event_str(ev->event), ev->status, *held);
	ack(ev);
	if (++*held % 1000 == 0 && *held < count)
		note("%d held", *held);
}

/*
 * All @held connections held: keep them until the process is killed,
 * logging any event that comes meanwhile (none is expected: with siw,
 * which has no disassociate_ucontext, `rdma link delete` waits for the
 * process to close its verbs context before rdma_cm sends DEVICE_REMOVAL).
 */
static void hold_forever(int held) __attribute__((noreturn));
static void hold_forever(int held)
{
	struct rdma_cm_event *ev;

	note("held %d connection(s)", held);
	for (;;) {
		ev = get_event(-1);
		note("while holding: %s (status %d)", rdma_event_str(ev->event),
		     ev->status);
		ack(ev);
	}
}

/* ---------------------------------------------------------------- server */

/* Mode flood: requests until -t ms pass without an event (see the top). */
static int server_flood(struct rdma_cm_id *listen_id)
{
	unsigned long reqs = 0, accepted = 0, rejected = 0, established = 0,
		      ended = 0, failed = 0;
	struct rdma_conn_param param;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	enum rdma_cm_event_type type;

	/* The peers may take long to start (python under TCG): the idle
	 * timeout counts from the first request. */
	while ((ev = get_event(reqs ? timeout_ms : 10 * timeout_ms))) {
		id = ev->id;
		type = ev->event;
		switch (type) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			reqs++;
			ack(ev);
			if (reqs % kth) {
				if (rdma_reject(id, "busy", 4))
					fail("rdma_reject: %s", strerror(errno));
				rejected++;
				destroy(id);
				break;
			}
			create_qp(id);
			memset(&param, 0, sizeof(param));
			param.responder_resources = 1;
			param.initiator_depth = 1;
			if (rdma_accept(id, &param)) {
				/* The peer may be gone already. */
				failed++;
				destroy(id);
				break;
			}
			accepted++;
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			established++;
			ack(ev);
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
		case RDMA_CM_EVENT_CONNECT_ERROR:
		case RDMA_CM_EVENT_UNREACHABLE:
		case RDMA_CM_EVENT_REJECTED:
			/* An accepted connection's end. */
			if (type == RDMA_CM_EVENT_DISCONNECTED)
				ended++;
			else
				failed++;
			ack(ev);
			destroy(id);
			break;
		default:
			fail("flood: unexpected %s (status %d)",
			     rdma_event_str(type), ev->status);
		}
	}
	if (rdma_destroy_id(listen_id))
		fail("rdma_destroy_id(listen): %s", strerror(errno));
	note("OK: flood: %lu requests, %lu rejected, %lu accepted, %lu established, %lu disconnected, %lu failed",
	     reqs, rejected, accepted, established, ended, failed);
	/* Every accepted connection ended (its id destroyed). */
	if (ended + failed != accepted)
		fail("flood: %lu accepted, %lu ended", accepted, ended + failed);
	return 0;
}

/* Mode hold, server: accept -n connections and keep them (see the top). */
static int server_hold(struct rdma_cm_id *listen_id)
{
	struct rdma_conn_param param = {
		.responder_resources = 1,
		.initiator_depth = 1,
	};
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	int held = 0;

	/* The client may take long to start: the first request may take 10
	 * times -t. */
	while (held < count) {
		ev = get_event(held ? timeout_ms : 10 * timeout_ms);
		if (!ev)
			fail("hold: no event within %d ms (%d of %d held)",
			     timeout_ms, held, count);
		id = ev->id;
		switch (ev->event) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			if (ev->listen_id != listen_id)
				fail("hold: request not on the listen id");
			ack(ev);
			hold_qp(id);
			if (rdma_accept(id, &param))
				fail("hold: rdma_accept: %s", strerror(errno));
			break;
		default:
			hold_established(ev, &held);
		}
	}
	hold_forever(held);
}

static int server(void)
{
	struct rdma_cm_id *listen_id, *id;
	struct rdma_cm_event *ev;
	struct rdma_conn_param param;
	uint64_t deadline;
	char what[64];
	int i, n = mode == M_DESTROY_LISTEN ? kth : count;

	if (rdma_create_id(chan, &listen_id, NULL, RDMA_PS_TCP))
		fail("rdma_create_id: %s", strerror(errno));
	if (rdma_bind_addr(listen_id, rai->ai_src_addr))
		fail("rdma_bind_addr %s:%s: %s", addr, port, strerror(errno));
	if (rdma_listen(listen_id, backlog))
		fail("rdma_listen: %s", strerror(errno));
	note("listening on %s:%s mode %s backlog %d", addr, port, mode_names[mode],
	     backlog);
	if (mode == M_FLOOD)
		return server_flood(listen_id);
	if (mode == M_HOLD)
		return server_hold(listen_id);

	for (i = 0; i < n; i++) {
		snprintf(what, sizeof(what), "request %d", i);
		ev = expect(NULL, RDMA_CM_EVENT_CONNECT_REQUEST, what);
		if (ev->listen_id != listen_id)
			fail("%s: request not on the listen id", what);
		id = ev->id;

		switch (mode) {
		case M_REJECT:
			if (rdma_reject(id, "no", 3))
				fail("%s: rdma_reject: %s", what, strerror(errno));
			ack(ev);
			destroy(id);
			continue;
		case M_DESTROY_REQ:
			ack(ev);
			destroy(id);
			continue;
		case M_DESTROY_LISTEN:
			ack(ev);
			if (i == n - 1) {
				/* The listener goes first, with the request
				 * still pending under it. */
				if (rdma_destroy_id(listen_id))
					fail("rdma_destroy_id(listen): %s",
					     strerror(errno));
				listen_id = NULL;
				note("listen id destroyed at request %d", i);
			}
			destroy(id);
			continue;
		default:
			break;
		}

		ack(ev);
		create_qp(id);
		memset(&param, 0, sizeof(param));
		param.responder_resources = 1;
		param.initiator_depth = 1;
		deadline = now_ns() + (uint64_t)lead_ms * 1000000ull;
		param.private_data = &deadline;
		param.private_data_len = sizeof(deadline);
		if (rdma_accept(id, &param))
			fail("%s: rdma_accept: %s", what, strerror(errno));
		ack(expect(id, RDMA_CM_EVENT_ESTABLISHED, what));

		if (mode == M_BOTH) {
			sleep_until(deadline);
			disconnect(id, what);
			ack(expect(id, RDMA_CM_EVENT_DISCONNECTED, what));
		} else if (i % 2 == 0) {
			/* The client disconnects first. */
			ack(expect(id, RDMA_CM_EVENT_DISCONNECTED, what));
			disconnect(id, what);
		} else {
			disconnect(id, what);
			ack(expect(id, RDMA_CM_EVENT_DISCONNECTED, what));
		}
		destroy(id);
	}

	/* Nothing else may arrive: no duplicate DISCONNECTED, and after the
	 * listener is gone no request. */
	expect_silence(linger_ms, "after the last connection");
	if (listen_id && rdma_destroy_id(listen_id))
		fail("rdma_destroy_id(listen): %s", strerror(errno));
	note("OK: %d request(s) handled, mode %s", n, mode_names[mode]);
	return 0;
}

/* ---------------------------------------------------------------- client */

static struct rdma_cm_id *start_connect(void *ctx)
{
	struct rdma_cm_id *id;

	if (rdma_create_id(chan, &id, ctx, RDMA_PS_TCP))
		fail("rdma_create_id: %s", strerror(errno));
	if (rdma_resolve_addr(id, NULL, rai->ai_dst_addr, 2000))
		fail("rdma_resolve_addr: %s", strerror(errno));
	return id;
}

/* 0, or the errno of a refused rdma_connect() when @refusal_ok. */
static int connect_id(struct rdma_cm_id *id, int refusal_ok)
{
	struct rdma_conn_param param = {
		.responder_resources = 1,
		.initiator_depth = 1,
		.retry_count = 7,
	};

	create_qp(id);
	if (rdma_connect(id, &param)) {
		/* siw makes the TCP connection inside rdma_connect(): with no
		 * listener left it fails right there. */
		if (refusal_ok && (errno == ECONNREFUSED || errno == ECONNRESET ||
				   errno == ETIMEDOUT))
			return errno;
		fail("rdma_connect: %s", strerror(errno));
	}
	return 0;
}

/* Sequential connections for the modes both and after. */
static int client_disc(void)
{
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	uint64_t deadline = 0, late;
	char what[64];
	int i;

	for (i = 0; i < count; i++) {
		snprintf(what, sizeof(what), "connection %d", i);
		id = start_connect(NULL);
		ack(expect(id, RDMA_CM_EVENT_ADDR_RESOLVED, what));
		if (rdma_resolve_route(id, 2000))
			fail("rdma_resolve_route: %s", strerror(errno));
		ack(expect(id, RDMA_CM_EVENT_ROUTE_RESOLVED, what));
		connect_id(id, 0);
		ev = expect(id, RDMA_CM_EVENT_ESTABLISHED, what);
		if (mode == M_BOTH) {
			if (ev->param.conn.private_data_len < sizeof(deadline) ||
			    !ev->param.conn.private_data)
				fail("%s: accept private data missing (len %u)",
				     what, ev->param.conn.private_data_len);
			memcpy(&deadline, ev->param.conn.private_data,
			       sizeof(deadline));
		}
		ack(ev);

		if (mode == M_BOTH) {
			late = now_ns();
			late = late > deadline ? late - deadline : 0;
			if (late > 0)
				note("%s: deadline already passed by %" PRIu64 " us",
				     what, late / 1000);
			sleep_until(deadline);
			disconnect(id, what);
			ack(expect(id, RDMA_CM_EVENT_DISCONNECTED, what));
		} else if (i % 2 == 0) {
			disconnect(id, what);
			ack(expect(id, RDMA_CM_EVENT_DISCONNECTED, what));
		} else {
			/* The server disconnects first. */
			ack(expect(id, RDMA_CM_EVENT_DISCONNECTED, what));
			disconnect(id, what);
		}
		destroy(id);
	}
	expect_silence(linger_ms, "after the last connection");
	note("OK: %d connection(s), mode %s", count, mode_names[mode]);
	return 0;
}

struct attempt {
	struct rdma_cm_id *id;
	int done;
};

/* Connection attempts that must all fail, -P of them in flight at once. */
static int client_refused(void)
{
	struct attempt *at = calloc(parallel, sizeof(*at));
	int started = 0, finished = 0, inflight = 0, i;
	int rejected = 0, unreachable = 0, conn_err = 0, refused_sync = 0;
	struct rdma_cm_event *ev;
	struct attempt *a;
	enum rdma_cm_event_type e;
	int status;

	if (!at)
		fail("out of memory");
	while (finished < count) {
		for (i = 0; i < parallel && started < count; i++) {
			if (at[i].id)
				continue;
			at[i].done = 0;
			at[i].id = start_connect(&at[i]);
			started++;
			inflight++;
		}
		ev = get_event(timeout_ms);
		if (!ev)
			fail("%d connection attempt(s) got no answer within %d ms "
			     "(%d of %d finished)", inflight, timeout_ms,
			     finished, count);
		a = ev->id->context;
		e = ev->event;
		status = ev->status;
		switch (e) {
		case RDMA_CM_EVENT_ADDR_RESOLVED:
			ack(ev);
			if (rdma_resolve_route(a->id, 2000))
				fail("rdma_resolve_route: %s", strerror(errno));
			continue;
		case RDMA_CM_EVENT_ROUTE_RESOLVED:
			ack(ev);
			if (!connect_id(a->id, mode == M_DESTROY_LISTEN))
				continue;
			refused_sync++;
			destroy(a->id);
			a->id = NULL;
			inflight--;
			finished++;
			continue;
		case RDMA_CM_EVENT_REJECTED:
			rejected++;
			break;
		case RDMA_CM_EVENT_UNREACHABLE:
		case RDMA_CM_EVENT_CONNECT_ERROR:
			if (mode != M_DESTROY_LISTEN)
				fail("attempt %d: %s (status %d), expected REJECTED",
				     finished, rdma_event_str(e), status);
			if (e == RDMA_CM_EVENT_UNREACHABLE)
				unreachable++;
			else
				conn_err++;
			break;
		default:
			fail("attempt %d: unexpected %s (status %d)", finished,
			     rdma_event_str(e), status);
		}
		ack(ev);
		destroy(a->id);
		a->id = NULL;
		inflight--;
		finished++;
	}
	free(at);
	note("OK: %d attempt(s): %d rejected, %d unreachable, %d connect error(s), "
	     "%d refused by rdma_connect()", count, rejected, unreachable,
	     conn_err, refused_sync);
	return 0;
}

/* Mode hold, client: -n connections, -P in flight at once, kept. */
static int client_hold(void)
{
	struct rdma_conn_param param = {
		.responder_resources = 1,
		.initiator_depth = 1,
		.retry_count = 7,
	};
	int started = 0, inflight = 0, held = 0, in_use = 0;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	while (held < count) {
		for (; inflight < parallel && started < count; started++, inflight++)
			start_connect(NULL);
		ev = get_event(timeout_ms);
		if (!ev)
			fail("hold: %d attempt(s) got no answer within %d ms (%d of %d held)",
			     inflight, timeout_ms, held, count);
		id = ev->id;
		switch (ev->event) {
		case RDMA_CM_EVENT_ADDR_RESOLVED:
			ack(ev);
			if (rdma_resolve_route(id, 2000))
				fail("rdma_resolve_route: %s", strerror(errno));
			break;
		case RDMA_CM_EVENT_ROUTE_RESOLVED:
			ack(ev);
			hold_qp(id);
			if (!rdma_connect(id, &param))
				break;
			/*
			 * siw binds its TCP socket to the port rdma_cm chose
			 * for the id, which rdma_cm does not check against
			 * TCP's own sockets: one of an earlier test's in
			 * TIME_WAIT refuses it.  Again, with another id.
			 */
			if (errno != EADDRINUSE || ++in_use > count)
				fail("hold: rdma_connect: %s", strerror(errno));
			destroy(id);
			inflight--;
			started--;
			break;
		default:
			hold_established(ev, &held);
			inflight--;
		}
	}
	if (in_use)
		note("%d rdma_connect(s) refused with EADDRINUSE, retried with another id",
		     in_use);
	hold_forever(held);
}

/* Mode read-close: how long the READ may take to complete once the QP is
 * in ERROR. */
#define READ_FLUSH_WAIT_MS 5000

/* Mode read-close: an RDMA READ outstanding at a graceful close must
 * complete (flushed) once the QP is in ERROR (see the top). */
static int client_read_close(void)
{
	struct rdma_conn_param param = {
		.responder_resources = 1,
		.initiator_depth = 1,
		.retry_count = 7,
	};
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 2, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };
	static char buf[4096];
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint64_t deadline;
	int n;

	id = start_connect(NULL);
	ack(expect(id, RDMA_CM_EVENT_ADDR_RESOLVED, "read-close"));
	if (rdma_resolve_route(id, 2000))
		fail("rdma_resolve_route: %s", strerror(errno));
	ack(expect(id, RDMA_CM_EVENT_ROUTE_RESOLVED, "read-close"));
	pd = ibv_alloc_pd(id->verbs);
	if (!pd)
		fail("ibv_alloc_pd: %s", strerror(errno));
	cq = ibv_create_cq(id->verbs, 4, NULL, NULL, 0);
	if (!cq)
		fail("ibv_create_cq: %s", strerror(errno));
	attr.send_cq = cq;
	attr.recv_cq = cq;
	if (rdma_create_qp(id, pd, &attr))
		fail("rdma_create_qp: %s", strerror(errno));
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		fail("ibv_reg_mr: %s", strerror(errno));
	if (rdma_connect(id, &param))
		fail("rdma_connect: %s", strerror(errno));
	ack(expect(id, RDMA_CM_EVENT_ESTABLISHED, "read-close"));

	/* The peer never answers: the READ's response will not come. */
	sge.addr = (uintptr_t)buf;
	sge.length = sizeof(buf);
	sge.lkey = mr->lkey;
	wr.wr_id = 0x5ead;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = 0x10000;
	wr.wr.rdma.rkey = 0x1234;
	if (ibv_post_send(id->qp, &wr, &bad))
		fail("ibv_post_send(RDMA READ): %s", strerror(errno));
	sleep_until(now_ns() + (uint64_t)lead_ms * 1000000ull);
	n = ibv_poll_cq(cq, 1, &wc);
	if (n)
		fail("the RDMA READ completed before the disconnect (%d, status %s): the peer answered?",
		     n, n > 0 ? ibv_wc_status_str(wc.status) : "?");
	note("RDMA READ posted, no response after %d ms; graceful disconnect",
	     lead_ms);

	disconnect(id, "read-close");
	ack(expect(id, RDMA_CM_EVENT_DISCONNECTED, "read-close"));
	/* What a kernel ULP's ib_drain_qp() does first. */
	if (ibv_modify_qp(id->qp, &err, IBV_QP_STATE))
		fail("ibv_modify_qp(ERR): %s", strerror(errno));

	/* siw flushes within the modify; the bound is for a slow guest. */
	deadline = now_ns() + (uint64_t)READ_FLUSH_WAIT_MS * 1000000ull;
	while (!(n = ibv_poll_cq(cq, 1, &wc)) && now_ns() < deadline)
		sleep_until(now_ns() + 10000000ull);
	if (n < 0)
		fail("ibv_poll_cq: %d", n);
	if (n == 0)
		fail("read-close: the RDMA READ outstanding at the graceful close never completed (%d ms after the QP went to ERROR)",
		     READ_FLUSH_WAIT_MS);
	if (wc.wr_id != wr.wr_id || wc.status != IBV_WC_WR_FLUSH_ERR)
		fail("read-close: completion wr_id %#" PRIx64 " status %s, expected the READ's (%#" PRIx64 ") flushed",
		     (uint64_t)wc.wr_id, ibv_wc_status_str(wc.status),
		     (uint64_t)wr.wr_id);
	note("OK: read-close: the RDMA READ completed with %s after the QP went to ERROR",
	     ibv_wc_status_str(wc.status));

	rdma_destroy_qp(id);
	if (ibv_dereg_mr(mr))
		fail("ibv_dereg_mr: %s", strerror(errno));
	if (ibv_destroy_cq(cq))
		fail("ibv_destroy_cq: %s", strerror(errno));
	if (ibv_dealloc_pd(pd))
		fail("ibv_dealloc_pd: %s", strerror(errno));
	if (rdma_destroy_id(id))
		fail("rdma_destroy_id: %s", strerror(errno));
	return 0;
}

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s -s|-c -a ADDR [-p PORT] -m MODE [-n COUNT] [-k K]\n"
		"          [-P PARALLEL] [-t TIMEOUT_MS] [-l LEAD_MS] [-L LINGER_MS]\n"
		"          [-b BACKLOG]\n"
		"modes: both after reject destroy-req destroy-listen flood (-s) hold\n"
		"       read-close (-c)\n", argv0);
	exit(2);
}

int main(int argc, char **argv)
{
	struct rdma_addrinfo hints = { 0 };
	unsigned int m;
	int op, ret;

	while ((op = getopt(argc, argv, "sca:p:m:n:k:P:t:l:L:b:")) != -1) {
		switch (op) {
		case 's': is_server = 1; role = "server"; break;
		case 'c': is_server = 0; role = "client"; break;
		case 'a': addr = optarg; break;
		case 'p': port = optarg; break;
		case 'n': count = atoi(optarg); break;
		case 'k': kth = atoi(optarg); break;
		case 'P': parallel = atoi(optarg); break;
		case 't': timeout_ms = atoi(optarg); break;
		case 'l': lead_ms = atoi(optarg); break;
		case 'L': linger_ms = atoi(optarg); break;
		case 'b': backlog = atoi(optarg); break;
		case 'm':
			for (m = 0; m < sizeof(mode_names) / sizeof(mode_names[0]); m++)
				if (!strcmp(optarg, mode_names[m]))
					break;
			if (m == sizeof(mode_names) / sizeof(mode_names[0]))
				usage(argv[0]);
			mode = m;
			break;
		default:
			usage(argv[0]);
		}
	}
	if (is_server < 0 || !addr || count < 1 || parallel < 1 || kth < 1 ||
	    timeout_ms < 1 || backlog < 0 || lead_ms < 0 ||
	    (mode == M_FLOOD && !is_server) || (mode == M_READ_CLOSE && is_server))
		usage(argv[0]);
	setvbuf(stdout, NULL, _IOLBF, 0);

	hints.ai_port_space = RDMA_PS_TCP;
	if (is_server)
		hints.ai_flags = RAI_PASSIVE;
	ret = rdma_getaddrinfo(addr, port, &hints, &rai);
	if (ret)
		fail("rdma_getaddrinfo %s:%s: %s", addr, port,
		     ret == -1 ? strerror(errno) : gai_strerror(ret));
	chan = rdma_create_event_channel();
	if (!chan)
		fail("rdma_create_event_channel: %s", strerror(errno));

	if (is_server)
		ret = server();
	else if (mode == M_BOTH || mode == M_AFTER)
		ret = client_disc();
	else if (mode == M_HOLD)
		ret = client_hold();
	else if (mode == M_READ_CLOSE)
		ret = client_read_close();
	else
		ret = client_refused();

	rdma_destroy_event_channel(chan);
	rdma_freeaddrinfo(rai);
	return ret;
}

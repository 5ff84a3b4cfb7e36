// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * iw_cm_scale: make bench's scale figures (tools/bench/bench-guest.sh).
 *
 * A fake iWARP provider device and a fake ULP that drive whichever iw_cm
 * is loaded (the C iwcm.c or the Rust one) through the exported API of
 * include/rdma/iw_cm.h and the provider upcall (cm_id->event_handler),
 * identically for both:
 *
 *   - a population of cm_ids, all alive at once: one listener and
 *     connections, every other one active (iw_cm_connect, then the
 *     provider's CONNECT_REPLY: ESTABLISHED) and every other one passive
 *     (the provider's CONNECT_REQUEST on the listener, the ULP's handler
 *     accepts, then the provider's ESTABLISHED);
 *   - at that population, one operation at a time, each timed with
 *     ktime_get_ns() and repeated "samples" times: create
 *     (iw_create_cm_id), connect (iw_cm_connect until the ULP's handler
 *     has the CONNECT_REPLY), request (the CONNECT_REQUEST upcall until
 *     the accepted child's handler has ESTABLISHED), disconnect
 *     (iw_cm_disconnect, the provider's CLOSE, until the handler has it;
 *     both ends), destroy (iw_destroy_cm_id of a closed id; both ends) and
 *     listen (iw_cm_listen on a new id, backlog 128).
 *
 * Nothing here needs a registered device, a real QP or the port mapper:
 * the device is a zeroed struct ib_device with the iw_* ops, a name
 * (dev.init_name: both iw_cms copy dev_name()) and two zeroed port_data
 * entries (ib_modify_qp reads port 0's capabilities on disconnect); one
 * fake QP serves every connection.  Without iwpmd both iw_cms' port
 * mapper clients give up on the first netlink request and map nothing.
 *
 * Interface (debugfs, iw_cm_scale/):
 *   echo "build N" > ctl     grow the population to N cm_ids
 *   echo "measure S" > ctl   S samples of each operation at the current
 *                            population; appends to "result"
 *   echo "teardown" > ctl    disconnect and destroy the whole population
 *   cat result               "scale<N>_<op>_{med,p99}_ns VALUE" lines,
 *                            "scale<N>_build_ms", errors as "error ..."
 * Each write returns when the step is done (or failed: -EIO, with an
 * "error" line in result).  Writes are serialised.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/in.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>
#include <rdma/ib_verbs.h>
#include <rdma/iw_cm.h>

static unsigned int max_ids = 65536;
module_param(max_ids, uint, 0444);
MODULE_PARM_DESC(max_ids, "largest population (cm_ids alive at once) a build may reach");

#define SCALE_QPN	1
#define SCALE_BACKLOG	128
#define SCALE_BATCH	64
#define SCALE_SPARES	3
#define SCALE_TIMEOUT	(30 * HZ)
#define SCALE_RESULT_SIZE 16384

/* What the fake ULP saw last on a cm_id (event + 1; 0: nothing yet). */
struct scale_ctx {
	struct iw_cm_id *id;
	int last;		/* last event type + 1, or SCALE_ACCEPTED */
	bool prov_ref;		/* the fake provider holds a cm_id reference */
	bool passive;
	u16 port;
};

#define SCALE_ACCEPTED	100	/* CONNECT_REQUEST handled and accepted */

enum scale_op { OP_CREATE, OP_CONNECT, OP_REQUEST, OP_DISCONNECT, OP_DESTROY,
		OP_LISTEN, OP_NR };
static const char *const op_name[OP_NR] = {
	"create", "connect", "request", "disconnect", "destroy", "listen",
};

static DEFINE_MUTEX(scale_lock);
static DECLARE_WAIT_QUEUE_HEAD(scale_wq);
static struct dentry *scale_dir;

static struct ib_device *fdev;
static struct ib_port_data *fport;
static struct ib_qp *fqp;

static struct scale_ctx *ctxs;	/* max_ids + SCALE_SPARES, vzalloc'd */
static struct scale_ctx *lctx;	/* the population's listener: ctxs[0] */
static unsigned int nr_ids;	/* population: cm_ids alive in ctxs[0..) */
static atomic_t ev_count;	/* handler events seen (batch waits) */
static atomic_t bad_events;
static atomic_t qp_refs;

static char *result;
static size_t result_len;

static void res_add(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	result_len += vscnprintf(result + result_len,
				 SCALE_RESULT_SIZE - result_len, fmt, ap);
	va_end(ap);
}

/* ---- the fake provider ------------------------------------------------ */

static void fake_add_ref(struct ib_qp *qp)
{
	atomic_inc(&qp_refs);
}

static void fake_rem_ref(struct ib_qp *qp)
{
	atomic_dec(&qp_refs);
}

static struct ib_qp *fake_get_qp(struct ib_device *dev, int qpn)
{
	return qpn == SCALE_QPN ? fqp : NULL;
}

/* As siw: the provider holds the cm_id until it has sent CLOSE. */
static int fake_connect(struct iw_cm_id *id, struct iw_cm_conn_param *p)
{
	struct scale_ctx *c = id->context;

	id->add_ref(id);
	c->prov_ref = true;
	return 0;
}

static int fake_accept(struct iw_cm_id *id, struct iw_cm_conn_param *p)
{
	struct scale_ctx *c = id->context;

	id->add_ref(id);
	c->prov_ref = true;
	return 0;
}

static int fake_reject(struct iw_cm_id *id, const void *pdata, u8 len)
{
	return 0;
}

static int fake_create_listen(struct iw_cm_id *id, int backlog)
{
	return 0;
}

static int fake_destroy_listen(struct iw_cm_id *id)
{
	return 0;
}

static int fake_modify_qp(struct ib_qp *qp, struct ib_qp_attr *attr, int mask,
			  struct ib_udata *udata)
{
	return 0;
}

static void set_addr(struct sockaddr_storage *ss, u8 host, u16 port)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;

	memset(ss, 0, sizeof(*ss));
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(0xc0000200 | host);	/* 192.0.2.host */
	sin->sin_port = htons(port);
}

/* The provider's upcall for @type on @id. */
static int upcall(struct iw_cm_id *id, enum iw_cm_event_type type, u16 port,
		  void *provider_data)
{
	struct iw_cm_event ev = {
		.event = type,
		.provider_data = provider_data,
		.ord = 1,
		.ird = 1,
	};

	set_addr(&ev.local_addr, 1, type == IW_CM_EVENT_CONNECT_REQUEST ?
		 4420 : port);
	set_addr(&ev.remote_addr, 2, type == IW_CM_EVENT_CONNECT_REQUEST ?
		 port : 4420);
	return id->event_handler(id, &ev);
}

/* The provider's CLOSE, then its own reference dropped (as siw does). */
static void upcall_close(struct scale_ctx *c)
{
	upcall(c->id, IW_CM_EVENT_CLOSE, c->port, NULL);
	if (c->prov_ref) {
		c->prov_ref = false;
		c->id->rem_ref(c->id);
	}
}

/* ---- the fake ULP ----------------------------------------------------- */

static int scale_handler(struct iw_cm_id *id, struct iw_cm_event *ev)
{
	struct scale_ctx *c = id->context;
	int last = ev->event + 1;

	switch (ev->event) {
	case IW_CM_EVENT_CONNECT_REQUEST: {
		struct iw_cm_conn_param param = {
			.ord = 1, .ird = 1, .qpn = SCALE_QPN,
		};

		/*
		 * The child gets its own context: the fake provider's token
		 * for the request, which iw_cm put in the child's
		 * provider_data (this module is both provider and ULP).
		 */
		c = id->provider_data;
		id->context = c;
		c->id = id;
		if (iw_cm_accept(id, &param)) {
			atomic_inc(&bad_events);
			c->id = NULL;
			WRITE_ONCE(c->last, -1);
			atomic_inc(&ev_count);
			wake_up(&scale_wq);
			return -EINVAL;	/* iw_cm rejects and destroys it */
		}
		last = SCALE_ACCEPTED;
		break;
	}
	case IW_CM_EVENT_CONNECT_REPLY:
		if (ev->status)
			atomic_inc(&bad_events);
		break;
	case IW_CM_EVENT_ESTABLISHED:
	case IW_CM_EVENT_CLOSE:
		break;
	default:
		atomic_inc(&bad_events);
		break;
	}
	WRITE_ONCE(c->last, last);
	atomic_inc(&ev_count);
	wake_up(&scale_wq);
	return 0;
}

static int wait_last(struct scale_ctx *c, int last)
{
	if (!wait_event_timeout(scale_wq, READ_ONCE(c->last) == last,
				SCALE_TIMEOUT)) {
		res_add("error timeout waiting for event %d (last %d)\n", last,
			READ_ONCE(c->last));
		return -ETIMEDOUT;
	}
	return 0;
}

static int wait_count(int target)
{
	if (!wait_event_timeout(scale_wq, atomic_read(&ev_count) >= target,
				SCALE_TIMEOUT)) {
		res_add("error timeout waiting for %d events (seen %d)\n",
			target, atomic_read(&ev_count));
		return -ETIMEDOUT;
	}
	return 0;
}

static int ctx_create(struct scale_ctx *c, unsigned int idx)
{
	struct iw_cm_id *id;

	memset(c, 0, sizeof(*c));
	c->port = 1024 + idx % 60000;
	id = iw_create_cm_id(fdev, scale_handler, c);
	if (IS_ERR(id)) {
		res_add("error iw_create_cm_id: %ld\n", PTR_ERR(id));
		return PTR_ERR(id);
	}
	c->id = id;
	return 0;
}

static int ctx_connect(struct scale_ctx *c)
{
	struct iw_cm_conn_param param = { .ord = 1, .ird = 1, .qpn = SCALE_QPN };
	int ret;

	set_addr(&c->id->local_addr, 1, c->port);
	set_addr(&c->id->remote_addr, 2, 4420);
	ret = iw_cm_connect(c->id, &param);
	if (ret) {
		res_add("error iw_cm_connect: %d\n", ret);
		return ret;
	}
	upcall(c->id, IW_CM_EVENT_CONNECT_REPLY, c->port, NULL);
	return 0;
}

static int ctx_request(struct scale_ctx *c, unsigned int idx)
{
	int ret;

	memset(c, 0, sizeof(*c));
	c->passive = true;
	c->port = 1024 + idx % 60000;
	ret = upcall(lctx->id, IW_CM_EVENT_CONNECT_REQUEST, c->port, c);
	if (ret)
		res_add("error CONNECT_REQUEST upcall: %d\n", ret);
	return ret;
}

static int ctx_disconnect(struct scale_ctx *c)
{
	int ret = iw_cm_disconnect(c->id, 0);

	if (ret) {
		res_add("error iw_cm_disconnect: %d\n", ret);
		return ret;
	}
	upcall_close(c);
	return 0;
}

static void ctx_destroy(struct scale_ctx *c)
{
	iw_destroy_cm_id(c->id);
	/* Only after a failure: the provider lets go of it too. */
	if (c->prov_ref) {
		c->prov_ref = false;
		c->id->rem_ref(c->id);
	}
	c->id = NULL;
}

static int listener_start(struct scale_ctx *c, unsigned int idx)
{
	int ret = ctx_create(c, idx);

	if (ret)
		return ret;
	set_addr(&c->id->local_addr, 1, 4420);
	ret = iw_cm_listen(c->id, SCALE_BACKLOG);
	if (ret) {
		res_add("error iw_cm_listen: %d\n", ret);
		ctx_destroy(c);
	}
	return ret;
}

/* ---- the population --------------------------------------------------- */

/* Connections ctxs[from..to): active at odd indexes, passive at even. */
static int build_batch(unsigned int from, unsigned int to)
{
	unsigned int i;
	int ret, target;

	/* Active ends: create, connect, CONNECT_REPLY; passive: REQUEST. */
	target = atomic_read(&ev_count) + (to - from);
	for (i = from; i < to; i++) {
		if (i & 1) {
			ret = ctx_create(&ctxs[i], i);
			if (!ret)
				ret = ctx_connect(&ctxs[i]);
			if (ret) {
				if (ctxs[i].id)
					ctx_destroy(&ctxs[i]);
				return ret;
			}
		} else {
			ret = ctx_request(&ctxs[i], i);
			if (ret)
				return ret;
		}
		nr_ids = i + 1;
	}
	ret = wait_count(target);
	if (ret)
		return ret;
	/* Accepted children: the provider's ESTABLISHED. */
	target = atomic_read(&ev_count);
	for (i = from; i < to; i++) {
		if (i & 1)
			continue;
		if (READ_ONCE(ctxs[i].last) != SCALE_ACCEPTED) {
			res_add("error child %u not accepted\n", i);
			return -EIO;
		}
		upcall(ctxs[i].id, IW_CM_EVENT_ESTABLISHED, ctxs[i].port, NULL);
		target++;
	}
	return wait_count(target);
}

static int scale_build(unsigned int n)
{
	u64 t0 = ktime_get_ns();
	unsigned int from;
	int ret;

	if (n > max_ids || n < 2) {
		res_add("error build %u: 2..max_ids (%u)\n", n, max_ids);
		return -EINVAL;
	}
	if (!nr_ids) {
		ret = listener_start(lctx, 0);
		if (ret)
			return ret;
		nr_ids = 1;
	}
	while (nr_ids < n) {
		from = nr_ids;
		ret = build_batch(from, min(n, from + SCALE_BATCH));
		if (ret)
			return ret;
		cond_resched();
	}
	res_add("scale%u_build_ms %llu\n", n,
		div_u64(ktime_get_ns() - t0, NSEC_PER_MSEC));
	return 0;
}

static void scale_teardown(void)
{
	unsigned int i, from, to;
	int target;

	for (from = 1; from < nr_ids; from = to) {
		to = min(nr_ids, from + SCALE_BATCH);
		target = atomic_read(&ev_count);
		for (i = from; i < to; i++) {
			if (!ctxs[i].id)
				continue;
			if (READ_ONCE(ctxs[i].last) == IW_CM_EVENT_CLOSE + 1)
				continue;
			if (!ctx_disconnect(&ctxs[i]))
				target++;
		}
		wait_count(target);
		for (i = from; i < to; i++)
			if (ctxs[i].id)
				ctx_destroy(&ctxs[i]);
		cond_resched();
	}
	if (nr_ids && lctx->id)
		ctx_destroy(lctx);
	nr_ids = 0;
}

/* ---- measurement ------------------------------------------------------ */

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

static int scale_measure(unsigned int samples)
{
	struct scale_ctx *a = &ctxs[max_ids], *p = &ctxs[max_ids + 1];
	struct scale_ctx *l = &ctxs[max_ids + 2];
	unsigned int n[OP_NR] = {}, i, op;
	u64 *t[OP_NR] = {}, t0;
	int ret = -ENOMEM;

	if (!nr_ids || samples < 1 || samples > 100000) {
		res_add("error measure: no population or samples not 1..100000\n");
		return -EINVAL;
	}
	for (op = 0; op < OP_NR; op++) {
		t[op] = vmalloc_array(2 * samples, sizeof(u64));
		if (!t[op])
			goto out;
	}
	for (i = 0; i < samples; i++) {
		t0 = ktime_get_ns();
		ret = ctx_create(a, 1);
		t[OP_CREATE][n[OP_CREATE]++] = ktime_get_ns() - t0;
		if (ret)
			goto out;

		t0 = ktime_get_ns();
		ret = ctx_connect(a);
		if (!ret)
			ret = wait_last(a, IW_CM_EVENT_CONNECT_REPLY + 1);
		t[OP_CONNECT][n[OP_CONNECT]++] = ktime_get_ns() - t0;
		if (ret)
			goto out_a;

		t0 = ktime_get_ns();
		ret = ctx_request(p, 2);
		if (!ret)
			ret = wait_last(p, SCALE_ACCEPTED);
		if (!ret) {
			upcall(p->id, IW_CM_EVENT_ESTABLISHED, p->port, NULL);
			ret = wait_last(p, IW_CM_EVENT_ESTABLISHED + 1);
		}
		t[OP_REQUEST][n[OP_REQUEST]++] = ktime_get_ns() - t0;
		if (ret)
			goto out_a;

		t0 = ktime_get_ns();
		ret = ctx_disconnect(a);
		if (!ret)
			ret = wait_last(a, IW_CM_EVENT_CLOSE + 1);
		t[OP_DISCONNECT][n[OP_DISCONNECT]++] = ktime_get_ns() - t0;
		if (ret)
			goto out_p;
		t0 = ktime_get_ns();
		ret = ctx_disconnect(p);
		if (!ret)
			ret = wait_last(p, IW_CM_EVENT_CLOSE + 1);
		t[OP_DISCONNECT][n[OP_DISCONNECT]++] = ktime_get_ns() - t0;
		if (ret)
			goto out_p;

		t0 = ktime_get_ns();
		ctx_destroy(a);
		t[OP_DESTROY][n[OP_DESTROY]++] = ktime_get_ns() - t0;
		t0 = ktime_get_ns();
		ctx_destroy(p);
		t[OP_DESTROY][n[OP_DESTROY]++] = ktime_get_ns() - t0;

		ret = ctx_create(l, 3);
		if (ret)
			goto out;
		set_addr(&l->id->local_addr, 1, 4421);
		t0 = ktime_get_ns();
		ret = iw_cm_listen(l->id, SCALE_BACKLOG);
		t[OP_LISTEN][n[OP_LISTEN]++] = ktime_get_ns() - t0;
		ctx_destroy(l);
		if (ret) {
			res_add("error iw_cm_listen: %d\n", ret);
			goto out;
		}
		cond_resched();
	}
	for (op = 0; op < OP_NR; op++) {
		sort(t[op], n[op], sizeof(u64), cmp_u64, NULL);
		res_add("scale%u_%s_med_ns %llu\n", nr_ids, op_name[op],
			t[op][n[op] / 2]);
		res_add("scale%u_%s_p99_ns %llu\n", nr_ids, op_name[op],
			t[op][min(n[op] - 1, DIV_ROUND_UP(n[op] * 99, 100) - 1)]);
	}
	ret = 0;
	goto out;
out_p:
	/* Whatever is left of this sample's pair (best effort). */
	if (p->id && READ_ONCE(p->last) == IW_CM_EVENT_ESTABLISHED + 1 &&
	    !ctx_disconnect(p))
		wait_last(p, IW_CM_EVENT_CLOSE + 1);
	if (p->id)
		ctx_destroy(p);
out_a:
	if (a->id && READ_ONCE(a->last) == IW_CM_EVENT_CONNECT_REPLY + 1 &&
	    !ctx_disconnect(a))
		wait_last(a, IW_CM_EVENT_CLOSE + 1);
	if (a->id)
		ctx_destroy(a);
out:
	for (op = 0; op < OP_NR; op++)
		vfree(t[op]);
	return ret;
}

/* ---- debugfs ---------------------------------------------------------- */

static ssize_t ctl_write(struct file *f, const char __user *ubuf, size_t len,
			 loff_t *pos)
{
	char buf[32], cmd[16];
	unsigned int arg = 0;
	int ret, bad;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = 0;
	if (sscanf(buf, "%15s %u", cmd, &arg) < 1)
		return -EINVAL;

	mutex_lock(&scale_lock);
	bad = atomic_read(&bad_events);
	if (!strcmp(cmd, "build")) {
		ret = scale_build(arg);
	} else if (!strcmp(cmd, "measure")) {
		ret = scale_measure(arg);
	} else if (!strcmp(cmd, "teardown")) {
		scale_teardown();
		ret = 0;
	} else {
		ret = -EINVAL;
	}
	if (atomic_read(&bad_events) != bad) {
		res_add("error %d unexpected event(s) or refused accept(s)\n",
			atomic_read(&bad_events) - bad);
		ret = ret ?: -EIO;
	}
	mutex_unlock(&scale_lock);
	return ret < 0 ? ret : len;
}

static ssize_t result_read(struct file *f, char __user *ubuf, size_t len,
			   loff_t *pos)
{
	ssize_t ret;

	mutex_lock(&scale_lock);
	ret = simple_read_from_buffer(ubuf, len, pos, result, result_len);
	mutex_unlock(&scale_lock);
	return ret;
}

static const struct file_operations ctl_fops = {
	.owner = THIS_MODULE,
	.write = ctl_write,
};

static const struct file_operations result_fops = {
	.owner = THIS_MODULE,
	.read = result_read,
};

/* ---- module ----------------------------------------------------------- */

static void fake_free(void)
{
	kfree(fqp);
	kfree(fport);
	kfree(fdev);
	vfree(ctxs);
	kfree(result);
}

static int __init iw_cm_scale_init(void)
{
	if (max_ids < 2 || max_ids > (1U << 22))
		return -EINVAL;
	fdev = kzalloc_obj(*fdev);
	fport = kcalloc(2, sizeof(*fport), GFP_KERNEL);
	fqp = kzalloc_obj(*fqp);
	ctxs = vzalloc(array_size(max_ids + SCALE_SPARES, sizeof(*ctxs)));
	result = kzalloc(SCALE_RESULT_SIZE, GFP_KERNEL);
	if (!fdev || !fport || !fqp || !ctxs || !result) {
		fake_free();
		return -ENOMEM;
	}
	lctx = &ctxs[0];

	/* Ports 0 and 1 with no capability flags (neither IB nor RoCE). */
	fdev->port_data = fport;
	fdev->dev.init_name = "iwscale0";
	strscpy(fdev->iw_ifname, "scale0");
	fdev->node_type = RDMA_NODE_RNIC;
	fdev->attrs.max_qp_rd_atom = 16;
	fdev->attrs.max_qp_init_rd_atom = 16;
	fdev->ops.iw_add_ref = fake_add_ref;
	fdev->ops.iw_rem_ref = fake_rem_ref;
	fdev->ops.iw_get_qp = fake_get_qp;
	fdev->ops.iw_connect = fake_connect;
	fdev->ops.iw_accept = fake_accept;
	fdev->ops.iw_reject = fake_reject;
	fdev->ops.iw_create_listen = fake_create_listen;
	fdev->ops.iw_destroy_listen = fake_destroy_listen;
	fdev->ops.modify_qp = fake_modify_qp;
	fqp->device = fdev;
	fqp->real_qp = fqp;
	fqp->qp_type = IB_QPT_RC;
	fqp->qp_num = SCALE_QPN;

	scale_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_file("ctl", 0200, scale_dir, NULL, &ctl_fops);
	debugfs_create_file("result", 0400, scale_dir, NULL, &result_fops);
	return 0;
}

static void __exit iw_cm_scale_exit(void)
{
	debugfs_remove_recursive(scale_dir);
	mutex_lock(&scale_lock);
	scale_teardown();
	mutex_unlock(&scale_lock);
	if (atomic_read(&qp_refs))
		pr_warn("%d QP references left\n", atomic_read(&qp_refs));
	fake_free();
}

module_init(iw_cm_scale_init);
module_exit(iw_cm_scale_exit);
MODULE_DESCRIPTION("iw_cm scale benchmark: a fake iWARP provider and ULP for either iw_cm");
MODULE_LICENSE("Dual BSD/GPL");

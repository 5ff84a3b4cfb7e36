// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * siw_flush_test: siw flushes the WRs a kernel ULP posts to a QP in ERROR
 * and reads nothing of a WR once it has completed it: the ULP may free the
 * WR in its completion handler (smbdirect's send_io holds its ib_send_wr).
 * Upstream siw's siw_sq_flush_wr() and siw_rq_flush_wr() read wr->next
 * after the completion; tools/testing/siw/0010 reads it before.
 *
 * On load, for the siw device named by dev= (default siw0): a PD, a CQ
 * whose completion handler polls it and frees each completed WR at once,
 * an RC QP moved to ERROR, a chain of two send WRs posted, then a chain
 * of two receive WRs.  siw completes each with a flush error and calls the
 * handler synchronously, from the post.  With upstream siw, KASAN reports
 * a slab-use-after-free in siw_sq_flush_wr() and siw_rq_flush_wr() (the
 * freed WR's next pointer: the read still finds the next WR, see struct
 * flush_wr; every report is printed only with kasan_multi_shot, which the
 * test VM boots with).  Logs one line per queue:
 *
 *	siw_flush_test: siw0: send: 2 of 2 WRs flushed, 0 other (post 0)
 *
 * ("other": completions with another status) and frees everything before
 * load returns; unload it afterwards.  Load fails with -ENODEV when there
 * is no such siw device, with -ENOMEM when a WR cannot be allocated.  For
 * tools/testing/selftests/iw_cm/siw_flush.sh; never installed.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/slab.h>
#include <rdma/ib_verbs.h>

static char *dev = "siw0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "the siw device to test (default siw0)");

#define FLUSH_WRS 2

/*
 * One WR, allocated alone and freed by the completion handler.  The WR
 * sits behind some padding: a freed object's first bytes hold KASAN's free
 * metadata (generic KASAN: 16-24 bytes), and upstream siw's late read of
 * wr->next must still find the next WR (a KASAN report, not a wild
 * pointer).  The object stays in KASAN's quarantine meanwhile; SLUB's
 * free pointer, once it is released, lands on @recv (half the object
 * size), never on a WR's @next: keep it so when changing the layout.
 */
struct flush_wr {
	u8 pad[64];
	bool recv;
	union {
		struct ib_send_wr send;
		struct ib_recv_wr recv_wr;
	};
};

/* The completion handler's counts: WRs completed, and of those not flushed. */
struct flush_counts {
	int send;
	int recv;
	int send_other;
	int recv_other;
};

/* Polls every completion and frees its WR; called by siw from the post. */
static void flush_comp_handler(struct ib_cq *cq, void *ctx)
{
	struct flush_counts *counts = ctx;
	struct flush_wr *w;
	struct ib_wc wc;

	while (ib_poll_cq(cq, 1, &wc) > 0) {
		w = (struct flush_wr *)(uintptr_t)wc.wr_id;
		if (w->recv) {
			counts->recv++;
			counts->recv_other += wc.status != IB_WC_WR_FLUSH_ERR;
		} else {
			counts->send++;
			counts->send_other += wc.status != IB_WC_WR_FLUSH_ERR;
		}
		kfree(w);
	}
	ib_req_notify_cq(cq, IB_CQ_NEXT_COMP);
}

/* FLUSH_WRS WRs chained in @w; wr_id is each one's own address. */
static int flush_alloc(struct flush_wr **w, bool recv)
{
	int i;

	for (i = 0; i < FLUSH_WRS; i++) {
		w[i] = kzalloc_obj(*w[i]);
		if (!w[i])
			goto err;
		w[i]->recv = recv;
	}
	for (i = 0; i < FLUSH_WRS; i++) {
		if (recv) {
			w[i]->recv_wr.wr_id = (uintptr_t)w[i];
			w[i]->recv_wr.next = i + 1 < FLUSH_WRS ? &w[i + 1]->recv_wr : NULL;
		} else {
			w[i]->send.wr_id = (uintptr_t)w[i];
			w[i]->send.opcode = IB_WR_SEND;
			w[i]->send.send_flags = IB_SEND_SIGNALED;
			w[i]->send.next = i + 1 < FLUSH_WRS ? &w[i + 1]->send : NULL;
		}
	}
	return 0;
err:
	while (i--)
		kfree(w[i]);
	return -ENOMEM;
}

/* Posts both chains to @qp (in ERROR) and logs what completed. */
static int flush_post(struct ib_device *ibdev, struct ib_qp *qp,
		      struct flush_counts *counts)
{
	const struct ib_send_wr *bad_send;
	const struct ib_recv_wr *bad_recv;
	struct flush_wr *w[FLUSH_WRS];
	int ret, i;

	if (flush_alloc(w, false))
		return -ENOMEM;
	ret = ib_post_send(qp, &w[0]->send, &bad_send);
	/* siw completes in order: the WRs not completed are still ours. */
	for (i = counts->send; i < FLUSH_WRS; i++)
		kfree(w[i]);
	pr_info("%s: send: %d of %d WRs flushed, %d other (post %d)\n",
		dev_name(&ibdev->dev), counts->send - counts->send_other,
		FLUSH_WRS, counts->send_other, ret);

	if (flush_alloc(w, true))
		return -ENOMEM;
	ret = ib_post_recv(qp, &w[0]->recv_wr, &bad_recv);
	for (i = counts->recv; i < FLUSH_WRS; i++)
		kfree(w[i]);
	pr_info("%s: recv: %d of %d WRs flushed, %d other (post %d)\n",
		dev_name(&ibdev->dev), counts->recv - counts->recv_other,
		FLUSH_WRS, counts->recv_other, ret);
	return 0;
}

/* The test on one device: its resources are gone when this returns. */
static int flush_run(struct ib_device *ibdev)
{
	struct ib_cq_init_attr cq_attr = { .cqe = 4 * FLUSH_WRS };
	struct ib_qp_attr err_attr = { .qp_state = IB_QPS_ERR };
	struct ib_qp_init_attr qp_attr = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.cap = { .max_send_wr = FLUSH_WRS, .max_recv_wr = FLUSH_WRS,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct flush_counts counts = {};
	struct ib_qp *qp;
	struct ib_cq *cq;
	struct ib_pd *pd;
	int ret;

	pd = ib_alloc_pd(ibdev, 0);
	if (IS_ERR(pd))
		return PTR_ERR(pd);
	cq = ib_create_cq(ibdev, flush_comp_handler, NULL, &counts, &cq_attr);
	if (IS_ERR(cq)) {
		ret = PTR_ERR(cq);
		goto out_pd;
	}
	qp_attr.send_cq = cq;
	qp_attr.recv_cq = cq;
	qp = ib_create_qp(pd, &qp_attr);
	if (IS_ERR(qp)) {
		ret = PTR_ERR(qp);
		goto out_cq;
	}
	ret = ib_modify_qp(qp, &err_attr, IB_QP_STATE);
	if (!ret)
		ret = ib_req_notify_cq(cq, IB_CQ_NEXT_COMP);
	if (!ret)
		ret = flush_post(ibdev, qp, &counts);
	ib_destroy_qp(qp);
out_cq:
	ib_destroy_cq(cq);
out_pd:
	ib_dealloc_pd(pd);
	return ret;
}

static int flush_result = -ENODEV;

/* Runs the test on the siw device named @dev; keeps no client data. */
static int flush_add_one(struct ib_device *ibdev)
{
	if (ibdev->ops.driver_id != RDMA_DRIVER_SIW ||
	    strcmp(dev_name(&ibdev->dev), dev))
		return -EOPNOTSUPP;
	flush_result = flush_run(ibdev);
	if (flush_result)
		pr_err("%s: test failed to run: %d\n", dev_name(&ibdev->dev),
		       flush_result);
	return -EOPNOTSUPP;
}

static struct ib_client flush_client = {
	.name = "siw_flush_test",
	.add = flush_add_one,
};

static int __init siw_flush_test_init(void)
{
	int ret = ib_register_client(&flush_client);

	if (ret)
		return ret;
	ib_unregister_client(&flush_client);
	if (flush_result == -ENODEV)
		pr_err("no siw device %s\n", dev);
	return flush_result;
}

static void __exit siw_flush_test_exit(void)
{
}

module_init(siw_flush_test_init);
module_exit(siw_flush_test_exit);
MODULE_DESCRIPTION("siw test: WRs posted to a QP in ERROR are flushed and not read after their completion");
MODULE_LICENSE("Dual BSD/GPL");

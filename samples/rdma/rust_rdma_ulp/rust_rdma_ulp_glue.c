// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * C side of the Rust sample ULP (rust_rdma_ulp_main.rs):
 *
 * - the string module parameters (Rust's module! has integer and bool
 *   parameters only in 7.3) and their accessors;
 * - the sample's workqueue (the Rust workqueue API cannot allocate one);
 * - the helpers declared in rust/rdma/ulp/ulp_helpers.h: static inline
 *   functions and macros of <rdma/ib_verbs.h> and <rdma/rdma_cm.h>.
 */
#include <linux/moduleparam.h>
#include <linux/workqueue.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "ulp_helpers.h"

static char addr[16] = "192.168.77.1";
module_param_string(addr, addr, sizeof(addr), 0444);
MODULE_PARM_DESC(addr, "IPv4 address: the target listens on it, the host connects to it");

static char role[8] = "both";
module_param_string(role, role, sizeof(role), 0444);
MODULE_PARM_DESC(role, "target, host, or both (a target and a host to it in one module)");

static char own_queue[8] = "first";
module_param_string(own_queue, own_queue, sizeof(own_queue), 0444);
MODULE_PARM_DESC(own_queue,
		 "device removal: stop (disconnect) the event's own queue first (2016 nvme-rdma) or last");

static char order[8] = "qp";
module_param_string(order, order, sizeof(order), 0444);
MODULE_PARM_DESC(order, "device removal: destroy each other queue's QP before its cm_id (qp) or after (cmid)");

static char context[8] = "handler";
module_param_string(context, context, sizeof(context), 0444);
MODULE_PARM_DESC(context,
		 "device removal: tear the other queues down in the cm handler (handler) or in a controller-delete work item the handler waits for (work)");

/* Prototypes of the accessors, as declared in rust_rdma_ulp_main.rs. */
const char *rust_rdma_ulp_param_addr(void);
const char *rust_rdma_ulp_param_role(void);
const char *rust_rdma_ulp_param_own_queue(void);
const char *rust_rdma_ulp_param_order(void);
const char *rust_rdma_ulp_param_context(void);
struct workqueue_struct *rust_rdma_ulp_wq_alloc(void);
void rust_rdma_ulp_wq_destroy(struct workqueue_struct *wq);

const char *rust_rdma_ulp_param_addr(void)
{
	return addr;
}

const char *rust_rdma_ulp_param_role(void)
{
	return role;
}

const char *rust_rdma_ulp_param_own_queue(void)
{
	return own_queue;
}

const char *rust_rdma_ulp_param_order(void)
{
	return order;
}

const char *rust_rdma_ulp_param_context(void)
{
	return context;
}

/*
 * Controller-delete and queue-release work, as nvme_delete_wq and nvmet_wq:
 * WQ_MEM_RECLAIM (it frees memory), unbound, not ordered.
 */
struct workqueue_struct *rust_rdma_ulp_wq_alloc(void)
{
	return alloc_workqueue("rust_rdma_ulp", WQ_MEM_RECLAIM | WQ_UNBOUND, 0);
}

void rust_rdma_ulp_wq_destroy(struct workqueue_struct *wq)
{
	destroy_workqueue(wq);
}

/* ---- rust/rdma/ulp/ulp_helpers.h ---- */

struct rdma_cm_id *rdma_ulp_create_id(rdma_cm_event_handler handler, void *context)
{
	return rdma_create_id(&init_net, handler, context, RDMA_PS_TCP, IB_QPT_RC);
}

struct ib_pd *rdma_ulp_alloc_pd(struct ib_device *dev)
{
	return ib_alloc_pd(dev, 0);
}

void rdma_ulp_dealloc_pd(struct ib_pd *pd)
{
	ib_dealloc_pd(pd);
}

u32 rdma_ulp_pd_local_dma_lkey(struct ib_pd *pd)
{
	return pd->local_dma_lkey;
}

struct ib_cq *rdma_ulp_alloc_cq(struct ib_device *dev, void *private, int nr_cqe,
				int comp_vector)
{
	return ib_alloc_cq(dev, private, nr_cqe, comp_vector, IB_POLL_WORKQUEUE);
}

int rdma_ulp_destroy_qp(struct ib_qp *qp)
{
	return ib_destroy_qp(qp);
}

u64 rdma_ulp_dma_map(struct ib_device *dev, void *cpu_addr, size_t size)
{
	u64 dma = ib_dma_map_single(dev, cpu_addr, size, DMA_BIDIRECTIONAL);

	return ib_dma_mapping_error(dev, dma) ? 0 : dma;
}

void rdma_ulp_dma_unmap(struct ib_device *dev, u64 addr, size_t size)
{
	ib_dma_unmap_single(dev, addr, size, DMA_BIDIRECTIONAL);
}

void rdma_ulp_dma_sync_for_cpu(struct ib_device *dev, u64 addr, size_t size)
{
	ib_dma_sync_single_for_cpu(dev, addr, size, DMA_BIDIRECTIONAL);
}

void rdma_ulp_dma_sync_for_device(struct ib_device *dev, u64 addr, size_t size)
{
	ib_dma_sync_single_for_device(dev, addr, size, DMA_BIDIRECTIONAL);
}

int rdma_ulp_post_send(struct ib_qp *qp, struct ib_cqe *cqe, u64 addr, u32 len, u32 lkey)
{
	struct ib_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	struct ib_send_wr wr = {
		.wr_cqe = cqe,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED,
	};

	return ib_post_send(qp, &wr, NULL);
}

int rdma_ulp_post_recv(struct ib_qp *qp, struct ib_cqe *cqe, u64 addr, u32 len, u32 lkey)
{
	struct ib_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	struct ib_recv_wr wr = {
		.wr_cqe = cqe,
		.sg_list = &sge,
		.num_sge = 1,
	};

	return ib_post_recv(qp, &wr, NULL);
}

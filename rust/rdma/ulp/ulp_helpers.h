/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * C helpers behind the rust/rdma/ulp/ wrappers: the static inline functions
 * and macros of include/rdma/ib_verbs.h and include/rdma/rdma_cm.h that
 * bindgen cannot turn into Rust (rdma_create_id, ib_alloc_pd, ib_alloc_cq,
 * ib_post_send/recv, ib_dma_*), and one field of an opaque struct.
 *
 * Declared here (bindgen reads this file through bindings_helper.h, the
 * rdma_.* allowlist picks the names up); a module that uses rust/rdma/ulp/
 * defines them in its own C file, e.g.
 * samples/rdma/rust_rdma_ulp/rust_rdma_ulp_glue.c.
 */
#ifndef RUST_RDMA_ULP_HELPERS_H
#define RUST_RDMA_ULP_HELPERS_H

#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

/* rdma_create_id(&init_net, handler, context, RDMA_PS_TCP, IB_QPT_RC) */
struct rdma_cm_id *rdma_ulp_create_id(rdma_cm_event_handler handler, void *context);
/* ib_alloc_pd(dev, 0) */
struct ib_pd *rdma_ulp_alloc_pd(struct ib_device *dev);
/* ib_dealloc_pd(pd) */
void rdma_ulp_dealloc_pd(struct ib_pd *pd);
/* pd->local_dma_lkey */
u32 rdma_ulp_pd_local_dma_lkey(struct ib_pd *pd);
/* ib_alloc_cq(dev, private, nr_cqe, comp_vector, IB_POLL_WORKQUEUE) */
struct ib_cq *rdma_ulp_alloc_cq(struct ib_device *dev, void *private, int nr_cqe,
				int comp_vector);
/* ib_destroy_qp(qp) */
int rdma_ulp_destroy_qp(struct ib_qp *qp);
/* ib_dma_map_single(dev, cpu_addr, size, DMA_BIDIRECTIONAL); 0 on error */
u64 rdma_ulp_dma_map(struct ib_device *dev, void *cpu_addr, size_t size);
/* ib_dma_unmap_single(dev, addr, size, DMA_BIDIRECTIONAL) */
void rdma_ulp_dma_unmap(struct ib_device *dev, u64 addr, size_t size);
/* ib_dma_sync_single_for_cpu / _for_device, DMA_BIDIRECTIONAL */
void rdma_ulp_dma_sync_for_cpu(struct ib_device *dev, u64 addr, size_t size);
void rdma_ulp_dma_sync_for_device(struct ib_device *dev, u64 addr, size_t size);
/* One signaled IB_WR_SEND / one receive of a single SGE; ib_post_send/recv. */
int rdma_ulp_post_send(struct ib_qp *qp, struct ib_cqe *cqe, u64 addr, u32 len, u32 lkey);
int rdma_ulp_post_recv(struct ib_qp *qp, struct ib_cqe *cqe, u64 addr, u32 len, u32 lkey);

#endif /* RUST_RDMA_ULP_HELPERS_H */

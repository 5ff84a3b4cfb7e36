/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * C headers bindgen turns into the `bindings` module of each RDMA module of
 * this project (rust/rdma/bindgen_parameters limits what is emitted).
 */
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/socket.h>
#include <net/ipv6.h>
#include <rdma/ib_verbs.h>
#include <rdma/iw_cm.h>
#include <rdma/iw_portmap.h>
#include <rdma/rdma_netlink.h>
#include <rdma/rdma_cm.h>
#include "ulp/ulp_helpers.h"

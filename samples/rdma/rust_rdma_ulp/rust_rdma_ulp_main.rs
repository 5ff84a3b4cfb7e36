// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! rust_rdma_ulp: a sample kernel RDMA consumer (ULP) shaped like nvme-rdma.
//!
//! - The target ([`target::Target`]) listens on `addr:port`, accepts every
//!   queue with its own PD, CQ and RC QP, and echoes every SEND.
//! - The host ([`host::Host`]) opens one admin queue and `nr_io_queues` I/O
//!   queues, each on its own rdma_cm id (address and route resolution, PD,
//!   CQ, QP, connect) and keeps `queue_depth` messages in flight on every
//!   queue, driven by completions.
//! - `role=both` (default) runs a target and a host connected to it in one
//!   module, which is what the selftest does over siw.
//!
//! On `RDMA_CM_EVENT_DEVICE_REMOVAL` the host runs the 2016 nvme-rdma
//! removal path inside the cm handler (see [`host`]); the `own_queue`,
//! `order` and `context` parameters select its variants.  Counters and the
//! number of queues torn down are in /sys/kernel/debug/rust_rdma_ulp/.
//!
//! The C file rust_rdma_ulp_glue.c holds the string parameters, the
//! workqueue allocation and the C helpers of rust/rdma/ulp/ulp_helpers.h.

use core::{fmt, ptr::NonNull};
use kernel::{debugfs, prelude::*, sync::Arc, workqueue};

mod host;
mod queue;
mod target;
#[path = "../../../rust/rdma/ulp/mod.rs"]
mod ulp;

#[path = "../../../rust/rdma/bindings.rs"]
mod bindings;

module! {
    type: RustRdmaUlp,
    name: "rust_rdma_ulp",
    authors: ["The Rust iw_cm authors"],
    description: "Sample RDMA ULP shaped like nvme-rdma (host and target over rdma_cm)",
    license: "Dual BSD/GPL",
    params: {
        port: u16 {
            default: 4420,
            description: "TCP port of the target",
        },
        nr_io_queues: u32 {
            default: 8,
            description: "Host: number of I/O queues (plus one admin queue)",
        },
        queue_depth: u32 {
            default: 16,
            description: "Host: messages in flight per queue",
        },
        stall_qid: i32 {
            default: -1,
            description: "Target: the queue (qid) whose CONNECT_REQUEST handler sleeps stall_ms before it accepts (-1: none); shows a stuck ULP handler",
        },
        stall_ms: u32 {
            default: 0,
            description: "Target: how long the stall_qid CONNECT_REQUEST handler sleeps, in ms",
        },
    },
}

/// Helpers of rust_rdma_ulp_glue.c (prototypes there).
mod c {
    use kernel::ffi::c_char;

    extern "C" {
        pub(crate) fn rust_rdma_ulp_param_addr() -> *const c_char;
        pub(crate) fn rust_rdma_ulp_param_role() -> *const c_char;
        pub(crate) fn rust_rdma_ulp_param_own_queue() -> *const c_char;
        pub(crate) fn rust_rdma_ulp_param_order() -> *const c_char;
        pub(crate) fn rust_rdma_ulp_param_context() -> *const c_char;
        pub(crate) fn rust_rdma_ulp_wq_alloc() -> *mut kernel::bindings::workqueue_struct;
        pub(crate) fn rust_rdma_ulp_wq_destroy(wq: *mut kernel::bindings::workqueue_struct);
    }
}

/// The value of a string parameter of the C file.
fn param(get: unsafe extern "C" fn() -> *const kernel::ffi::c_char) -> &'static [u8] {
    // SAFETY: the accessors return a NUL-terminated module parameter buffer
    // that lives as long as the module and is not written after load
    // (permissions 0444).
    unsafe { CStr::from_char_ptr(get()) }.to_bytes()
}

/// The device-removal variant (module parameters `own_queue`, `order`,
/// `context`).
#[derive(Clone, Copy)]
pub(crate) struct Removal {
    /// Stop (disconnect, drain) the event's own queue before the others.
    pub(crate) own_first: bool,
    /// Destroy the other queues' QP before or after their cm_id.
    pub(crate) order: queue::Order,
    /// Tear the others down in a work item the handler waits for.
    pub(crate) in_work: bool,
}

impl fmt::Display for Removal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "own_queue={} order={} context={}",
            if self.own_first { "first" } else { "last" },
            match self.order {
                queue::Order::QpFirst => "qp",
                queue::Order::CmIdFirst => "cmid",
            },
            if self.in_work { "work" } else { "handler" }
        )
    }
}

// `pr_*!` format through the kernel's own `Display`.
impl kernel::fmt::Display for Removal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Parses one of the choices of a string parameter.
fn choice<T: Copy>(name: &str, value: &[u8], choices: &[(&str, T)]) -> Result<T> {
    for (s, v) in choices {
        if s.as_bytes() == value {
            return Ok(*v);
        }
    }
    pr_err!("bad value for parameter {}\n", name);
    Err(EINVAL)
}

/// `a.b.c.d`.
fn parse_ipv4(s: &[u8]) -> Option<[u8; 4]> {
    let mut out = [0u8; 4];
    let mut parts = s.split(|&b| b == b'.');
    for o in out.iter_mut() {
        let part = parts.next()?;
        if part.is_empty() || part.len() > 3 || !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let v = part
            .iter()
            .fold(0u32, |acc, &d| acc * 10 + u32::from(d - b'0'));
        *o = u8::try_from(v).ok()?;
    }
    parts.next().is_none().then_some(out)
}

struct Config {
    addr: [u8; 4],
    port: u16,
    target: bool,
    host: bool,
    nr_io_queues: u32,
    depth: u32,
    removal: Removal,
}

impl Config {
    fn from_params() -> Result<Self> {
        let Some(addr) = parse_ipv4(param(c::rust_rdma_ulp_param_addr)) else {
            pr_err!("addr: not a dotted-quad IPv4 address\n");
            return Err(EINVAL);
        };
        let (target, host) = choice(
            "role",
            param(c::rust_rdma_ulp_param_role),
            &[
                ("both", (true, true)),
                ("target", (true, false)),
                ("host", (false, true)),
            ],
        )?;
        let removal = Removal {
            own_first: choice(
                "own_queue",
                param(c::rust_rdma_ulp_param_own_queue),
                &[("first", true), ("last", false)],
            )?,
            order: choice(
                "order",
                param(c::rust_rdma_ulp_param_order),
                &[
                    ("qp", queue::Order::QpFirst),
                    ("cmid", queue::Order::CmIdFirst),
                ],
            )?,
            in_work: choice(
                "context",
                param(c::rust_rdma_ulp_param_context),
                &[("handler", false), ("work", true)],
            )?,
        };
        let nr_io_queues = module_parameters::nr_io_queues.value();
        let depth = module_parameters::queue_depth.value();
        if !(1..=MAX_IO_QUEUES).contains(&nr_io_queues) || !(1..=queue::MAX_DEPTH).contains(&depth)
        {
            pr_err!(
                "nr_io_queues must be 1..{}, queue_depth 1..{}\n",
                MAX_IO_QUEUES,
                queue::MAX_DEPTH
            );
            return Err(EINVAL);
        }
        Ok(Self {
            addr,
            port: module_parameters::port.value(),
            target,
            host,
            nr_io_queues,
            depth,
            removal,
        })
    }
}

/// Host I/O queues at most (nr_io_queues): 511 plus the admin queue makes
/// 1,024 connected cm_ids with the target (make bench's memory figure).
const MAX_IO_QUEUES: u32 = 511;

/// The module's workqueue (controller-delete and queue-release work).
///
/// # Invariants
///
/// `0` was returned by `rust_rdma_ulp_wq_alloc` and is destroyed only by
/// `drop`.
struct Wq(NonNull<kernel::bindings::workqueue_struct>);

// SAFETY: a workqueue may be used and destroyed from any thread.
unsafe impl Send for Wq {}
// SAFETY: as for `Send`.
unsafe impl Sync for Wq {}

impl Drop for Wq {
    fn drop(&mut self) {
        // SAFETY: allocated by `rust_rdma_ulp_wq_alloc`, destroyed once (type
        // invariant); `destroy_workqueue` runs the queued work first.
        unsafe { c::rust_rdma_ulp_wq_destroy(self.0.as_ptr()) };
    }
}

struct RustRdmaUlp {
    host: Option<Arc<host::Host>>,
    target: Option<Arc<target::Target>>,
    host_file: Option<Pin<KBox<debugfs::File<Arc<host::Host>>>>>,
    target_file: Option<Pin<KBox<debugfs::File<Arc<target::Target>>>>>,
    dir: debugfs::Dir,
    wq: Option<Wq>,
}

impl kernel::Module for RustRdmaUlp {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let cfg = Config::from_params()?;
        // SAFETY: no preconditions; returns a new workqueue or null.
        let raw = NonNull::new(unsafe { c::rust_rdma_ulp_wq_alloc() }).ok_or(ENOMEM)?;
        // SAFETY: the workqueue stays valid until `Wq::drop`, which runs
        // after everything holding this reference is gone (`Drop` below).
        let wq: &'static workqueue::Queue = unsafe { workqueue::Queue::from_raw(raw.as_ptr()) };
        // From here on an error return runs `Drop` (cleanup).
        let mut this = Self {
            host: None,
            target: None,
            host_file: None,
            target_file: None,
            dir: debugfs::Dir::new(c"rust_rdma_ulp"),
            // INVARIANT: just allocated.
            wq: Some(Wq(raw)),
        };
        let a = cfg.addr;
        let addr = ulp::cm::SockAddrIn::new(a, cfg.port);
        pr_info!(
            "{}.{}.{}.{}:{}, target {}, host {} ({} I/O queues, depth {}), removal: {}\n",
            a[0],
            a[1],
            a[2],
            a[3],
            cfg.port,
            cfg.target,
            cfg.host,
            cfg.nr_io_queues,
            cfg.depth,
            cfg.removal
        );
        if cfg.target {
            let t = target::Target::new(addr, wq)?;
            this.target = Some(t.clone());
            t.listen()?;
            this.target_file = Some(KBox::pin_init(
                this.dir
                    .read_callback_file(c"target", t, &|t: &Arc<target::Target>, f| t.show(f)),
                GFP_KERNEL,
            )?);
        }
        if cfg.host {
            let h = host::Host::new(addr, cfg.nr_io_queues, cfg.depth, cfg.removal, wq)?;
            this.host = Some(h.clone());
            h.connect()?;
            this.host_file = Some(KBox::pin_init(
                this.dir
                    .read_callback_file(c"host", h, &|h: &Arc<host::Host>, f| h.show(f)),
                GFP_KERNEL,
            )?);
        }
        Ok(this)
    }
}

impl Drop for RustRdmaUlp {
    fn drop(&mut self) {
        drop(self.host_file.take());
        drop(self.target_file.take());
        // The host first (its queues' disconnects reach the target), like
        // removing nvme-rdma before nvmet-rdma.
        if let Some(h) = self.host.take() {
            h.shutdown();
        }
        if let Some(t) = self.target.take() {
            t.shutdown();
        }
        // Destroying the workqueue runs the release work still queued; it
        // holds the last references of the target.
        drop(self.wq.take());
        pr_info!("unloaded\n");
    }
}

/// Glue between the rdma_cm handler trampoline and the host or target.
impl ulp::cm::Handler for queue::Queue {
    fn event(
        this: kernel::sync::ArcBorrow<'_, Self>,
        id: &ulp::cm::CmIdRef,
        ev: &ulp::cm::Event<'_>,
    ) -> ulp::cm::Disposition<Self> {
        match &this.owner {
            queue::Owner::Host(h) => h.event(this, id, ev),
            queue::Owner::Target(t) => t.event(this, id, ev),
        }
    }

    fn connect_request(
        listener: kernel::sync::ArcBorrow<'_, Self>,
        id: &ulp::cm::CmIdRef,
        ev: &ulp::cm::Event<'_>,
    ) -> Result<Arc<Self>> {
        match &listener.owner {
            queue::Owner::Target(t) if listener.kind == queue::Kind::Listener => {
                t.connect_request(id, ev)
            }
            _ => Err(EINVAL),
        }
    }

    fn adopt(this: &Arc<Self>, id: ulp::cm::CmId<Self>) {
        this.set_id(id);
    }
}

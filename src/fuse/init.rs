//! What the daemon asks of the kernel at INIT: readahead and background
//! limits, listings with attributes, dropping the pages of changed files,
//! passthrough, and opens answered by the kernel alone.
//!
//! Invariant: a capability the kernel does not offer is logged and done
//! without, except passthrough under `--passthrough always`, which fails
//! the mount; a writable mount never lets the kernel answer opens alone.

use std::sync::atomic::Ordering;

use fuser::{InitFlags, KernelConfig};

use super::{CONGESTION_THRESHOLD, FuseAdapter, MAX_BACKGROUND, MAX_READAHEAD, Passthrough, TTL, has_cap_sys_admin};

impl FuseAdapter {
    /// The answer to the kernel's INIT.
    pub(super) fn negotiate(&mut self, config: &mut KernelConfig) -> std::io::Result<()> {
        let _ = config.set_max_readahead(MAX_READAHEAD);
        let _ = config.set_max_background(MAX_BACKGROUND);
        let _ = config.set_congestion_threshold(CONGESTION_THRESHOLD);
        // `ls -la` of a directory gets its entries' attributes with the
        // listing (READDIRPLUS), not one LOOKUP each; AUTO lets the kernel
        // keep plain listings plain when nothing stats the entries.
        if config.add_capabilities(InitFlags::FUSE_DO_READDIRPLUS).is_ok() {
            self.readdirplus.store(true, Ordering::Relaxed);
        }
        // A file whose mtime changed loses its cached pages: how a changed
        // store object reaches readers of the views (NzFs::follows_store).
        let follows = self.fs().dataset().tracks_changes() || self.live.ttl(TTL) < TTL;
        if follows && config.add_capabilities(InitFlags::FUSE_AUTO_INVAL_DATA).is_err() {
            tracing::warn!(
                "the kernel does not offer FUSE_AUTO_INVAL_DATA: a changed chunk may read stale until its pages are dropped"
            );
        }
        let unavailable = if self.mode == Passthrough::Never {
            Some("--passthrough never")
        } else if !has_cap_sys_admin() {
            Some("it needs CAP_SYS_ADMIN (a root or system mount)")
        } else if config.add_capabilities(InitFlags::FUSE_PASSTHROUGH).is_err() {
            Some("the kernel does not offer FUSE passthrough (Linux 6.9 or later)")
        } else if config.set_max_stack_depth(1).is_err() {
            Some("the kernel refused a stacking depth of 1")
        } else {
            None
        };
        match unavailable {
            None => {
                self.passthrough.store(true, Ordering::Relaxed);
                tracing::info!(
                    "passthrough on: open chunk files of unsharded arrays are read by the kernel from sealed memfds; data.bin, .nc and shard files through the daemon"
                );
            }
            Some(reason) if self.mode == Passthrough::Always => {
                return Err(std::io::Error::other(format!("--passthrough always: {reason}")));
            }
            Some(reason) => {
                tracing::info!(reason, "passthrough off: every read goes through the daemon");
                // A writable mount answers every open itself: a write open
                // of what it shows is refused there, not at the first write.
                if !self.mount.is_writable() && config.capabilities().contains(InitFlags::FUSE_NO_OPEN_SUPPORT) {
                    self.no_open.store(true, Ordering::Relaxed);
                    tracing::info!("opens are answered by the kernel (no open requests)");
                }
            }
        }
        tracing::info!(nodes = self.fs().hierarchy().nodes.len(), "mounted");
        Ok(())
    }
}

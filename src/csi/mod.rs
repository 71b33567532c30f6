//! `nzfs csi`: the Kubernetes CSI node plugin. It serves the
//! CSI Identity and Node services (spec 1.x, `deploy/kubernetes/csi.proto`,
//! compiled at build time) on a unix socket, as the kubelet expects of a
//! node plugin; a read-only filesystem with static provisioning needs no
//! Controller service. Each published volume is an ordinary `nzfs mount`
//! daemon at the pod's target path.
//!
//! Invariants:
//! - a volume is published exactly when its target path is an nzfs mount
//!   (read from `/proc/self/mountinfo`) that the `records` module noted,
//!   in a directory on the node, so a restarted plugin finds the mounts
//!   its predecessor made and can unpublish them, never one it did not
//!   make; both calls are idempotent;
//! - the daemons do not depend on the plugin: each is started detached
//!   (`nzfs mount` forks it into its own session) and, with
//!   `--mount-cgroup`, moved into a cgroup of its own, so that the plugin
//!   container's restart does not take the workloads' mounts down;
//! - secrets reach a daemon through its environment only, never its argv
//!   or a log line (their names are logged, not their values);
//! - any gRPC client is served: each connection passes through
//!   the `authority` module's relay, which gives the server an `:authority` it
//!   accepts when the client sent its socket's path.

mod authority;
mod node;
mod plan;
mod records;
mod stage;

use std::path::PathBuf;

use crate::cli::CliError;

/// The generated messages, clients and servers of `csi.v1`.
#[allow(clippy::all, missing_docs)]
pub mod proto {
    tonic::include_proto!("csi.v1");
}

pub use crate::cli::{CSI_DRIVER_NAME as DRIVER_NAME, CsiArgs};

/// Serve the Identity and Node services until SIGTERM or SIGINT.
pub fn serve(args: CsiArgs) -> Result<(), CliError> {
    let path = args
        .endpoint
        .strip_prefix("unix://")
        .map(PathBuf::from)
        .ok_or_else(|| CliError::new(format!("--endpoint {}: expected unix:///PATH", args.endpoint)).with_code(2))?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| CliError::new(format!("{}: {e}", dir.display())))?;
    }
    match std::fs::remove_file(&path) {
        Ok(()) => tracing::info!(socket = %path.display(), "replaced a stale socket"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(CliError::new(format!("{}: {e}", path.display()))),
    }
    let exe = std::env::current_exe().map_err(|e| CliError::new(format!("cannot find the nzfs binary: {e}")))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("nzfs-csi")
        .enable_all()
        .build()
        .map_err(|e| CliError::new(e.to_string()))?;
    runtime.block_on(async move {
        let listener =
            tokio::net::UnixListener::bind(&path).map_err(|e| CliError::new(format!("{}: {e}", path.display())))?;
        tracing::info!(
            socket = %path.display(),
            driver = %args.driver_name,
            node = %args.node_id,
            version = env!("CARGO_PKG_VERSION"),
            "serving CSI Identity and Node"
        );
        let identity = Identity {
            name: args.driver_name.clone(),
        };
        let state = args
            .state_dir
            .clone()
            .unwrap_or_else(|| path.parent().unwrap_or(std::path::Path::new("/")).join("published"));
        tracing::info!(state = %state.display(), "publish records");
        let node = node::Node::new(args, exe, records::Records::new(state));
        let stop = async {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("a SIGTERM handler");
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            tracing::info!("stopping; the volumes' mounts stay up");
        };
        tonic::transport::Server::builder()
            .add_service(proto::identity_server::IdentityServer::new(identity))
            .add_service(proto::node_server::NodeServer::new(node))
            .serve_with_incoming_shutdown(relayed(listener), stop)
            .await
            .map_err(|e| CliError::new(format!("gRPC: {e}")))?;
        let _ = std::fs::remove_file(&path);
        Ok(())
    })
}

/// Each connection to the socket, through [`authority::relay`] to an
/// in-memory stream the gRPC server reads.
fn relayed(
    listener: tokio::net::UnixListener,
) -> impl futures::Stream<Item = std::io::Result<tokio::io::DuplexStream>> {
    futures::stream::unfold(listener, |listener| async move {
        let next = match listener.accept().await {
            Ok((client, _)) => {
                let (ours, theirs) = tokio::io::duplex(64 << 10);
                tokio::spawn(authority::relay(client, ours));
                Ok(theirs)
            }
            Err(e) => Err(e),
        };
        Some((next, listener))
    })
}

struct Identity {
    name: String,
}

type Reply<T> = Result<tonic::Response<T>, tonic::Status>;

#[tonic::async_trait]
impl proto::identity_server::Identity for Identity {
    async fn get_plugin_info(
        &self,
        _: tonic::Request<proto::GetPluginInfoRequest>,
    ) -> Reply<proto::GetPluginInfoResponse> {
        Ok(tonic::Response::new(proto::GetPluginInfoResponse {
            name: self.name.clone(),
            vendor_version: env!("CARGO_PKG_VERSION").to_string(),
            manifest: [("build".to_string(), env!("NZFS_BUILD_INFO").to_string())].into(),
        }))
    }

    /// No CONTROLLER_SERVICE: static provisioning only (a PersistentVolume
    /// names its store).
    async fn get_plugin_capabilities(
        &self,
        _: tonic::Request<proto::GetPluginCapabilitiesRequest>,
    ) -> Reply<proto::GetPluginCapabilitiesResponse> {
        Ok(tonic::Response::new(proto::GetPluginCapabilitiesResponse {
            capabilities: Vec::new(),
        }))
    }

    async fn probe(&self, _: tonic::Request<proto::ProbeRequest>) -> Reply<proto::ProbeResponse> {
        Ok(tonic::Response::new(proto::ProbeResponse { ready: Some(true) }))
    }
}

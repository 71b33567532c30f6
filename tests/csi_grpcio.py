"""A CSI client that is not nzfs's own: Python's grpcio, dialling the
plugin's unix socket as the kubelet and csi-sanity do, so that it sends the
socket's path as :authority. Driven by tests/csi.rs
(`a_grpcio_client_is_served`, `a_grpcio_client_stages_once_for_two_pods`).

Usage: csi_grpcio.py SOCKET publish STORE TARGET | unpublish TARGET | refuse STORE TARGET
       csi_grpcio.py SOCKET stage VOLUME STORE STAGING [KEY=VALUE | secret:KEY=VALUE ...]
       csi_grpcio.py SOCKET bind VOLUME STORE STAGING TARGET
       csi_grpcio.py SOCKET unbind VOLUME TARGET | unstage VOLUME STAGING

Stubs are compiled from deploy/kubernetes/csi.proto at start, into a temporary
directory (grpcio-tools).
"""

import importlib.resources
import pathlib
import sys
import tempfile

import grpc
from grpc_tools import protoc

ROOT = pathlib.Path(__file__).resolve().parents[1]


def stubs():
    out = tempfile.mkdtemp(prefix="nzfs-csi-pb-")
    proto = ROOT / "deploy" / "kubernetes"
    # The well-known types (google/protobuf/*.proto) come with grpcio-tools.
    known = importlib.resources.files("grpc_tools") / "_proto"
    args = ["protoc", f"-I{proto}", f"-I{known}", f"--python_out={out}", f"--grpc_python_out={out}", str(proto / "csi.proto")]
    rc = protoc.main(args)
    assert rc == 0, f"protoc failed: {rc}"
    sys.path.insert(0, out)
    import csi_pb2
    import csi_pb2_grpc

    return csi_pb2, csi_pb2_grpc


def capability(pb, flags=()):
    return pb.VolumeCapability(
        mount=pb.VolumeCapability.MountVolume(mount_flags=list(flags)),
        access_mode=pb.VolumeCapability.AccessMode(mode=pb.VolumeCapability.AccessMode.MULTI_NODE_READER_ONLY),
    )


def main():
    socket, command, *args = sys.argv[1:]
    pb, rpc = stubs()
    # The target as grpcio writes it: its authority is the socket's path.
    channel = grpc.insecure_channel(f"unix://{socket}")
    identity = rpc.IdentityStub(channel)
    node = rpc.NodeStub(channel)
    info = identity.GetPluginInfo(pb.GetPluginInfoRequest(), timeout=10)
    assert info.name == "nzfs.csi.nzfs.dev", info
    assert identity.Probe(pb.ProbeRequest(), timeout=10).ready.value
    assert node.NodeGetInfo(pb.NodeGetInfoRequest(), timeout=10).node_id
    if command == "publish":
        store, target = args
        node.NodePublishVolume(
            pb.NodePublishVolumeRequest(
                volume_id="grpcio-1",
                target_path=target,
                volume_capability=capability(pb, ["noatime"]),
                readonly=True,
                volume_context={"store": store, "cache-size": "32MiB"},
            ),
            timeout=60,
        )
        print("published")
    elif command == "unpublish":
        (target,) = args
        node.NodeUnpublishVolume(pb.NodeUnpublishVolumeRequest(volume_id="grpcio-1", target_path=target), timeout=60)
        print("unpublished")
    elif command == "refuse":
        store, target = args
        for secrets, flags in [({"LD_PRELOAD": "/tmp/x.so"}, []), ({}, ["uid=0,umask=000"])]:
            try:
                node.NodePublishVolume(
                    pb.NodePublishVolumeRequest(
                        volume_id="grpcio-2",
                        target_path=target,
                        volume_capability=capability(pb, flags),
                        readonly=True,
                        volume_context={"store": store},
                        secrets=secrets,
                    ),
                    timeout=60,
                )
            except grpc.RpcError as e:
                assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, (secrets, flags, e.code(), e.details())
            else:
                raise AssertionError(f"accepted {secrets} {flags}")
        print("refused")
    elif command == "stage":
        volume, store, staging, *extra = args
        context = {"store": store, "cache-size": "32MiB"}
        secrets = {}
        for item in extra:
            key, value = item.split("=", 1)
            if key.startswith("secret:"):
                secrets[key[len("secret:"):]] = value
            elif key in context and key == "store-option":
                context[key] += "\n" + value
            else:
                context[key] = value
        caps = node.NodeGetCapabilities(pb.NodeGetCapabilitiesRequest(), timeout=10).capabilities
        assert any(c.rpc.type == pb.NodeServiceCapability.RPC.STAGE_UNSTAGE_VOLUME for c in caps), caps
        node.NodeStageVolume(
            pb.NodeStageVolumeRequest(
                volume_id=volume,
                staging_target_path=staging,
                volume_capability=capability(pb),
                volume_context=context,
                secrets=secrets,
            ),
            timeout=60,
        )
        print("staged")
    elif command == "bind":
        volume, store, staging, target = args
        node.NodePublishVolume(
            pb.NodePublishVolumeRequest(
                volume_id=volume,
                staging_target_path=staging,
                target_path=target,
                volume_capability=capability(pb),
                readonly=True,
                volume_context={"store": store},
            ),
            timeout=60,
        )
        print("published")
    elif command == "unbind":
        volume, target = args
        node.NodeUnpublishVolume(pb.NodeUnpublishVolumeRequest(volume_id=volume, target_path=target), timeout=60)
        print("unpublished")
    elif command == "unstage":
        volume, staging = args
        node.NodeUnstageVolume(pb.NodeUnstageVolumeRequest(volume_id=volume, staging_target_path=staging), timeout=60)
        print("unstaged")
    else:
        raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    main()

"""Protobuf request bodies (`application/vnd.kubernetes.protobuf`) of the built-in kinds kubectl sends."""

from localcluster.protobuf.decoder import decode
from localcluster.protobuf.wire import ProtobufError

__all__ = ["ProtobufError", "decode"]

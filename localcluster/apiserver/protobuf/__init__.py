"""Protobuf request bodies (`application/vnd.kubernetes.protobuf`) of the built-in kinds kubectl sends."""

from localcluster.apiserver.protobuf.decoder import MAGIC, decode
from localcluster.apiserver.protobuf.wire import ProtobufError

__all__ = ["MAGIC", "ProtobufError", "decode"]

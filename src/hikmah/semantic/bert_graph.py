"""A BERT sentence encoder's weights as an ONNX graph, int8 where it counts.

:func:`int8_graph` takes the weights of a sentence-transformers BERT model
(the names a ``model.safetensors`` of ``BertModel`` uses) and gives the bytes
of an ONNX model that maps token ids and their mask to unit sentence vectors:
the embeddings, each encoder layer as onnxruntime's fused operators
(``EmbedLayerNormalization``, ``Attention``, ``SkipLayerNormalization``,
``BiasGelu``), mean pooling over the mask and the division by the norm, all
in one graph. onnxruntime's dynamic quantization then turns the matrix
products into int8 ones (weights per output channel, activations per call).

Written out by hand rather than exported from PyTorch: no PyTorch is needed,
the graph is the same for the same weights, and it is built once per weights
file and kept (:mod:`hikmah.semantic.encoder`), in a process of its own
(``python -m hikmah.semantic.bert_graph``): a build peaks at about 680 MB and leaves a
process 210 MB larger than one that reads the built graph. On this machine kind a short query takes
about 1 ms on one thread against 2.3 ms for the float32 graph and 14 ms for a
plain NumPy forward pass (docs/semantic.md).
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from hikmah.model.durable import write_atomic

if TYPE_CHECKING:  # onnx takes 0.6 s to import: only a build pays for it
    import onnx

# Bumped whenever the graph below changes: the cached graphs are keyed by it.
GRAPH_VERSION = 1
OPSET = 17
_MS = "com.microsoft"  # onnxruntime's own operators

Weights = Mapping[str, npt.NDArray[np.float32]]


class BertShape:
    """What the graph needs to know of a model beyond its weights."""

    def __init__(self, *, layers: int, heads: int, epsilon: float = 1e-12) -> None:
        self.layers, self.heads, self.epsilon = layers, heads, epsilon


def int8_graph(weights: Weights, shape: BertShape) -> bytes:
    """The ONNX model (serialized) of the encoder with int8 matrix products.

    Inputs ``input_ids`` and ``attention_mask`` (int64, batch × tokens, padded on the
    right); output ``embedding`` (float32, batch × hidden), each row of length 1.
    """
    import onnx  # noqa: PLC0415
    from onnxruntime.quantization import QuantType, quantize_dynamic  # noqa: PLC0415

    model = _float_graph(weights, shape)
    with tempfile.TemporaryDirectory(prefix="hikmah-graph-") as tmp:
        out = Path(tmp) / "int8.onnx"
        quantize_dynamic(
            model,
            out,
            per_channel=True,
            weight_type=QuantType.QInt8,
            # The fused operators are outside ONNX's shape inference: their outputs are
            # float, as the quantizer otherwise cannot tell.
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
        return out.read_bytes()


def _float_graph(weights: Weights, shape: BertShape) -> onnx.ModelProto:
    """The float32 graph."""
    from onnx import TensorProto, helper  # noqa: PLC0415

    graph = _Builder()
    w = weights
    hidden = w["embeddings.word_embeddings.weight"].shape[1]
    eps = shape.epsilon
    # Every token is of type 0: its embedding is folded into the positions' (one input
    # fewer, the same sums).
    positions = (
        w["embeddings.position_embeddings.weight"] + w["embeddings.token_type_embeddings.weight"][0]
    )
    ids = graph.op("Cast", ["input_ids"], to=TensorProto.INT32)
    mask = graph.op("Cast", ["attention_mask"], to=TensorProto.INT32)
    x, lengths = graph.ops(
        "EmbedLayerNormalization",
        [
            ids,
            "",
            graph.const("word", w["embeddings.word_embeddings.weight"]),
            graph.const("position", positions),
            "",
            graph.const("embed_gamma", w["embeddings.LayerNorm.weight"]),
            graph.const("embed_beta", w["embeddings.LayerNorm.bias"]),
            mask,
        ],
        outputs=2,
        domain=_MS,
        epsilon=eps,
    )
    for layer in range(shape.layers):
        p = f"encoder.layer.{layer}."
        attention = p + "attention."
        qkv = [attention + f"self.{name}" for name in ("query", "key", "value")]
        mixed = graph.op(
            "Attention",
            [
                x,
                graph.const(f"qkv{layer}", np.concatenate([w[n + ".weight"] for n in qkv]).T),
                graph.const(f"qkv_bias{layer}", np.concatenate([w[n + ".bias"] for n in qkv])),
                lengths,
            ],
            domain=_MS,
            num_heads=shape.heads,
        )
        x = _dense_then_norm(graph, layer, "attended", mixed, x, w, attention + "output.", eps)
        inner = graph.op(
            "MatMul", [x, graph.const(f"up{layer}", w[p + "intermediate.dense.weight"].T)]
        )
        inner = graph.op(
            "BiasGelu",
            [inner, graph.const(f"up_bias{layer}", w[p + "intermediate.dense.bias"])],
            domain=_MS,
        )
        x = _dense_then_norm(graph, layer, "out", inner, x, w, p + "output.", eps)
    # Mean of the unmasked tokens, then length 1.
    weight = graph.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    summed = graph.op(
        "ReduceSum",
        [
            graph.op("Mul", [x, graph.op("Unsqueeze", [weight, graph.const("axis2", [2])])]),
            graph.const("axis1", [1]),
        ],
        keepdims=0,
    )
    counted = graph.op("ReduceSum", [weight, "axis1"], keepdims=1)
    mean = graph.op("Div", [summed, counted])
    norm = graph.op("ReduceL2", [mean], axes=[-1], keepdims=1)
    graph.op("Div", [mean, norm], name="embedding")
    body = helper.make_graph(
        graph.nodes,
        "sentence-encoder",
        [
            helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"])
            for name in ("input_ids", "attention_mask")
        ],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", hidden])],
        graph.constants,
    )
    return helper.make_model(
        body, opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(_MS, 1)]
    )


def _dense_then_norm(
    graph: _Builder,
    layer: int,
    name: str,
    value: str,
    residual: str,
    w: Weights,
    prefix: str,
    eps: float,
) -> str:
    """LayerNorm(residual + value · W + b): a sublayer's output projection and norm."""
    projected = graph.op(
        "MatMul", [value, graph.const(f"{name}{layer}", w[prefix + "dense.weight"].T)]
    )
    return graph.op(
        "SkipLayerNormalization",
        [
            projected,
            residual,
            graph.const(f"{name}_gamma{layer}", w[prefix + "LayerNorm.weight"]),
            graph.const(f"{name}_beta{layer}", w[prefix + "LayerNorm.bias"]),
            graph.const(f"{name}_bias{layer}", w[prefix + "dense.bias"]),
        ],
        domain=_MS,
        epsilon=eps,
    )


class _Builder:
    """Nodes and constants of a graph under construction, each output named once."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.constants: list[onnx.TensorProto] = []
        self._count = 0

    def const(self, name: str, value: npt.ArrayLike) -> str:
        from onnx import numpy_helper  # noqa: PLC0415

        array = np.asarray(value)
        array = array.astype(np.int64) if array.dtype.kind == "i" else array.astype(np.float32)
        self.constants.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def op(
        self,
        kind: str,
        inputs: list[str],
        *,
        name: str | None = None,
        domain: str | None = None,
        **attributes: Any,
    ) -> str:
        return self.ops(kind, inputs, outputs=1, name=name, domain=domain, **attributes)[0]

    def ops(
        self,
        kind: str,
        inputs: list[str],
        *,
        outputs: int,
        name: str | None = None,
        domain: str | None = None,
        **attributes: Any,
    ) -> list[str]:
        from onnx import helper  # noqa: PLC0415

        self._count += 1
        names = [name or f"{kind}_{self._count}_{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(kind, inputs, names, domain=domain, **attributes))
        return names


def main(argv: Sequence[str] | None = None) -> int:
    """Build the int8 graph of a ``model.safetensors`` into a file (what
    :mod:`hikmah.semantic.encoder` runs once per weights file)."""
    parser = argparse.ArgumentParser(
        prog="python -m hikmah.semantic.bert_graph", description=main.__doc__
    )
    parser.add_argument("weights", type=Path, help="a BertModel's model.safetensors")
    parser.add_argument("out", type=Path, help="the graph's file (replaced atomically)")
    parser.add_argument("--layers", type=int, required=True)
    parser.add_argument("--heads", type=int, required=True)
    args = parser.parse_args(argv)
    from safetensors.numpy import load_file  # noqa: PLC0415

    graph = int8_graph(
        load_file(str(args.weights)), BertShape(layers=args.layers, heads=args.heads)
    )
    write_atomic(args.out, graph, 0o600)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

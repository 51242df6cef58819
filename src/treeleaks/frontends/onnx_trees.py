"""ONNX tree ensembles: ``TreeEnsembleClassifier`` and ``TreeEnsembleRegressor`` (ai.onnx.ml,
as `skl2onnx` and `onnxmltools` write them for scikit-learn, LightGBM and XGBoost models).

An ONNX file keeps each tree's splits (thresholds rounded to float32, as its inputs are) and
each leaf's outputs, and no counts: what it gives away is the structure, the thresholds and
the leaves' class weights (a forest's: the leaf's class fractions divided by the number of
trees, so a leaf's fractions say how many rows it held at least). It is read as a file
without counts (`treeleaks.frontends.stripped`): singling out with ``--no-counts`` ranks its
leaves, ``--data`` checks them against the training rows; no attack that reads counts applies.

Each node goes left when its input is at most the IR's threshold: ``BRANCH_LEQ`` as it is,
``BRANCH_LT`` at the float32 just below its value (ONNX compares float32 inputs), the
``GT``/``GTE`` modes with their branches swapped. A missing value goes where the file says
(`onnx_routing`). Equality splits (categories) are refused, naming them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from treeleaks.frontends.boosting import Nodes
from treeleaks.frontends.gaps import with_routing
from treeleaks.frontends.onnx_routing import OnnxRouting, onnx_routing
from treeleaks.frontends.stripped import Stripped, structure_only
from treeleaks.ir.description import ModelKind, StoredField
from treeleaks.ir.model import ModelFormatError, ReleasedModel
from treeleaks.runtime.errors import UnsupportedModelError

OPS = ("TreeEnsembleClassifier", "TreeEnsembleRegressor")
LABEL = "label"
MAX_DENOMINATOR = 2_000  # a leaf's fractions read back as ratios of at most this many rows
FRACTION_TOLERANCE = 2e-6  # float32 rounding of a fraction (and of its division by trees)
FIELDS = [
    StoredField("nodes_values", "every split's threshold, rounded to float32", False),
    StoredField("class_weights / target_weights", "each leaf's output: a classifier's class "
                "fractions (a forest's divided by its trees), whose denominators are how many "
                "rows a leaf held at least; a regressor's leaf values", False),
    StoredField("leaf counts", "not stored: the format keeps no counts", True),
]


@dataclass(frozen=True)
class OnnxEnsemble:
    """An ONNX tree ensemble read: its IR, each tree's leaf outputs in the IR's leaf order
    (a classifier's leaves by classes, a regressor's one value a leaf), the values added to
    their sum (``base_values``) and the transform applied after (``post_transform``)."""

    model: ReleasedModel
    weights: list[np.ndarray]
    base_values: np.ndarray
    post_transform: str
    aggregate: str = "SUM"

    def scores(self, leaves: np.ndarray) -> np.ndarray:
        """What ONNX Runtime outputs for rows reaching ``leaves`` (rows by trees, the IR's
        leaves): a classifier's probabilities (rows by classes), a regressor's values."""
        total = sum(w[leaves[:, t]] for t, w in enumerate(self.weights))
        if self.aggregate == "AVERAGE":
            total = total / len(self.weights)
        elif self.aggregate != "SUM":
            raise UnsupportedModelError(f"ONNX aggregate_function {self.aggregate}: treeleaks "
                                        "computes SUM and AVERAGE")
        total = total + (self.base_values if self.base_values.size else 0.0)
        total = _transformed(total, self.post_transform)
        if self.model.classes and total.ndim == 2 and total.shape[1] == 1 and \
                len(self.model.classes) == 2:  # one column kept: the other is 1 - p
            total = np.column_stack([1.0 - total[:, 0], total[:, 0]])
        return total


def _transformed(total: np.ndarray, post_transform: str) -> np.ndarray:
    """The summed scores through ONNX's ``post_transform``."""
    if post_transform == "LOGISTIC":
        return 1.0 / (1.0 + np.exp(-total))
    if post_transform == "SOFTMAX":
        exp = np.exp(total - total.max(axis=1, keepdims=True))
        return exp / exp.sum(axis=1, keepdims=True)
    if post_transform != "NONE":
        raise UnsupportedModelError(f"ONNX post_transform {post_transform}: treeleaks "
                                    "computes NONE, LOGISTIC and SOFTMAX")
    return total


def read_onnx(path: Path) -> ReleasedModel:
    """The tree ensemble of the ONNX file at ``path``, read as a file without counts."""
    return read_onnx_ensemble(path).model


def read_onnx_ensemble(path: Path) -> OnnxEnsemble:
    """The tree ensemble of the ONNX file at ``path`` with its leaf outputs."""
    from onnx import helper  # a dependency; imported here so that other formats never load it

    graph, node = _ensemble(path)
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    names = _input_names(graph, _n_features(attrs))
    classifier = node.op_type == "TreeEnsembleClassifier"
    classes = _classes(attrs) if classifier else []
    shapes, weights, gap_left = _trees(attrs, classifier)
    routing = onnx_routing(shapes, gap_left, names)
    if routing is not None:
        names = _spelled_out(routing, shapes, weights)
    about = Stripped("ONNX", node.op_type, list(FIELDS),
                     ModelKind.SINGLE_TREE if len(shapes) == 1 else None)
    # a regressor's first tree: its leaf outputs as stored (a single tree's are its targets'
    # means; summed over several trees, a forest's divided by its trees or a booster's steps,
    # which the file does not tell apart)
    first = None if classifier else weights[0]
    model = structure_only(shapes, classes, names, LABEL, f"onnx.{node.op_type}", about, first)
    with_routing(model, routing)
    if classifier and _fractions(weights, len(shapes), attrs):
        model.facts["rows a leaf held at least, by its class fractions"] = rows_at_least(
            weights, len(shapes))
    return OnnxEnsemble(model, weights, _floats(attrs, "base_values"),
                        _text(attrs.get("post_transform", b"NONE")),
                        _text(attrs.get("aggregate_function", b"SUM")))


def _ensemble(path: Path) -> tuple[Any, Any]:
    """The file's graph and its one tree ensemble node, refused otherwise."""
    import onnx

    try:
        graph = onnx.load(str(path), load_external_data=False).graph
    except Exception as exc:  # onnx raises DecodeError and friends on damaged files
        raise ModelFormatError(f"not a readable ONNX file ({type(exc).__name__}): a "
                               "truncated or damaged file?") from None
    ensembles = [n for n in graph.node if n.op_type in OPS and n.domain == "ai.onnx.ml"]
    if len(ensembles) != 1:
        found = sorted({n.op_type for n in graph.node})
        raise UnsupportedModelError(
            f"the ONNX graph holds {len(ensembles)} tree ensembles (operators: "
            f"{', '.join(found) or 'none'}); treeleaks reads a graph with one "
            f"{' or '.join(OPS)} (ai.onnx.ml)")
    return graph, ensembles[0]


def _spelled_out(routing: OnnxRouting, shapes: list[Nodes], weights: list[np.ndarray]
                 ) -> list[str]:
    """Each tree's gap splits spelled out (`onnx_routing`), in place, its leaves no row
    reaches dropped from ``weights``; the features the trees then read."""
    for index, shape in enumerate(shapes):
        shapes[index], kept = routing.spelled(index, shape)
        weights[index] = weights[index][kept]
    return list(routing.layout.names)


def _fractions(weights: list[np.ndarray], n_trees: int, attrs: dict[str, Any]) -> bool:
    """Whether the leaves' outputs are class fractions (a tree or forest: each leaf's add up
    to 1 over the trees), not a booster's scores."""
    if _text(attrs.get("post_transform", b"NONE")) != "NONE":
        return False
    if all(w.shape[1] == 1 for w in weights):  # two classes, one kept: the other is 1 - p
        return all(((w * n_trees >= -1e-6) & (w * n_trees <= 1 + 1e-4)).all() for w in weights)
    return all(np.allclose(w.sum(axis=1) * n_trees, 1.0, atol=1e-4) for w in weights)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _ints(attrs: dict[str, Any], key: str) -> np.ndarray:
    return np.asarray(attrs.get(key, []), dtype=np.int64)


def _floats(attrs: dict[str, Any], key: str) -> np.ndarray:
    """A float attribute, from its list or its ``*_as_tensor`` form (ai.onnx.ml 3)."""
    if key in attrs:
        return np.asarray(attrs[key], dtype=np.float32)
    tensor = attrs.get(f"{key}_as_tensor")
    if tensor is None:
        return np.zeros(0, dtype=np.float32)
    from onnx import numpy_helper

    return numpy_helper.to_array(tensor).astype(np.float32).ravel()


def _n_features(attrs: dict[str, Any]) -> int:
    modes = [_text(m) for m in attrs.get("nodes_modes", [])]
    features = _ints(attrs, "nodes_featureids")
    inner = [f for f, m in zip(features.tolist(), modes, strict=False) if m != "LEAF"]
    return max(inner, default=-1) + 1


def _input_names(graph: Any, n_used: int) -> list[str]:
    """``x0``, ``x1``, ... over the input's width (the graph's, when it is fixed)."""
    width = n_used
    if len(graph.input) == 1:
        dims = graph.input[0].type.tensor_type.shape.dim
        if len(dims) == 2 and dims[1].dim_value > 0:
            width = max(width, int(dims[1].dim_value))
    elif len(graph.input) > 1:
        raise UnsupportedModelError(
            f"the ONNX graph takes {len(graph.input)} inputs; treeleaks reads a tree "
            "ensemble over one input table")
    return [f"x{i}" for i in range(width)]


def _classes(attrs: dict[str, Any]) -> list[Any]:
    if attrs.get("classlabels_strings"):
        return [_text(c) for c in attrs["classlabels_strings"]]
    return [int(c) for c in attrs.get("classlabels_int64s", [])]


def _trees(attrs: dict[str, Any], classifier: bool
           ) -> tuple[list[Nodes], list[np.ndarray], list[np.ndarray]]:
    """Each tree's nodes in the IR's shape, its leaves' outputs (a classifier: class
    weights, leaves by classes; a regressor: one value a leaf) and its nodes' gap sides
    (True: a NaN goes left in the IR)."""
    modes = np.array([_text(m) for m in attrs.get("nodes_modes", [])])
    tree_ids, node_ids = _ints(attrs, "nodes_treeids"), _ints(attrs, "nodes_nodeids")
    _check_node_lists(modes, tree_ids, node_ids)
    prefix = "class" if classifier else "target"
    outs = (_ints(attrs, f"{prefix}_treeids"), _ints(attrs, f"{prefix}_nodeids"),
            _ints(attrs, f"{prefix}_ids"), _floats(attrs, f"{prefix}_weights"))
    shapes, weights, gap_left = [], [], []
    tracks = _gap_tracks(attrs, modes.size)
    for tree in np.unique(tree_ids).tolist():
        mine = np.flatnonzero(tree_ids == tree)
        shape, leaf_nodes = _one_tree(attrs, modes, node_ids, mine, tree)
        true_side = (tracks[mine] == 1) if tracks.size else np.zeros(mine.size, dtype=bool)
        swapped = np.isin(modes[mine][np.argsort(node_ids[mine])], ("BRANCH_GT", "BRANCH_GTE"))
        gap_left.append((true_side[np.argsort(node_ids[mine])] != swapped) & (shape[0] >= 0))
        outputs = _leaf_outputs(tree, leaf_nodes, outs)
        shapes.append(shape)
        weights.append(outputs if classifier else outputs[:, 0])
    return shapes, weights, gap_left


def _check_node_lists(modes: np.ndarray, tree_ids: np.ndarray, node_ids: np.ndarray) -> None:
    """Refuse node lists that are empty or of different lengths, and splits other than on
    a threshold."""
    if not modes.size or not (modes.size == tree_ids.size == node_ids.size):
        raise ModelFormatError("the ONNX tree ensemble's node lists are empty or of "
                               "different lengths: an edited or damaged file")
    if (bad := sorted(set(modes.tolist()) - {"LEAF", "BRANCH_LEQ", "BRANCH_LT",
                                             "BRANCH_GT", "BRANCH_GTE"})):
        raise UnsupportedModelError(f"the ONNX tree ensemble splits by {', '.join(bad)} "
                                    "(categories); treeleaks reads threshold splits only")


def _gap_tracks(attrs: dict[str, Any], n_nodes: int) -> np.ndarray:
    """Per node, 1 where a missing value goes down the true branch (empty: none said)."""
    tracks = _ints(attrs, "nodes_missing_value_tracks_true")
    if tracks.size and tracks.size != n_nodes:
        raise ModelFormatError("the ONNX tree ensemble's nodes_missing_value_tracks_true has "
                               f"{tracks.size} entries for {n_nodes} nodes: an edited or "
                               "damaged file")
    return tracks


def _leaf_outputs(tree: int, leaf_nodes: list[int],
                  outs: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    """Tree ``tree``'s leaves by outputs (``outs``: the ensemble's output lists, each
    entry's tree, node, output and weight), an entry on a node that is no leaf refused."""
    out_tree, out_node, out_id, out_weight = outs
    width = int(out_id.max(initial=0)) + 1
    outputs = np.zeros((len(leaf_nodes), width))
    index = {node: i for i, node in enumerate(leaf_nodes)}
    for j in np.flatnonzero(out_tree == tree).tolist():
        if int(out_node[j]) not in index:
            raise ModelFormatError(f"ONNX tree {tree}: an output names node "
                                   f"{int(out_node[j])}, which is not a leaf")
        outputs[index[int(out_node[j])], out_id[j]] += out_weight[j]
    return outputs


def _one_tree(attrs: dict[str, Any], modes: np.ndarray, node_ids: np.ndarray,
              mine: np.ndarray, tree: int) -> tuple[Nodes, list[int]]:
    """Tree ``tree``'s nodes (``mine``: its positions in the node lists) as (feature,
    threshold, left, right, leaf index), and its leaves' node ids in leaf order."""
    ids = node_ids[mine]
    order = np.argsort(ids)
    mine, ids = mine[order], ids[order]
    if not np.array_equal(ids, np.arange(ids.size)):
        raise ModelFormatError(f"ONNX tree {tree}: its node ids are not 0 to {ids.size - 1}: "
                               "an edited or damaged file")
    mode = modes[mine]
    true_ids, false_ids = _ints(attrs, "nodes_truenodeids")[mine], \
        _ints(attrs, "nodes_falsenodeids")[mine]
    values = _floats(attrs, "nodes_values")
    threshold = (values[mine] if values.size == modes.size
                 else np.zeros(ids.size, dtype=np.float32))
    leaf = mode == "LEAF"
    inner = ~leaf
    if ((true_ids[inner] >= ids.size) | (false_ids[inner] >= ids.size)
            | (true_ids[inner] <= ids[inner]) | (false_ids[inner] <= ids[inner])).any():
        raise ModelFormatError(f"ONNX tree {tree}: a split points outside the tree or "
                               "back up it: an edited or damaged file")
    swap = np.isin(mode, ("BRANCH_GT", "BRANCH_GTE"))
    below = np.isin(mode, ("BRANCH_LT", "BRANCH_GTE"))  # strict: the float32 just below
    cut = np.where(below, np.nextafter(threshold, np.float32(-np.inf)), threshold)
    left = np.where(leaf, -1, np.where(swap, false_ids, true_ids))
    right = np.where(leaf, -1, np.where(swap, true_ids, false_ids))
    feature = np.where(leaf, -1, _ints(attrs, "nodes_featureids")[mine])
    leaf_index = np.full(ids.size, -1)
    leaf_index[leaf] = np.arange(int(leaf.sum()))
    shape = (feature.astype(np.int64), np.where(leaf, -2.0, cut.astype(np.float64)),
             left.astype(np.int64), right.astype(np.int64), leaf_index.astype(np.int64))
    return shape, np.flatnonzero(leaf).tolist()


def rows_at_least(weights: list[np.ndarray], n_trees: int) -> int:
    """The most rows any leaf's class fractions say it held: the smallest denominator that
    gives every fraction of the leaf within float32's rounding (a pure leaf says 1, a leaf of
    2/3 and 1/3 says 3)."""
    denominators = np.arange(1, MAX_DENOMINATOR + 1)
    most = 1
    for outputs in weights:
        for row in outputs * n_trees:
            shares = row[row > FRACTION_TOLERANCE]
            if not shares.size:
                continue
            scaled = shares[:, None] * denominators[None, :]
            whole = (np.abs(scaled - np.round(scaled)) <= FRACTION_TOLERANCE * denominators)
            fits = np.flatnonzero(whole.all(axis=0))
            if fits.size:
                most = max(most, int(denominators[fits[0]]))
    return most

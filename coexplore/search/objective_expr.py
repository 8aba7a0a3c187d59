"""Objectives written as expressions of the cost model's metrics: `energy * cycles**2` (ED^2P), a
cap `energy if cycles <= 3e5 else inf`, a weighted sum. What a command line or a mapper YAML can
say where a Python caller passes a function (`map_layer(objective=...)`).

An expression is evaluated on the batch's numpy arrays by walking its syntax tree, allowing only
numbers, the metric names, arithmetic, comparisons, `and`/`or`/`not`, `a if c else b` and the
functions below: no attribute access and no other calls, so a mapper file cannot run code. Every
value is a float: a comparison or `not` is 1 or 0, `a and b` / `a or b` are Python's (b where a is
not 0, else a / a where a is not 0, else b).
"""

from __future__ import annotations

import ast
import functools
import math
import operator
from dataclasses import dataclass

import numpy as np

from coexplore.errors import CoexploreError, shortened

# metric -> its unit; `latency` is the cycles, as in `coexplore evaluate`
METRICS = {"energy": "pJ", "cycles": "cycles", "latency": "cycles", "edp": "J*cycle", "utilization": "0..1"}
CONSTANTS = {"inf": np.inf, "pi": np.pi, "e": np.e}
MAX_LENGTH = 1000          # characters
MAX_DEPTH = 60             # nested operations (a deeper syntax tree than any objective needs)


def _reduce(fn):
    return lambda *args: functools.reduce(fn, args)


# name -> (function on arrays, its number of arguments: n, or (least, None) for any number from least)
FUNCTIONS = {"min": (_reduce(np.minimum), (2, None)), "max": (_reduce(np.maximum), (2, None)),
             "where": (np.where, 3),
             **{name: (getattr(np, name), 1) for name in ("log", "log2", "log10", "exp", "sqrt", "abs")}}

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.Pow: operator.pow}
_COMPARE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
            ast.Eq: operator.eq, ast.NotEq: operator.ne}
_EXPECTED = ("an objective name (edp, energy, latency) or an expression of "
             + ", ".join(f"{k} ({u})" for k, u in METRICS.items())
             + " with numbers, + - * / **, comparisons, and/or/not, `a if c else b`, inf and "
             + ", ".join(FUNCTIONS) + ", e.g. 'energy * cycles**2'")


@dataclass(frozen=True)
class ObjectiveExpression:
    """A checked expression: `text` is its canonical spelling (spacing normalised: the cache key),
    `names` the metrics it reads; `may_refuse`: whether it can give a mapping the model finds valid
    an infinite (or undefined) loss (`_may_refuse`: a cap, a division, a root, a logarithm, ...)."""

    text: str
    tree: ast.expr
    names: frozenset[str]
    may_refuse: bool

    def __call__(self, metrics: dict) -> np.ndarray:
        """The losses of a batch: `metrics` maps the names to arrays (inf where a mapping is invalid)."""
        with np.errstate(all="ignore"):
            out = _eval(self.tree, metrics)
        return np.asarray(out, dtype=float)


def _refuse(text: str, why: str, key: str, file, option) -> CoexploreError:
    return CoexploreError(f"bad objective {_short(text)}: {why}", file=file, key=key, expected=_EXPECTED, option=option)


@functools.lru_cache(maxsize=256)
def _parse(text: str) -> ObjectiveExpression:
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ValueError(f"not an expression ({exc.msg})") from None
    except (RecursionError, MemoryError):
        raise ValueError(f"nested more than {MAX_DEPTH} deep") from None
    if _depth(tree) > MAX_DEPTH:
        raise ValueError(f"nested more than {MAX_DEPTH} deep")
    names = set()
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if node.id in FUNCTIONS and id(node) not in called:
                raise ValueError(f"'{node.id}' is a function: call it, e.g. {node.id}(energy, ...)")
            if node.id in METRICS:
                names.add(node.id)
            elif node.id not in CONSTANTS and node.id not in FUNCTIONS:
                raise ValueError(f"unknown name '{node.id}'")
        elif isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
                raise ValueError(f"'{ast.unparse(node.func)}' is not a function an objective may call")
            arity = FUNCTIONS[node.func.id][1]
            least, most = arity if isinstance(arity, tuple) else (arity, arity)
            if node.keywords or any(isinstance(a, ast.Starred) for a in node.args) \
                    or len(node.args) < least or (most is not None and len(node.args) > most):
                raise ValueError(f"{node.func.id}() takes {least}{' or more' if most is None else ''} "
                                 f"argument{'s' if least > 1 else ''}")
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                raise ValueError(f"{str(node.value)[:40]!r} is not a number")
            try:
                float(node.value)
            except OverflowError:
                raise ValueError(f"a number of {len(str(node.value))} digits is too large") from None
        elif isinstance(node, ast.BinOp) and type(node.op) not in _BINARY:
            raise ValueError(f"operator '{ast.unparse(node)}' is not allowed")
        elif isinstance(node, ast.Compare) and not all(type(op) in _COMPARE for op in node.ops):
            raise ValueError(f"comparison '{ast.unparse(node)}' is not allowed")
        elif isinstance(node, ast.UnaryOp) and not isinstance(node.op, (ast.USub, ast.UAdd, ast.Not)):
            raise ValueError(f"operator '{ast.unparse(node)}' is not allowed")
        elif not isinstance(node, (ast.Call, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp,
                                   ast.IfExp, ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)):
            raise ValueError(f"'{ast.unparse(node)}' is not allowed")
    if not names:
        raise ValueError("it reads no metric")
    return ObjectiveExpression(ast.unparse(tree), tree, frozenset(names), _may_refuse(tree))


def _may_refuse(tree: ast.expr) -> bool:
    """False only for what cannot give a finite metric an infinite or undefined value: sums,
    differences, products, min, max and abs of the metrics and of constants up to 1e30, and powers
    by a positive integer constant up to 4, of degree at most 12 in all (metrics stay below 1e20, so
    the value stays below 1e270); anything else may (a cap, a division, a root, a logarithm, ...)."""
    def degree(node) -> float:
        if isinstance(node, ast.Name):
            return 1.0 if node.id in METRICS else 0.0 if math.isfinite(CONSTANTS[node.id]) else math.inf
        if isinstance(node, ast.Constant):
            return 0.0 if abs(node.value) <= 1e30 else math.inf
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            return degree(node.operand)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            return max(degree(node.left), degree(node.right))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            return degree(node.left) + degree(node.right)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and isinstance(node.right, ast.Constant) \
                and float(node.right.value).is_integer() and 1 <= node.right.value <= 4:
            return degree(node.left) * node.right.value
        if isinstance(node, ast.Call) and node.func.id in ("min", "max", "abs"):
            return max(degree(a) for a in node.args)
        return math.inf
    try:
        return degree(tree) > 12
    except RecursionError:                    # (the depth is capped before this; to be safe)
        return True


def compile_objective(text: str, *, key: str = "objective", file=None, option: str | None = None
                      ) -> ObjectiveExpression:
    """The checked expression of `text`; a CoexploreError naming `key` (and `file`, `option`) if it
    is not one an objective may be."""
    if not isinstance(text, str) or not text.strip():
        raise CoexploreError(f"got {_short(text)}", file=file, key=key, expected=_EXPECTED, option=option)
    if len(text) > MAX_LENGTH:
        raise _refuse(text, f"{len(text):,} characters long (at most {MAX_LENGTH:,})", key, file, option)
    try:
        return _parse(text)
    except ValueError as exc:
        raise _refuse(text, str(exc), key, file, option) from None


def _short(value) -> str:
    """A value said in an error, cut to a line (a YAML alias list can expand to megabytes)."""
    return shortened(repr(value))


def _depth(tree: ast.expr) -> int:
    """How deeply the expression's operations nest (without recursion: the tree may be deep)."""
    deepest, todo = 0, [(tree, 1)]
    while todo:
        node, d = todo.pop()
        deepest = max(deepest, d)
        todo.extend((child, d + 1) for child in ast.iter_child_nodes(node) if isinstance(child, ast.expr))
    return deepest


def _truth(v) -> np.ndarray:
    return np.asarray(v) != 0


def _eval(node: ast.expr, metrics: dict):
    if isinstance(node, ast.Constant):
        return np.float64(node.value)          # (float powers overflow to inf; Python ints would grow without end)
    if isinstance(node, ast.Name):
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        return metrics[node.id]
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)](_eval(node.left, metrics), _eval(node.right, metrics))
    if isinstance(node, ast.UnaryOp):
        v = _eval(node.operand, metrics)
        return np.float64(1.0) * ~_truth(v) if isinstance(node.op, ast.Not) else -v if isinstance(node.op, ast.USub) else +v
    if isinstance(node, ast.Compare):
        left, out = _eval(node.left, metrics), True
        for op, right_node in zip(node.ops, node.comparators):
            right = _eval(right_node, metrics)
            out = np.logical_and(out, _COMPARE[type(op)](left, right))
            left = right
        return np.float64(1.0) * out                     # 1 or 0, a number arithmetic takes
    if isinstance(node, ast.BoolOp):                      # Python's: the first operand that decides
        out = _eval(node.values[0], metrics)
        for value in node.values[1:]:
            v = _eval(value, metrics)
            out = np.where(_truth(out), v, out) if isinstance(node.op, ast.And) else np.where(_truth(out), out, v)
        return out
    if isinstance(node, ast.IfExp):
        return np.where(_truth(_eval(node.test, metrics)), _eval(node.body, metrics), _eval(node.orelse, metrics))
    if isinstance(node, ast.Call):
        args = [_eval(a, metrics) for a in node.args]
        if node.func.id == "where":
            args[0] = _truth(args[0])
        return FUNCTIONS[node.func.id][0](*args)
    raise AssertionError(f"unchecked node {ast.dump(node)}")      # (_parse refuses every other kind)

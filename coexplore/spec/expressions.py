"""v0.4 expressions: `variables:` and architecture attributes written as arithmetic on names.

timeloopfe evaluates these as Python (`width: datawidth * 3`, `datawidth: DATAWIDTH` with
`DATAWIDTH` a top-level variable) before Timeloop sees the numbers. Here an expression is
evaluated by walking its syntax tree, allowing only arithmetic, comparisons, conditionals,
literals, the names in scope and the math functions timeloopfe offers: no attribute access, no
other calls, so an input file cannot run code.
"""

from __future__ import annotations

import ast
import math
import operator
from typing import Any, Mapping

# the largest integer an expression may make, in bits: larger ones take minutes and gigabytes to
# compute, and Python cannot print them
MAX_BITS = 4096


def bounded_power(base, exponent):
    """`**` with a bound on the result's size (`9**9**9`, `(9**4000)**4000`)."""
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1 \
            and (abs(base).bit_length() - 1) * exponent > MAX_BITS:
        raise OverflowError(f"the power {'a ' + str(abs(base).bit_length()) + '-bit number' if abs(base) > 1e6 else base}"
                            f" ** {exponent} is too large")
    return operator.pow(base, exponent)


def bounded_product(a, b):
    """`*` with a bound on an integer product's size."""
    if isinstance(a, int) and isinstance(b, int) and a.bit_length() + b.bit_length() > MAX_BITS:
        raise OverflowError("the product is too large")
    return operator.mul(a, b)


def _log2_count(name: str, args) -> float:
    """log2 of factorial(n) / comb(n, k) / perm(n, k), from lgamma (without computing them)."""
    lg = math.lgamma
    n = args[0]
    k = args[1] if len(args) > 1 and args[1] is not None else (n if name == "perm" else 0)
    if not all(isinstance(a, int) and not isinstance(a, bool) for a in (n, k)) or n < 0 or k < 0 or k > n:
        return 0.0                            # (math's own function says what is wrong)
    try:
        if name == "factorial":
            return lg(n + 1) / math.log(2)
        if name == "comb":
            return (lg(n + 1) - lg(k + 1) - lg(n - k + 1)) / math.log(2)
        return (lg(n + 1) - lg(n - k + 1)) / math.log(2)
    except OverflowError:                     # n beyond floats: at most n ** (terms multiplied)
        if name == "factorial":
            return math.inf
        return (min(k, n - k) if name == "comb" else k) * math.log2(n)


def _bounded_count(fn):
    """factorial / comb / perm, refused when the result would pass MAX_BITS (computing such a
    number takes seconds and gigabytes; `comb(20000, 2)` is fine)."""
    def bounded(*args):
        if args and _log2_count(fn.__name__, args) > MAX_BITS:
            shown = ", ".join(str(a) if len(str(a)) <= 20 else f"a {len(str(a))}-digit number" for a in args)
            raise OverflowError(f"{fn.__name__}({shown}) is too large (more than {MAX_BITS} bits)")
        return fn(*args)
    bounded.__name__ = fn.__name__
    return bounded


def _bounded_prod(values):
    """Accelergy's prod (math.prod, whose start is keyword-only: one argument here)."""
    out = 1
    for v in values:
        out = bounded_product(out, v)
    return out


# the math functions Accelergy's expressions offer (its parsing_utils.MATH_FUNCS), numeric ones
FUNCTIONS = {name: getattr(math, name) for name in (
    "ceil", "floor", "sqrt", "exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "asin",
    "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "trunc", "fabs", "copysign",
    "fmod", "remainder", "frexp", "ldexp", "modf", "fsum", "gcd", "isqrt", "isclose", "isfinite", "isinf",
    "isnan", "hypot", "dist", "degrees", "radians", "erf", "erfc", "gamma", "lgamma")}
FUNCTIONS.update(min=min, max=max, abs=abs, round=round, int=int, float=float, sum=sum, len=len, bool=bool,
                 pow=bounded_power, prod=_bounded_prod, factorial=_bounded_count(math.factorial),
                 comb=_bounded_count(math.comb), perm=_bounded_count(math.perm))
CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau, "inf": math.inf, "nan": math.nan,
             "True": True, "False": False, "None": None}

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: bounded_product, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: bounded_power}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg, ast.Not: operator.not_}
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge}


class Namespace(dict):
    """A part of the spec an expression may read by attribute (`spec.problem.instance`), as
    timeloopfe's `spec` object offers it; read-only."""


class ExpressionError(Exception):
    """An expression that names something undefined or cannot be computed."""


MAX_TEXT = 1000      # longer text is text, not an expression (a 3,000-term sum overflows Python's parser)

# why the last architecture's text values that look like expressions were not computed (text ->
# reason), so that a number that is still text can be refused saying why
FAILED: dict[str, str] = {}


def parse(text: str) -> ast.expr | None:
    """The expression's tree, or None when the text is not a Python expression (`SET ME`, `32nm`,
    which are plain text)."""
    if len(text) > MAX_TEXT:
        return None
    try:
        return ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def evaluate(tree: ast.expr, scope: Mapping[str, Any]) -> Any:
    """The value of an expression tree over `scope` (names -> values)."""
    if isinstance(tree, ast.Constant):
        return tree.value
    if isinstance(tree, ast.Name):
        if tree.id in scope:
            return scope[tree.id]
        if tree.id in CONSTANTS:
            return CONSTANTS[tree.id]
        raise ExpressionError(f"name '{tree.id}' is not defined")
    if isinstance(tree, ast.BinOp) and type(tree.op) in _BINARY:
        left, right = evaluate(tree.left, scope), evaluate(tree.right, scope)
        if not all(isinstance(v, (int, float)) for v in (left, right)):    # no 'a' * 10**9
            raise ExpressionError(f"'{ast.unparse(tree)}': arithmetic on {type(left).__name__} and "
                                  f"{type(right).__name__}, not numbers")
        return _apply(_BINARY[type(tree.op)], left, right)
    if isinstance(tree, ast.UnaryOp) and type(tree.op) in _UNARY:
        return _apply(_UNARY[type(tree.op)], evaluate(tree.operand, scope))
    if isinstance(tree, ast.BoolOp):          # Python's: short-circuit, the deciding operand's value
        value = None
        for operand in tree.values:
            value = evaluate(operand, scope)
            if bool(value) is not isinstance(tree.op, ast.And):
                return value
        return value
    if isinstance(tree, ast.Compare) and all(type(op) in _COMPARE for op in tree.ops):
        left = evaluate(tree.left, scope)
        for op, right_tree in zip(tree.ops, tree.comparators):
            right = evaluate(right_tree, scope)
            if not _apply(_COMPARE[type(op)], left, right):
                return False
            left = right
        return True
    if isinstance(tree, ast.IfExp):
        return evaluate(tree.body if evaluate(tree.test, scope) else tree.orelse, scope)
    if isinstance(tree, ast.Attribute):
        obj = evaluate(tree.value, scope)
        if not isinstance(obj, Namespace) or tree.attr not in obj:
            raise ExpressionError(f"'{ast.unparse(tree)}' names nothing in the spec")
        value = obj[tree.attr]
        return Namespace(value) if isinstance(value, dict) else value
    if isinstance(tree, ast.Subscript):
        obj, key = evaluate(tree.value, scope), evaluate(tree.slice, scope)
        try:
            value = obj[key]
        except (KeyError, IndexError, TypeError) as exc:
            raise ExpressionError(f"'{ast.unparse(tree)}': {type(exc).__name__}: {exc}") from None
        return Namespace(value) if isinstance(value, dict) else value
    if isinstance(tree, (ast.List, ast.Tuple)):
        return [evaluate(v, scope) for v in tree.elts]
    if isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name) and not tree.keywords:
        if tree.func.id not in FUNCTIONS:
            raise ExpressionError(f"function '{tree.func.id}' is not one of {', '.join(sorted(FUNCTIONS))}")
        return _apply(FUNCTIONS[tree.func.id], *(evaluate(a, scope) for a in tree.args))
    raise ExpressionError(f"'{ast.unparse(tree)}' is not arithmetic on names and numbers")


# what `evaluate` says of Python it does not compute (Accelergy would): lambdas, comprehensions,
# list arithmetic, functions beyond FUNCTIONS, attributes outside the spec
_UNSUPPORTED = ("is not arithmetic on names and numbers", "not numbers", "is not one of", "names nothing in the spec")


def unsupported(why: str | None) -> bool:
    """Whether `resolve`'s reason is a construct only this evaluator refuses (Accelergy evaluates
    any Python), rather than an error Accelergy makes too (an undefined name, a division by 0)."""
    return why is not None and any(phrase in why for phrase in _UNSUPPORTED)


def _apply(fn, *args):
    try:
        return fn(*args)
    except (ArithmeticError, TypeError, ValueError) as exc:
        raise ExpressionError(f"{type(exc).__name__}: {exc}") from None


def resolve(value: Any, scope: Mapping[str, Any]) -> tuple[Any, str | None]:
    """A YAML value as timeloopfe reads it: a string that is an expression over defined names is
    computed; a bare word that names nothing in scope (`LPDDR4`) and text that is no expression
    (`SET ME`, `32nm`) stay text. Returns (value, why it cannot be computed) where the second is
    not None for an expression that names something undefined or fails."""
    if not isinstance(value, str):
        return value, None
    from coexplore.spec.yamlio import Quoted
    if isinstance(value, Quoted):       # text, as Accelergy keeps it; Timeloop still reads "64" as 64
        number = parse(value)
        if isinstance(number, ast.UnaryOp) and isinstance(number.op, ast.USub):
            number = number.operand if isinstance(number.operand, ast.Constant) else None
            sign = -1
        else:
            sign = 1
        if isinstance(number, ast.Constant) and isinstance(number.value, (int, float)) \
                and not isinstance(number.value, bool):
            return sign * number.value, None
        FAILED[str(value)] = "quoted: text, not an expression (Accelergy and timeloopfe compute only unquoted ones)"
        return str(value), None
    tree = parse(value)
    if tree is None:
        FAILED[value] = "neither a number nor an expression Python can read"   # (said only if a number was wanted)
        return value, None
    if isinstance(tree, ast.Name) and tree.id not in scope and tree.id not in CONSTANTS:
        FAILED[value] = f"name '{tree.id}' is not defined"     # (said only if a number was wanted)
        return value, None
    if isinstance(tree, ast.Constant) and not isinstance(tree.value, (int, float)):
        return value, None
    try:
        return evaluate(tree, scope), None
    except RecursionError:
        FAILED[value] = "nested too deeply"
        return value, FAILED[value]
    except ExpressionError as exc:
        FAILED[value] = str(exc)
        return value, str(exc)

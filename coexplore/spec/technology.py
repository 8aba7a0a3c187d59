"""A `technology` attribute read: '45nm', 45, '16 nm', '0.045um' -> nm, within the nodes the
energy estimator's scaling tables cover (`coexplore.energy.technology`)."""

from __future__ import annotations

from coexplore.errors import CoexploreError

# the Stillmaker-Baas tables' nodes (nm), largest first
NODES_NM = (130.0, 90.0, 65.0, 45.0, 32.0, 20.0, 16.0, 14.0, 10.0, 7.0)


def parse_technology(value, *, key: str = "technology") -> float:
    """'45nm' / 45 / '0.045um' -> 45.0 (nm); -1 (the dummy technology) -> -1.0."""
    if isinstance(value, bool) or value is None:
        raise CoexploreError(f"technology {value!r} is not a node size", key=key,
                             expected="e.g. '45nm', 45, or -1 for dummy components")
    if isinstance(value, (int, float)):
        nm = float(value)
    else:
        text = str(value).strip().lower().replace(" ", "")
        try:
            if text.endswith("nm"):
                nm = float(text[:-2])
            elif text.endswith("um"):
                nm = float(text[:-2]) * 1000.0
            else:
                nm = float(text)
        except ValueError:
            raise CoexploreError(f"technology {value!r} is not a node size", key=key,
                                 expected="e.g. '45nm', 45, or -1 for dummy components") from None
    if nm == -1:
        return -1.0
    if not (NODES_NM[-1] <= nm <= NODES_NM[0]):
        unit = next((f" ({value!r} in {name}? write {nm * f:g}nm)" for name, f in (("metres", 1e9), ("micrometres", 1e3))
                     if NODES_NM[-1] <= nm * f <= NODES_NM[0] and 0 < nm < 1), "")
        raise CoexploreError(f"technology {value!r} is outside the supported range{unit}", key=key,
                             expected=f"{NODES_NM[-1]:g}..{NODES_NM[0]:g} nm (the nodes of the Stillmaker-Baas "
                                      "scaling tables coexplore prices with; CACTI's own 22-180 nm is not the limit)")
    return nm

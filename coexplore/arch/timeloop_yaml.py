"""Timeloop v0.4 YAML tags (`!Container`, `!Component`, `!Parallel`, `!Nothing`): read and write.

Timeloop's front-end (timeloopfe) marks architecture nodes with YAML tags. The node classes
here are plain ordered dicts that remember their tag, so a generated architecture can be
written with the tags real Timeloop expects and a user's (or the corpus') arch.yaml can be
read back for comparison. Key order is kept as built; lists of scalars are written in flow
style (`keep: [Inputs, Outputs]`), as the Timeloop exercises write them.
"""

from __future__ import annotations

from typing import Any

import yaml

from coexplore.spec.yamlio import Quoted


class Node(dict):
    """A tagged v0.4 architecture node; the mapping is the node's body, in order."""

    tag = "!Node"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict.__repr__(self)})"


class Container(Node):
    tag = "!Container"


class Component(Node):
    tag = "!Component"


class Parallel(Node):
    tag = "!Parallel"


class Nothing(Node):
    tag = "!Nothing"


NODE_TYPES = (Container, Component, Parallel, Nothing)


class TimeloopDumper(yaml.SafeDumper):
    """SafeDumper that writes the node tags and keeps flow-style scalar lists."""

    def increase_indent(self, flow: bool = False, indentless: bool = False):
        # indent list items under their key, as the Timeloop exercises do
        return super().increase_indent(flow, False)


def _represent_node(dumper: yaml.SafeDumper, node: Node):
    return dumper.represent_mapping(node.tag, list(node.items()))


def _represent_list(dumper: yaml.SafeDumper, data: list):
    flow = bool(data) and all(isinstance(x, (str, int, float, bool)) for x in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


def _represent_dict(dumper: yaml.SafeDumper, data: dict):
    return dumper.represent_mapping("tag:yaml.org,2002:map", list(data.items()))


for _cls in NODE_TYPES:
    TimeloopDumper.add_representer(_cls, _represent_node)
TimeloopDumper.add_representer(list, _represent_list)
TimeloopDumper.add_representer(dict, _represent_dict)
TimeloopDumper.add_representer(Quoted, lambda dumper, data: dumper.represent_str(str(data)))


class TimeloopLoader(yaml.SafeLoader):
    """SafeLoader that builds Container/Component/Parallel/Nothing for the v0.4 tags."""


def _constructor(cls):
    def construct(loader: yaml.SafeLoader, node: yaml.Node):
        if isinstance(node, yaml.ScalarNode) and node.value == "":
            return cls()
        out = cls()
        out.update(loader.construct_mapping(node, deep=True))
        return out
    return construct


for _cls in NODE_TYPES:
    TimeloopLoader.add_constructor(_cls.tag, _constructor(_cls))


def dump(data: Any, header: str | None = None) -> str:
    """YAML text of `data` with Timeloop tags; `header` lines are written as `#` comments."""
    text = yaml.dump(data, Dumper=TimeloopDumper, sort_keys=False, default_flow_style=False,
                     width=120, allow_unicode=True)
    if header:
        comment = "".join(f"# {line}".rstrip() + "\n" for line in header.splitlines())
        text = comment + text
    return text


def load(text: str) -> Any:
    """Parse YAML text that may hold Timeloop v0.4 tags."""
    return yaml.load(text, Loader=TimeloopLoader)


def plain(data: Any) -> Any:
    """`data` with every tagged node turned into `{'!Tag': body}` (for comparisons and JSON)."""
    if isinstance(data, Node):
        return {data.tag: {k: plain(v) for k, v in data.items()}}
    if isinstance(data, dict):
        return {k: plain(v) for k, v in data.items()}
    if isinstance(data, list):
        return [plain(x) for x in data]
    return data

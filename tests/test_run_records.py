"""What a run record says about how its result was made (a reproducibility study): every input file
read, named ones or found beside ARCH, with its digest; the libraries' versions; and a content key
that does not depend on where the files sit."""

from __future__ import annotations

import hashlib
import json
import shutil
from importlib import metadata
from pathlib import Path

from coexplore.bundled import bundled_dir
from coexplore.cli.main import main

CORPUS = Path(__file__).parent / "data" / "timeloop_corpus"
RUN = ["--layer", "res3a_branch2b", "--budget", "60", "--no-progress", "--no-cache"]


def _record(out: Path) -> dict:
    return json.loads((out / "result.json").read_text())["run"]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _copy(tmp_path: Path, name: str) -> Path:
    shutil.copytree(CORPUS / "arches" / "simba_like", tmp_path / name)
    return tmp_path / name


def test_files_found_beside_arch_and_a_bundled_workload_are_recorded(tmp_path):
    arch = _copy(tmp_path, "a")
    assert main(["map", str(arch / "processed.yaml"), "resnet50", *RUN, "--out", str(tmp_path / "o")]) == 0
    run = _record(tmp_path / "o")
    assert run["found"] == {"ert": str((arch / "ERT.yaml").resolve()),
                            "constraints": [str((arch / "constraints.yaml").resolve())]}
    digests = run["inputs_sha256"]
    for f in (arch / "processed.yaml", arch / "ERT.yaml", arch / "constraints.yaml"):
        assert digests[str(f.resolve())] == _sha(f)
    # a bundled file by its place among the bundled ones (the same name for a clone's and an install's)
    assert digests["bundled:problems/resnet50.yaml"] == _sha(bundled_dir("problems") / "resnet50.yaml")
    assert run["versions"]["numpy"] == metadata.version("numpy") and run["versions"]["python"]


def test_the_content_key_does_not_depend_on_where_the_files_sit(tmp_path):
    keys = []
    for name in ("a", "b"):
        arch = _copy(tmp_path, name)
        assert main(["map", str(arch / "processed.yaml"), "resnet50", *RUN, "--out", str(tmp_path / f"o{name}")]) == 0
        keys.append(_record(tmp_path / f"o{name}")["content_key"])
    assert keys[0] == keys[1]
    text = (tmp_path / "b" / "ERT.yaml").read_text()           # an edited ERT is another content
    (tmp_path / "b" / "ERT.yaml").write_text(text.replace("energy: ", "energy: 1", 1))
    assert main(["map", str(tmp_path / "b" / "processed.yaml"), "resnet50", *RUN, "--out", str(tmp_path / "oc")]) == 0
    assert _record(tmp_path / "oc")["content_key"] != keys[0]


def test_a_record_holds_the_command_that_runs_it_again(tmp_path):
    import shlex
    argv = ["map", "simba", "resnet50", *RUN, "--seed", "2", "--out", str(tmp_path / "o")]
    assert main(argv) == 0
    first = json.loads((tmp_path / "o" / "result.json").read_text())
    assert first["command"] == shlex.join(["coexplore", *argv])
    again = shlex.split(first["command"])[1:]
    again[again.index("--out") + 1] = str(tmp_path / "again")
    assert main(again) == 0
    assert json.loads((tmp_path / "again" / "result.json").read_text())["best"] == first["best"]


def test_a_networks_summary_has_the_command_and_its_layers_none(tmp_path):
    net = tmp_path / "net.yaml"
    net.write_text("workload:\n  layers:\n  - {name: a, instance: {C: 8, M: 8, P: 4, Q: 4}}\n")
    argv = ["map", "simba", str(net), "--all-layers", "--budget", "30", "--no-cache", "--no-progress",
            "--out", str(tmp_path / "o")]
    assert main(argv) == 0
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["command"].startswith("coexplore map simba")
    assert "command" not in json.loads((tmp_path / "o" / "a" / "result.json").read_text())

"""Inputs that are not ordinary YAML files (a fuzzing study): a named pipe, YAML nested a thousand
levels deep, a symlink loop or a dangling link, a long run of letters in a factor string, a bad
required_actions. Each is one line, exit 2; none hangs or ends in a traceback."""

from __future__ import annotations

import os
import shutil

import pytest

from coexplore.cli.main import main
from coexplore.errors import CoexploreError
from coexplore.spec.yamlio import load_yaml

from conftest import CORPUS

ARCH = CORPUS / "arches" / "eyeriss_like"
LAYER = CORPUS / "layers" / "tiny_conv.yaml"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_named_pipe_is_refused_not_waited_on(tmp_path, capsys):
    fifo = tmp_path / "p.yaml"
    os.mkfifo(fifo)
    with pytest.raises(CoexploreError, match="not a regular file"):
        load_yaml(fifo)
    shutil.copy(ARCH / "processed.yaml", tmp_path / "processed.yaml")
    os.mkfifo(tmp_path / "ERT.yaml")               # found beside the architecture, never named
    assert main(["map", str(tmp_path / "processed.yaml"), str(LAYER), "--budget", "20", "--no-cache",
                 "--no-progress", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "ERT.yaml: not a regular file" in err and "Traceback" not in err


def test_yaml_nested_a_thousand_deep_is_refused(tmp_path, capsys):
    deep = tmp_path / "deep.yaml"
    deep.write_text("architecture: " + "[" * 1000 + "]" * 1000 + "\n")
    with pytest.raises(CoexploreError, match="nested more than 200"):
        load_yaml(deep)
    assert main(["map", str(deep), str(LAYER), "--budget", "20", "--no-cache", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "nested more than" in err and "internal error" not in err


def test_a_symlink_loop_as_constraints_and_a_dangling_ert_beside_are_said(tmp_path, capsys):
    (tmp_path / "loop.yaml").symlink_to(tmp_path / "loop.yaml")
    assert main(["map", str(ARCH / "processed.yaml"), str(LAYER), "--constraints", str(tmp_path / "loop.yaml"),
                 "--budget", "20", "--no-cache", "--no-progress", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "loop.yaml" in err and "internal error" not in err
    shutil.copy(ARCH / "processed.yaml", tmp_path / "processed.yaml")
    (tmp_path / "ERT.yaml").symlink_to(tmp_path / "gone.yaml")       # a broken link: not the built-in estimate
    assert main(["map", str(tmp_path / "processed.yaml"), str(LAYER), "--budget", "20", "--no-cache",
                 "--no-progress", "--out", str(tmp_path / "o2")]) == 2
    err = capsys.readouterr().err
    assert "ERT.yaml" in err and "built-in estimator" not in err


def test_a_long_run_of_letters_in_factors_is_refused_at_once_and_echoed_short(tmp_path):
    from coexplore.spec.mapping import _parse_factors
    with pytest.raises(CoexploreError) as err:        # (20,000 letters took ~2 s, 100,000 over a minute)
        _parse_factors("K=1 " + "x" * 20_000, file=None, key="k", dims=["K", "P"])
    assert len(err.value.message) < 400


def test_required_actions_not_a_list_of_names_is_refused(tmp_path, capsys):
    text = (CORPUS / "arches" / "simple_weight_stationary" / "processed.yaml").read_text()
    import yaml
    doc = yaml.safe_load(text)
    doc["architecture"]["subtree"][0]["local"][0]["required_actions"] = True
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(doc))
    assert main(["energy", "tables", str(tmp_path / "p.yaml"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "required_actions" in err and "a list of action names" in err and "internal error" not in err


def test_a_level_renamed_in_the_architecture_is_traced_to_it(tmp_path, capsys):
    """Fuzzing study: a level renamed in arch.yaml was blamed on constraints.yaml alone ("unknown level"),
    never naming the file where the change was made."""
    for name in ("processed.yaml", "ERT.yaml", "constraints.yaml"):
        shutil.copy(ARCH / name, tmp_path / name)
    text = (tmp_path / "processed.yaml").read_text()
    assert "name: psum_spad" in text
    (tmp_path / "processed.yaml").write_text(text.replace("name: psum_spad", "name: psum_spadx"))
    assert main(["map", str(tmp_path / "processed.yaml"), str(LAYER), "--budget", "20", "--no-cache",
                 "--no-progress", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "unknown level 'psum_spad'" in err and f"the levels of {tmp_path / 'processed.yaml'}: renamed there?" in err

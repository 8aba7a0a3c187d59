"""Results of other code are recomputed, not reused: the cache key, checkpoints and run records carry
a digest of the package's source (a review showed a cache filled before a one-line change to a
searcher answering after it, under the one version number 0.1.0)."""

import shutil
from pathlib import Path

import pytest

import coexplore
import coexplore.search.layer as layer_mod
from coexplore.model.cache import ResultCache
from coexplore.model.inputs import load_context
from coexplore.provenance import code_version, source_digest
from coexplore.search.layer import map_layer

from conftest import CORPUS

PACKAGE = Path(coexplore.__file__).resolve().parent


def test_the_digest_follows_every_source_and_data_file(tmp_path):
    copy = tmp_path / "pkg"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert source_digest(copy) == source_digest()
    (copy / "search" / "random_search.py").write_text((copy / "search" / "random_search.py").read_text() + "\n#\n")
    edited = source_digest(copy)
    assert edited != source_digest()
    (copy / "data" / "energy" / "cacti_sram.json").write_bytes(b"{}")
    assert source_digest(copy) != edited
    assert code_version() == f"{coexplore.__version__}+{source_digest()}"


def test_a_cached_layer_result_of_other_code_is_recomputed(tmp_path, monkeypatch):
    ctx = load_context(CORPUS / "arches" / "eyeriss_like" / "processed.yaml", CORPUS / "layers" / "tiny_conv.yaml")
    with ResultCache(tmp_path / "c.sqlite") as cache:
        assert not map_layer(ctx, {}, "random", 200, seed=0, cache=cache).cached
        assert map_layer(ctx, {}, "random", 200, seed=0, cache=cache).cached
        assert source_digest() in layer_mod.MODEL_VERSION
        monkeypatch.setattr(layer_mod, "MODEL_VERSION", layer_mod.MODEL_VERSION.replace(source_digest(), "0" * 16))
        assert not map_layer(ctx, {}, "random", 200, seed=0, cache=cache).cached


def test_an_installed_package_and_its_clone_have_one_digest(tmp_path):
    """A regular install adds the example files under _bundled/ (setup.py); the code is the clone's,
    so `python -m coexplore` in the clone and the installed `coexplore` share caches and Ray nodes."""
    copy = tmp_path / "pkg"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "_bundled"))
    plain = source_digest(copy)
    (copy / "_bundled" / "arch").mkdir(parents=True)
    (copy / "_bundled" / "arch" / "simba.yaml").write_text("architecture: {}\n")
    assert source_digest(copy) == plain
    (copy / "bundled_extra.py").write_text("x = 1\n")        # any other file still counts
    assert source_digest(copy) != plain


def test_a_run_record_names_bundled_files_wherever_they_are_kept(tmp_path):
    """User study: `coexplore map simba ...` (the installed copy of arch/) and `python -m coexplore
    map simba ...` in a clone (the clone's arch/) recorded different paths, so each made its own
    result folder; a bundled file is named by its place among the bundled ones."""
    import shutil

    from coexplore.bundled import bundled_dir, record_name
    from coexplore.cli.paths import digests
    simba = bundled_dir("arch") / "simba.yaml"
    assert record_name(simba) == "bundled:arch/simba.yaml"
    mine = tmp_path / "simba.yaml"
    shutil.copy(simba, mine)
    assert record_name(mine) == str(mine.resolve())             # a file of the user's: its path
    assert list(digests(simba, mine)) == ["bundled:arch/simba.yaml", str(mine.resolve())]
    # a copy in an arch/ folder (a clone's file beside an installed coexplore) is the bundled one, as
    # `simba` names it (README audit: `map simba` and `map arch/simba.yaml` made two result folders)
    (tmp_path / "arch").mkdir()
    shutil.copy(simba, tmp_path / "arch" / "simba.yaml")
    assert record_name(tmp_path / "arch" / "simba.yaml") == "bundled:arch/simba.yaml"
    (tmp_path / "arch" / "simba.yaml").write_text(simba.read_text() + "# edited\n")
    assert record_name(tmp_path / "arch" / "simba.yaml") == str((tmp_path / "arch" / "simba.yaml").resolve())


def test_version_names_the_source_digest_run_records_carry(capsys):
    """User study: `coexplore --version` printed only 0.1.0, not the `coexplore_source` digest a run
    record carries, so the installed code could not be matched to a record months later."""
    from coexplore.cli.main import main
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert f"(source {source_digest()})" in capsys.readouterr().out

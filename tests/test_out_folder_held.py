"""A result folder is held by the run writing it: a second coexplore run choosing the same folder at
the same time (an explicit --out or the same default folder) is refused, not run beside the first."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CORPUS
from coexplore.cli.main import main
from coexplore.cli.paths import HELD, hold, release_held
from coexplore.errors import CoexploreError

fcntl = pytest.importorskip("fcntl")
ARCH = CORPUS / "arches" / "eyeriss_like" / "processed.yaml"
LAYER = CORPUS / "layers" / "tiny_conv.yaml"
HOLDER = """\
import sys, time
from pathlib import Path
from coexplore.cli.paths import hold
hold(Path(sys.argv[1]))
print("held", flush=True)
time.sleep(60)
"""


def _held_elsewhere(folder):
    folder.mkdir(parents=True, exist_ok=True)
    p = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "held"
    return p


def _map(*args):
    return subprocess.run([sys.executable, "-m", "coexplore.cli.main", "map", str(ARCH), str(LAYER), "--searcher",
                           "random", "--budget", "50", *map(str, args)], capture_output=True, text=True, timeout=300)


def test_a_folder_another_run_writes_is_refused_until_it_ends(tmp_path):
    out = tmp_path / "o"
    holder = _held_elsewhere(out)
    try:
        r = _map("--out", out)
        assert r.returncode == 2 and "another coexplore run is writing this folder now" in r.stderr
        assert "Traceback" not in r.stderr and not (out / "result.json").exists()
    finally:
        holder.kill()
        holder.wait()
    r = _map("--out", out)                       # the holder gone, the folder is free (whatever killed it)
    assert r.returncode == 0 and (out / "result.json").is_file()


def test_the_same_default_folder_is_refused_while_its_run_goes_on():
    first = _map("--json")
    assert first.returncode == 0
    run_dir = Path.cwd() / Path(json.loads(first.stdout)["mapping_file"]).parent     # results/map/...
    holder = _held_elsewhere(run_dir)
    try:
        r = _map()                                    # the same run: its folder, held by the other process
        assert r.returncode == 2 and "the same run (same inputs and settings) is running now" in r.stderr
        assert "--out:" not in r.stderr and "key '--out'" not in r.stderr   # the user named no --out
    finally:
        holder.kill()
        holder.wait()
    assert _map().returncode == 0


def test_one_process_holds_a_folder_once_and_lets_go_when_a_command_ends(tmp_path):
    hold(tmp_path)
    hold(tmp_path)                                # again in this process: no conflict with itself
    assert len(HELD) == 1
    release_held()
    assert not HELD
    holder = _held_elsewhere(tmp_path)
    try:
        with pytest.raises(CoexploreError, match="another coexplore run is writing this folder now"):
            hold(tmp_path)
    finally:
        holder.kill()
        holder.wait()
    assert main(["map", str(ARCH), str(LAYER), "--searcher", "random", "--budget", "20", "--out", str(tmp_path / "m"),
                 "--no-progress"]) == 0
    assert not HELD                               # main lets go of what the command held


def test_files_of_no_run_in_an_explicit_out_are_never_replaced(tmp_path):
    """User study: `map ARCH PROB --out .` in a Timeloop design folder replaced its hand-written
    mapping.yaml with a note; refused now (exit 2), the file untouched; a folder of coexplore's is used."""
    out = tmp_path / "mine"
    out.mkdir()
    (out / "mapping.yaml").write_text("# my hand-written mapping\n")
    r = _map("--out", out)
    assert r.returncode == 2 and "holds mapping.yaml, which no coexplore run wrote" in r.stderr, r.stderr
    assert (out / "mapping.yaml").read_text() == "# my hand-written mapping\n"
    (out / "mapping.yaml").unlink()
    assert _map("--out", out).returncode == 0
    r = _map("--out", out)                        # now a folder of this run: nothing to say
    assert r.returncode == 0 and "no coexplore run" not in r.stderr

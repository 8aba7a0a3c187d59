"""The CLI's notes that name a layer: said for the first layer, the others counted and listed
at the end of the command or network (`coexplore.cli.main.NoteGroups`)."""

import warnings

def _note(layer):
    return f"X: its X fan-out of 16 idles for layer {layer}: under the constraints only N may spread there"


def test_a_commands_notes_naming_layers_are_said_once_then_summed_up(capsys):
    """Mutants CL7/CL8 (the command's own warnings not grouped / not summed up): a note said for
    several layers in one command is printed for the first, the others listed at the end."""
    import argparse
    from coexplore.cli.main import command_settings
    from coexplore.errors import CoexploreNote
    with command_settings(argparse.Namespace()):
        for layer in ("conv1", "res2a", "res2b"):
            warnings.warn(_note(layer), CoexploreNote)
    err = capsys.readouterr().err
    assert "idles for layer conv1" in err and "idles for layer res2a" not in err
    assert "holds for 2 more layers too: res2a, res2b" in err


def test_the_summary_lists_eight_layers_then_counts_the_rest():
    """Mutant CL5 (seven listed): eight names are shown, then '... (n more)'."""
    from coexplore.cli.main import NoteGroups
    g = NoteGroups()
    layers = [f"l{i}" for i in range(11)]
    for name in layers:
        g.admit("coexplore: note: " + _note(name))
    [line] = g.summary()
    assert line.endswith(": " + ", ".join(layers[1:9]) + ", ... (2 more)")
    assert "holds for 10 more layers" in line


def test_each_command_starts_its_note_groups_afresh(capsys):
    """Mutant CL6 (the groups kept from an earlier command in the same process, as main() called
    twice by a library user or the tests): the second command says its own first note."""
    import argparse
    from coexplore.cli.main import command_settings
    from coexplore.errors import CoexploreNote
    for layer in ("conv1", "res2a"):
        with command_settings(argparse.Namespace()):
            warnings.warn(_note(layer), CoexploreNote)
        assert f"idles for layer {layer}" in capsys.readouterr().err


def test_the_summary_says_one_more_layer_in_the_singular():
    """Mutant CL9 (always 'layers'): one other layer is '1 more layer too'."""
    from coexplore.cli.main import NoteGroups
    g = NoteGroups()
    for name in ("conv1", "res2a"):
        g.admit("coexplore: note: " + _note(name))
    assert g.summary() == ['coexplore: note: the note "X: its X fan-out of 16 idles" on layer conv1 above holds for '
                           '1 more layer too: res2a']


def test_notes_holding_for_the_same_layers_are_summed_up_in_one_line_naming_each():
    """User study: three different notes on the same layers gave three identical summary lines. Now
    one line names each note; a note on other layers has its own line."""
    from coexplore.cli.main import NoteGroups
    g = NoteGroups()
    for name in ("dw1", "dw2", "dw3"):
        for axis in ("X", "Y", "Z"):
            g.admit(f"coexplore: note: {axis}: its fan-out idles for layer {name}: only N may spread there")
    g.admit("coexplore: note: W: its fan-out idles for layer dw1: ...")
    g.admit("coexplore: note: W: its fan-out idles for layer pw1: ...")
    assert g.summary() == [
        'coexplore: note: the notes "X: its fan-out idles", "Y: its fan-out idles" and "Z: its fan-out idles" on '
        'layer dw1 above hold for 2 more layers too: dw2, dw3',
        'coexplore: note: the note "W: its fan-out idles" on layer dw1 above holds for 1 more layer too: pw1']


def test_a_networks_layer_notes_pass_through_the_groups(capsys):
    """Mutant MW1 (map --all-layers' notes not grouped): of the same note for two layers, the
    second is counted, not said again."""
    from coexplore.cli.main import NoteGroups
    from coexplore.cli.map_workload import _say_once
    g, said = NoteGroups(), set()
    _say_once("coexplore: note: " + _note("conv1") + "\n", said, None, g)
    _say_once("coexplore: note: " + _note("res2a") + "\n", said, None, g)
    err = capsys.readouterr().err
    assert "layer conv1" in err and "layer res2a" not in err
    assert g.summary() and "res2a" in g.summary()[0]


def test_a_note_said_is_known_as_said_so_a_sweep_does_not_repeat_it():
    import argparse
    import warnings

    from coexplore.cli.main import command_settings, said_before
    from coexplore.errors import CoexploreNote
    with command_settings(argparse.Namespace(var=None)):
        assert not said_before("the fan-out of X idles for layer fc5: y")
        warnings.warn("the fan-out of X idles for layer fc5: y", CoexploreNote)
        assert said_before("the fan-out of X idles for layer fc5: y")
        assert not said_before("another")

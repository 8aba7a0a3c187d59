"""Progress bars do not flood a log when stderr is not a terminal."""

import io

from coexplore.progress import progress_bar


def test_a_bar_into_a_file_refreshes_rarely():
    out = io.StringIO()
    bar = progress_bar(total=10_000, file=out, mininterval=0.5)
    assert bar.mininterval >= 30
    for _ in range(10_000):
        bar.update(1)
    bar.close()
    assert out.getvalue().count("\r") <= 3

"""Stopping a run cleanly: a first Ctrl-C or SIGTERM lets the batch being evaluated (and the result
being written) finish, a second one stops at once. Serves every layer: the search driver checks
`DeferredInterrupt.requested` after each batch, the commands wrap their work in `finishing` and
`holding_stops`, and the CLI's SIGTERM handler calls `request_stop`."""

from __future__ import annotations


def finishing(doing: str, hold_after_stop: bool = False) -> "DeferredInterrupt":
    """A context in which a first Ctrl-C (or SIGTERM) waits for `doing` (e.g. "the result is
    written") instead of cutting it short; a second one stops at once. A command wraps its search
    and the writing of its result in it, so a Ctrl-C that lands after the search finished loses
    nothing: searches inside still stop after their batch, and `.requested` says afterwards
    whether a stop was asked for. With `hold_after_stop`, once a search inside has ended because
    of a stop (`DeferredInterrupt.hold_rest`), the rest of the block (making and writing the best
    so far: a second or so) is not cut short by a further stop, which is acted on at its end."""
    return DeferredInterrupt(say=True, doing=doing, lost="it is not waited for", hold_after_stop=hold_after_stop)


def request_stop(what: str = "SIGTERM") -> bool:
    """Ask the running search (if any) to stop after its batch, as a first Ctrl-C does: True if
    one was running and had not been asked yet (the caller of a second request should stop at once).
    `coexplore`'s SIGTERM handler uses it, so a job scheduler's stop also saves the search state."""
    outer = DeferredInterrupt.outermost
    if outer is None or DeferredInterrupt.requested:
        return False
    outer.stop(what)
    return True


class holding_stops:
    """A block that a Ctrl-C or SIGTERM does not cut short: making and writing the result of a
    search that has ended (a second or so), so that a stop-at-once still leaves that result. A
    stop that arrives meanwhile is acted on when the block ends: as a first request (`request_stop`)
    if a command's search could still be asked to stop, else `.stop_now` turns True and the caller
    stops once the result is written. Main thread only; signals that are ignored stay ignored; a
    block inside another one leaves the holding to the outer one."""

    _depth = 0                                   # blocks open (main thread)
    _holder: "holding_stops | None" = None       # the outermost open block, which records the stops

    def __init__(self, after_stop: bool = False):
        self.stop_now = False
        self.after_stop = after_stop             # held after a first stop: what it records are second ones
        self._got: list[str] = []
        self._old: dict = {}
        self._counted = False
        self._seen: int | None = None            # a nested block: the stops its holder had recorded

    def __enter__(self):
        import signal
        import threading
        if threading.current_thread() is threading.main_thread():
            self._counted = True
            holding_stops._depth += 1
            if holding_stops._depth > 1:         # the outer block holds them
                if holding_stops._holder is not None:
                    self._seen = len(holding_stops._holder._got)
                return self
            holding_stops._holder = self
            for sig, name in ((signal.SIGINT, "Ctrl-C"), (signal.SIGTERM, "SIGTERM")):
                old = signal.getsignal(sig)
                if callable(old):            # a Python handler (SIGINT's default is one), not SIG_IGN/SIG_DFL
                    self._old[sig] = signal.signal(sig, lambda *_, name=name: self._got.append(name))
        return self

    def __exit__(self, *exc):
        import signal
        if self._counted:
            holding_stops._depth -= 1
            self._counted = False
            if holding_stops._holder is self:
                holding_stops._holder = None
            elif self._seen is not None and holding_stops._holder is not None and holding_stops._holder.after_stop:
                # nested in a block held after a first stop: a stop it recorded meanwhile is a second
                # one, this block's caller's to act on too (e.g. no chart drawn after the result)
                self.stop_now = len(holding_stops._holder._got) > self._seen
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old = {}
        for name in self._got:
            if not request_stop(name):
                self.stop_now = True
        self._got = []


class DeferredInterrupt:
    """While the outermost one is active (main thread only), the first SIGINT (or `request_stop`)
    only sets the class-wide `requested`, which every running search loop, nested ones too, checks
    after each batch; after that, Ctrl-C raises KeyboardInterrupt as usual. Other threads, or a
    process started with SIGINT ignored (a shell's background job): SIGINT is left alone."""

    requested = False
    outermost: "DeferredInterrupt | None" = None
    active: "list[DeferredInterrupt]" = []      # innermost last: what a stop waits for

    def __init__(self, say: bool = False, doing: str = "the batch being evaluated", lost: str = "",
                 hold_after_stop: bool = False):
        self._old = None
        self._outer = False
        self.say = say
        self.doing = doing
        self.lost = lost                          # what a second stop gives up (said with the first)
        self.asked = False                        # a stop was requested while this one was active
        self.hold_after_stop = hold_after_stop
        self._held: holding_stops | None = None
        self.stop_now = False                     # a stop arrived while the rest was held

    @classmethod
    def hold_rest(cls) -> None:
        """A search ended by a stop: the innermost active block that asked for it (`finishing`'s
        `hold_after_stop`) holds further stops until it ends, so that the best so far is written
        whenever a second stop lands (between the search's end and the files, a gap a second
        Ctrl-C used to fall into)."""
        import threading
        if threading.current_thread() is not threading.main_thread():
            return
        block = next((d for d in reversed(cls.active) if d.hold_after_stop), None)
        if block is not None and block._held is None:
            block._held = holding_stops(after_stop=True)
            block._held.__enter__()

    def __enter__(self):
        import signal
        import threading
        if threading.current_thread() is not threading.main_thread():
            return self
        DeferredInterrupt.active.append(self)
        if DeferredInterrupt.outermost is None:
            self._outer = True
            DeferredInterrupt.outermost = self
            DeferredInterrupt.requested = False
            if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
                self._old = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum, frame):
        self.stop("Ctrl-C")

    def stop(self, what: str) -> None:
        """The first request: finish the batch; the usual Ctrl-C is back for a second one."""
        import signal
        import sys
        DeferredInterrupt.requested = True
        for d in DeferredInterrupt.active:
            d.asked = True
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)   # a second Ctrl-C interrupts at once
            self._old = None
        inner = DeferredInterrupt.active[-1] if DeferredInterrupt.active else self
        if self.say or inner.say:
            if what == "Ctrl-C" or signal.getsignal(signal.SIGINT) is signal.SIG_IGN:   # a background job
                again = f"{what} again"
            else:
                again = f"Ctrl-C or {what} again"
            lost = f": {inner.lost}" if inner.lost else ""
            lead = "\n" if sys.stderr.isatty() else ""          # off the progress bar's line
            print(f"{lead}{what}: stopping after {inner.doing} ({again} to stop now{lost})", file=sys.stderr)

    def __exit__(self, *exc):
        import signal
        if self._held is not None:                    # (a stop held meanwhile: the command ends with 130)
            self._held.__exit__()
            self.stop_now, self._held = self._held.stop_now, None
        if self in DeferredInterrupt.active:
            DeferredInterrupt.active.remove(self)
        if self._outer:                               # the outermost: restore, and forget the request
            if self._old is not None:
                signal.signal(signal.SIGINT, self._old)
                self._old = None
            DeferredInterrupt.outermost = None
            DeferredInterrupt.requested = False
            self._outer = False

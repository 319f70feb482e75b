"""The version clock bounded by a reference clock (issue 54 item 12; pure: faked clocks)."""

from __future__ import annotations

from brain_search.ingest.versions import VersionClock

HOUR_US = 3600 * 10**6
SKEW_US = 1_000_000


class _Clocks:
    """A wall clock ``offset_us`` off the reference, both moved by hand."""

    def __init__(self, offset_us: int) -> None:
        self.ref = 1_800_000_000 * 10**6
        self.offset_us = offset_us
        self.mono = 0.0
        self.reads = 0
        self.down = False

    def wall(self) -> int:
        return self.ref + self.offset_us

    def reference(self) -> int:
        self.reads += 1
        if self.down:
            raise ConnectionError("engine down")
        return self.ref

    def clock(self, **kw: object) -> VersionClock:
        return VersionClock(self.wall, self.reference, SKEW_US, monotonic=lambda: self.mono, **kw)  # type: ignore[arg-type]


def test_a_clock_an_hour_ahead_stamps_versions_within_the_bound() -> None:
    c = _Clocks(HOUR_US)
    clock = c.clock()
    v = clock.next()
    assert v == c.ref + SKEW_US  # clamped: never more than the bound ahead of the engine's time
    assert clock.clamped == {"ahead": 1, "behind": 0}
    assert clock.skew_s == 3600.0
    c.ref += 500_000
    assert clock.next() == c.ref + SKEW_US  # it keeps following the reference's time
    assert clock.clamped["ahead"] == 2 and c.reads == 1  # measured once per check_s


def test_a_clock_far_behind_is_held_within_the_bound_too() -> None:
    c = _Clocks(-HOUR_US)
    clock = c.clock()
    assert clock.next() == c.ref - SKEW_US and clock.clamped == {"ahead": 0, "behind": 1}


def test_a_clock_within_the_bound_is_left_alone_and_versions_still_grow() -> None:
    c = _Clocks(300_000)
    clock = c.clock()
    a, b = clock.next(), clock.next()
    assert a == c.wall() and b == a + 1  # same microsecond: consecutive
    assert clock.clamped == {"ahead": 0, "behind": 0}


def test_the_offset_is_measured_again_and_survives_an_engine_outage() -> None:
    c = _Clocks(HOUR_US)
    clock = c.clock(check_s=30.0)
    clock.next()

    def later() -> None:
        c.mono += 31
        c.ref += 31 * 10**6

    c.down = True
    later()
    assert clock.next() == c.ref + SKEW_US  # the last offset stays in use
    c.down, c.offset_us = False, 0  # NTP fixed the clock
    later()
    assert clock.next() == c.ref and clock.skew_s == 0.0 and c.reads == 3


def test_without_a_reference_it_is_the_local_clock() -> None:
    c = _Clocks(HOUR_US)
    clock = VersionClock(c.wall)
    assert clock.next() == c.wall() and clock.skew_s is None


def test_a_step_of_the_host_clock_is_seen_at_once_and_does_not_keep_versions_ahead() -> None:
    """Issue 66 (a code read): a clock stepped an hour ahead kept the last version an hour ahead
    (``max(last + 1, now)``) after the step was undone, so this replica's writes outranked every
    other replica's deletes for that hour."""
    c = _Clocks(0)
    clock = c.clock(check_s=30.0)
    before = clock.next()
    c.mono += 1
    c.ref += 10**6
    c.offset_us = HOUR_US  # the host clock steps an hour ahead
    stepped = clock.next()
    assert stepped <= c.ref + SKEW_US and c.reads == 2  # measured again at once, not 30 s later
    c.mono += 1
    c.ref += 10**6
    c.offset_us = 0  # and back
    after = clock.next()
    assert after <= c.ref + SKEW_US and c.reads == 3
    assert before < stepped < after  # still growing while within the window


def test_a_version_given_ahead_before_a_step_was_seen_goes_back_to_the_window() -> None:
    c = _Clocks(0)
    clock = c.clock(check_s=30.0)
    clock.next()
    clock._last = c.ref + HOUR_US  # given while the step went unseen
    c.mono += 1
    c.ref += 10**6
    assert clock.next() == c.ref + SKEW_US and clock.clamped["ahead"] == 1

"""The store's timestamps: ISO-8601 UTC, milliseconds cut (not rounded), a ``Z``."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from admiss.receipts.store import stamp_of_ns, utc_timestamp

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _ns(moment: datetime, extra_ns: int = 0) -> int:
    return ((moment - EPOCH) // timedelta(microseconds=1)) * 1000 + extra_ns


def test_a_stamp_of_now_is_the_datetime_stamp_of_the_same_moment():
    # Around second, minute, day and year boundaries, at 0 and 999 ms, and just below a
    # millisecond (cut, never rounded up into the next one).
    moments = [datetime(2026, 12, 31, 23, 59, 59, 999999, tzinfo=timezone.utc), datetime(2027, 1, 1, tzinfo=timezone.utc),
               datetime(2026, 2, 28, 12, 0, 0, 5000, tzinfo=timezone.utc), datetime(2024, 2, 29, 1, 2, 3, 456789, tzinfo=timezone.utc)]
    for moment in moments:
        for extra in (0, 999):
            assert stamp_of_ns(_ns(moment, extra)) == utc_timestamp(moment), moment
    assert stamp_of_ns(_ns(moments[0], 999)) == "2026-12-31T23:59:59.999Z"
    assert stamp_of_ns(_ns(moments[1])) == "2027-01-01T00:00:00.000Z"
    # The same second twice, then another: the text made once a second is that second's.
    assert [stamp_of_ns(_ns(moments[2])), stamp_of_ns(_ns(moments[2]) + 7_000_000), stamp_of_ns(_ns(moments[3]))] == \
        ["2026-02-28T12:00:00.005Z", "2026-02-28T12:00:00.012Z", "2024-02-29T01:02:03.456Z"]


def test_the_stamp_of_now_is_now():
    before = utc_timestamp(datetime.now(timezone.utc))
    now = utc_timestamp()
    after = utc_timestamp(datetime.now(timezone.utc))
    assert before <= now <= after and now.endswith("Z") and len(now) == len("2026-11-30T23:10:00.123Z")


def test_a_moment_in_another_zone_is_stamped_in_utc():
    assert utc_timestamp(datetime(2026, 6, 1, 2, 0, 0, 123456, tzinfo=timezone(timedelta(hours=2)))) == \
        "2026-06-01T00:00:00.123Z"

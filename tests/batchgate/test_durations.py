import datetime as dt

import pytest

from batchgate.durations import DurationError, format_duration, parse_duration


@pytest.mark.parametrize(
    "text, seconds",
    [
        pytest.param("90s", 90, id="seconds"),
        pytest.param("1m30s", 90, id="minutes and seconds"),
        pytest.param("1.5h", 5400, id="fractional hours"),
        pytest.param("300ms", 0.3, id="milliseconds"),
        pytest.param("168h", 168 * 3600, id="a week in hours"),
        pytest.param("0", 0, id="bare zero"),
        pytest.param("0s", 0, id="zero seconds"),
        pytest.param("-2s", -2, id="negative"),
        pytest.param("1h2m3s4ms", 3723.004, id="every unit at once"),
        pytest.param(".5s", 0.5, id="leading dot"),
    ],
)
def test_parses_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == dt.timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "5", "5x", "s", "1m30", "1 m", "--1s", "1s2", None, 5, " 2s", "2s ", "	0",
                                  "2562048h", "9" * 30 + "h"])
def test_rejects_what_go_rejects(text: object) -> None:
    with pytest.raises(DurationError):
        parse_duration(text)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "seconds, text",
    [(0, "0s"), (0.25, "250ms"), (90, "1m30s"), (3600, "1h0m0s"), (5400.5, "1h30m0.5s"), (-3, "-3s")],
)
def test_formats_like_go(seconds: float, text: str) -> None:
    assert format_duration(dt.timedelta(seconds=seconds)) == text
    assert parse_duration(text) == dt.timedelta(seconds=seconds)
